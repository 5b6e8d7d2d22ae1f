"""The edge's worker threads (entrypoints/offload_runner.py): lanes and reported lines."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from nbstage.entrypoints.offload_runner import OffloadRunner
from nbstage.protocol.offload import BlockingWorkDone, BlockingWorkRequested, WorkProgressed


def run_all(requests: list[BlockingWorkRequested]) -> list[tuple[Any, Any]]:
    told: list[tuple[Any, Any]] = []

    async def main() -> None:
        runner = OffloadRunner(lambda to, message: told.append((to, message)))
        for request in requests:
            runner.start(request)
        await runner.drain()

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
