"""What ``initialize``'s instructions promise about restarts, checked against a real
daemon and a real ``nbstage mcp``."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from nbstage.entrypoints.mcp.lifecycle import INSTRUCTIONS
from tests.e2e.test_rejoin import first_answer_after_recovery
from tests.e2e.test_supervision import kill_session_manager
from tests.support import RunningDaemon, call_ok, mcp_client, run_bounded, start_daemon, texts_of

pytestmark = pytest.mark.e2e

SERVER_RESTART = "a server restart keeps the kernel and its variables"
DAEMON_RESTART = "a daemon restart starts a new kernel, so rerun the cells you need"


def test_the_instructions_say_what_each_restart_keeps(daemon: RunningDaemon, tmp_path: Path):
    assert SERVER_RESTART in INSTRUCTIONS
    assert DAEMON_RESTART in INSTRUCTIONS

    async def body() -> None:
        async with mcp_client(daemon, "legacy", label="una", cwd=tmp_path) as client:
            await call_ok(client, "create_notebook", ephemeral=False)
            await call_ok(client, "create_cell", source="secret = 7", and_run=True)
            await call_ok(client, "save_notebook", path="kept.ipynb")

            kill_session_manager(daemon, "una")
            kept = await call_ok(client, "create_cell", source="secret * 6", and_run=True)
            assert kept["execution"]["outputs"][0]["text"] == "42"

            daemon.kill()
            started = await anyio.to_thread.run_sync(start_daemon, daemon.paths.root, daemon.env)
            daemon.pid = started.pid
            rejoined = await first_answer_after_recovery(client)
            assert not rejoined.is_error, texts_of(rejoined)
            lost = await client.call_tool("create_cell", {"source": "secret", "and_run": True})
            assert "NameError" in str(lost.structured_content["execution"]["outputs"])

    run_bounded(body)
