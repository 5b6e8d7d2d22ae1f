"""Issue 20 §3 through real processes: a cell prints far more than the output limit.

A real daemon whose ``output_limit_bytes`` is 64 KiB, a real kernel that prints 20 MB in
many chunks, and a real ``nbstage mcp`` driven by the official MCP client. The agent's
answers are previews (never ``result_too_large``); the cell, its execution record and the
saved file keep the head and tail with a notice of what was dropped; another client of
the daemon is answered promptly all along.
"""

from __future__ import annotations

import json
import re
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from nbstage.actors.common.output_bounds import NOTICE_STREAM
from tests.conftest import FAST_SETTINGS
from tests.support import RunningDaemon, daemon_running, mcp_client, run_bounded, texts_of

pytestmark = pytest.mark.e2e

LIMIT = 64 * 1024
LINES = 20_000
LINE = "{:08d} " + "x" * 990
PRINTED = LINES * 1000
PRINT_IN_CHUNKS = (
    f"import sys\nfor i in range({LINES}):\n    sys.stdout.write({LINE!r}.format(i) + '\\n')"
)
SLOW_ANSWER_SECS = 5.0


@pytest.fixture
def daemon(state_dir: Path):
    with daemon_running(
        state_dir, {**FAST_SETTINGS, "NBSTAGE_OUTPUT_LIMIT_BYTES": str(LIMIT)}
    ) as d:
        yield d


async def ok(client: Any, name: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(name, arguments)
    assert not result.is_error, f"{name} failed: {texts_of(result)}"
    return result.structured_content


def text(output: dict[str, Any]) -> str:
    """A stream's text; a saved notebook holds it as a list of lines."""
    value = output["text"]
    return "".join(value) if isinstance(value, list) else value


def dropped_bytes(outputs: list[dict[str, Any]]) -> int:
    notice = next(text(o) for o in outputs if o.get("name") == NOTICE_STREAM)
    return int(re.search(r"([\d,]+) bytes", notice).group(1).replace(",", ""))


def assert_head_notice_tail(outputs: list[dict[str, Any]]) -> None:
    head, notice, tail = outputs
    assert text(head).startswith(LINE.format(0) + "\n")
    assert text(tail).endswith(LINE.format(LINES - 1) + "\n")
    assert notice["name"] == NOTICE_STREAM
    assert "output_limit_bytes" in text(notice)
    assert dropped_bytes(outputs) > PRINTED - 2 * LIMIT


class Prober(threading.Thread):
    """Another client of the daemon, asking for its status over and over."""

    def __init__(self, daemon: RunningDaemon) -> None:
        super().__init__(daemon=True)
        self.daemon_under_test = daemon
        self.done = threading.Event()
        self.slowest = 0.0
        self.answers = 0

    def run(self) -> None:
        with self.daemon_under_test.client() as client:
            while not self.done.is_set():
                started = time.monotonic()
                client.request("status")
                self.slowest = max(self.slowest, time.monotonic() - started)
                self.answers += 1


def test_a_cell_printing_far_over_the_limit_is_kept_head_and_tail_everywhere(
    daemon: RunningDaemon, tmp_path: Path
) -> None:
    saved = tmp_path / "big.ipynb"

    async def body() -> None:
        async with mcp_client(daemon, "legacy") as client:
            await ok(client, "create_notebook")
            cell_id = (await ok(client, "create_cell", source=PRINT_IN_CHUNKS))["cell_id"]
            prober = Prober(daemon)
            prober.start()
            try:
                ran = await ok(client, "execute_cell", cell_id=cell_id, timeout_secs=120)
            finally:
                prober.done.set()
                prober.join(30)
            execution = ran["execution"]
            assert execution["status"] == "done"
            assert_head_notice_tail(execution["outputs"])
            assert all(len(o["text"].encode()) <= 8192 for o in execution["outputs"])
            assert prober.answers > 0
            assert prober.slowest < SLOW_ANSWER_SECS

            previewed = (await ok(client, "get_cell", cell_id=cell_id))["cell"]
            assert_head_notice_tail(previewed["outputs"])
            assert "full_output=true" in previewed["outputs"][0]["text"]

            whole = (await ok(client, "get_cell", cell_id=cell_id, full_output=True))["cell"]
            assert_head_notice_tail(whole["outputs"])
            kept = sum(len(o["text"]) for o in whole["outputs"] if o["name"] != NOTICE_STREAM)
            assert kept == LIMIT

            await ok(client, "save_notebook", path=str(saved))

        record_path = daemon.paths.executions / f"{execution['execution_id']}.json"
        record = json.loads(record_path.read_bytes())
        assert_head_notice_tail(record["outputs"])
        assert record_path.stat().st_size < 2 * LIMIT

        notebook = json.loads(saved.read_bytes())
        assert_head_notice_tail(notebook["cells"][0]["outputs"])
        assert saved.stat().st_size < 2 * LIMIT

    run_bounded(body, budget=180)
