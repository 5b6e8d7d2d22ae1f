"""Many `nbstage mcp` processes started at the same moment against one daemon (SPEC §11).

One real daemon (the ``daemon`` fixture), then ``CLIENTS`` real ``nbstage mcp``
processes driven by the official SDK client, half in legacy (``initialize``) mode and
half in 2026-07-28 mode. All of them are spawned together: every client task is
started and parked on one event, and the event releases them all at once, so their
thespian start-ups, daemon handshakes and kernel starts overlap. Each client then
creates its own notebook, adds a ``1+1`` cell and executes it.

Every client must be served: no connection closed under it, no tool error, an
execution that finished with ``2`` in its text, and a notebook of its own. Failures are
collected per client, so one report names every client that was not served and why.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from tests.support import RunningDaemon, call_ok, mcp_client, run_bounded, texts_of

pytestmark = pytest.mark.e2e

CLIENTS = 32
MODES = ("legacy", "2026-07-28")
BUDGET_SECS = 240
"""The client side of the whole run; a hang fails instead of stalling the suite."""

EXECUTE_WAIT_SECS = 180.0
"""execute_cell's own wait: 32 kernels starting on a small machine may take a while, and
a run that answers 'running' is not what this test is about."""


async def serve_one(client: Any) -> dict[str, Any]:
    """One client's work: its own notebook, a `1+1` cell, and the cell's execution."""
    created = await call_ok(client, "create_notebook")
    made = await call_ok(client, "create_cell", source="1+1")
    result = await client.call_tool(
        "execute_cell", {"cell_id": made["cell_id"], "timeout_secs": EXECUTE_WAIT_SECS}
    )
    text = "\n".join(texts_of(result))
    assert not result.is_error, f"execute_cell failed: {text}"
    execution = (result.structured_content or {}).get("execution") or {}
    assert execution.get("status") == "done", f"execution not done: {result.structured_content}"
    # The header line names the execution and cell by hex ids, so look for the value itself.
    lines = [line.strip() for line in text.splitlines()]
    assert "2" in lines, f"no 2 in the result text: {text!r}"
    return {"notebook_id": created["notebook_id"], "cell_id": made["cell_id"]}


@pytest.mark.timeout(BUDGET_SECS + 60)
def test_32_clients_started_at_once_are_all_served(daemon: RunningDaemon) -> None:
    async def body() -> None:
        sessions = [
            (
                i,
                MODES[i % len(MODES)],
                mcp_client(daemon, MODES[i % len(MODES)], f"at-once-{i:02d}"),
            )
            for i in range(CLIENTS)
        ]
        go = anyio.Event()
        served: dict[int, dict[str, Any]] = {}
        failed: dict[int, str] = {}

        async def client_task(
            i: int, mode: str, session: Any, *, task_status: Any = anyio.TASK_STATUS_IGNORED
        ) -> None:
            task_status.started()
            await go.wait()
            try:
                # Leaving the block also proves the server process and its actors exit.
                async with session as client:
                    served[i] = await serve_one(client)
            except Exception as exc:
                served.pop(i, None)
                failed[i] = f"[{mode}] {type(exc).__name__}: {exc}"

        async with anyio.create_task_group() as group:
            for i, mode, session in sessions:
                await group.start(client_task, i, mode, session)
            go.set()

        report = "\n".join(f"client {i:02d}: {failed[i]}" for i in sorted(failed))
        assert not failed, f"{len(failed)} of {CLIENTS} clients were not served:\n{report}"
        assert sorted(served) == list(range(CLIENTS))
        notebooks = {outcome["notebook_id"] for outcome in served.values()}
        assert len(notebooks) == CLIENTS, "two clients were handed the same notebook"

    run_bounded(body, budget=BUDGET_SECS)
