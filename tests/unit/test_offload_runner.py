"""The edge's worker threads (entrypoints/common/offload_runner.py): lanes, reported lines, and
a drain that waits for stuck work only so long."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import threading
from typing import Any

from nbstage.entrypoints.common.offload_runner import OffloadRunner
from nbstage.protocol.common.offload import BlockingWorkDone, BlockingWorkRequested, WorkProgressed


def run_all(requests: list[BlockingWorkRequested]) -> list[tuple[Any, Any]]:
    told: list[tuple[Any, Any]] = []

    async def main() -> None:
        runner = OffloadRunner(lambda to, message: told.append((to, message)))
        for request in requests:
            runner.start(request)
        assert await runner.drain(30.0) == []

    asyncio.run(main())
    return told


def test_reported_lines_arrive_in_order_and_before_the_work_is_done() -> None:
    def build(report) -> str:
        assert threading.current_thread() is not threading.main_thread()
        for n in range(3):
            report(f"line {n}")
        return "built"

    told = run_all([BlockingWorkRequested("build", build, "room", reports=True)])
    assert told == [
        ("room", WorkProgressed("build", "line 0")),
        ("room", WorkProgressed("build", "line 1")),
        ("room", WorkProgressed("build", "line 2")),
        ("room", BlockingWorkDone("build", "built")),
    ]


def test_work_that_reports_nothing_is_called_with_no_argument() -> None:
    told = run_all([BlockingWorkRequested("read", lambda: 42, "room")])
    assert told == [("room", BlockingWorkDone("read", 42))]


def test_work_in_one_lane_runs_in_the_order_asked() -> None:
    order: list[int] = []
    first_started = threading.Event()

    def first() -> None:
        first_started.set()
        order.append(1)

    def second() -> None:
        assert first_started.is_set()
        order.append(2)

    run_all(
        [
            BlockingWorkRequested("a", first, "room", "lane"),
            BlockingWorkRequested("b", second, "room", "lane"),
        ]
    )
    assert order == [1, 2]


def test_a_drain_gives_up_on_stuck_work_and_names_it() -> None:
    release = threading.Event()
    told: list[tuple[Any, Any]] = []

    async def main() -> list[Any]:
        runner = OffloadRunner(lambda to, message: told.append((to, message)))
        runner.start(BlockingWorkRequested("quick", lambda: 1, "room"))
        runner.start(BlockingWorkRequested("stuck", release.wait, "room", "lane"))
        runner.start(BlockingWorkRequested("behind", lambda: 2, "room", "lane"))
        return await runner.drain(0.2)

    try:
        left = asyncio.run(main())
    finally:
        release.set()
    assert left == ["stuck", "behind"] or left == ["behind", "stuck"]
    assert told == [("room", BlockingWorkDone("quick", 1))]


STUCK_PROCESS = textwrap.dedent(
    """
    import asyncio, threading
    from nbstage.entrypoints.common.offload_runner import OffloadRunner
    from nbstage.protocol.common.offload import BlockingWorkRequested

    async def main():
        runner = OffloadRunner(lambda to, message: None)
        runner.start(BlockingWorkRequested("stuck", threading.Event().wait, "room"))
        print(await runner.drain(0.1), flush=True)

    asyncio.run(main())
    """
)


def test_a_process_ends_although_its_work_is_stuck_forever() -> None:
    """The work never returns; the process exits as soon as its loop is done (asyncio's
    own executor would join the thread at exit and never end)."""
    done = subprocess.run(
        [sys.executable, "-c", STUCK_PROCESS], capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['stuck']"


def _pycrdt_panics() -> None:
    from pycrdt import Doc, Map

    doc: Doc = Doc()
    doc["m"] = held = Map()
    held["n"] = 2**63 + 1  # pycrdt holds no int past i64: pyo3 panics, a BaseException


def test_work_a_rust_extension_panicked_in_comes_back_as_a_failure() -> None:
    """pyo3's PanicException is no Exception: it went past the runner, and the actor that
    asked for the work never heard of it again (a build's held joins waited for ever)."""
    told = run_all([BlockingWorkRequested("build", _pycrdt_panics, "room")])
    [(to, done)] = told
    assert to == "room"
    assert isinstance(done, BlockingWorkDone)
    assert type(done.error).__name__ == "PanicException"
