"""The watch loop rejoins after a daemon restart, or says why it cannot (SPEC §7, §4)."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import anyio
import psutil
import pytest

from tests.support import (
    RunningDaemon,
    call_ok,
    mcp_client,
    pid_gone,
    run_bounded,
    run_cli,
    start_daemon,
    texts_of,
    wait_until,
)

pytestmark = pytest.mark.e2e

EMPTY = {"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


async def first_answer_after_recovery(client, within: float = 60.0):
    """Call get_all_cells until the daemon link is back; return the first other answer.

    An answer served from the session's snapshot while the daemon is away (stale) is not
    a recovery."""
    with anyio.fail_after(within):
        while True:
            result = await client.call_tool("get_all_cells", {})
            stale = (result.structured_content or {}).get("stale", False)
            unreachable = result.is_error and "unreachable" in texts_of(result)[-1]
            if not stale and not unreachable:
                return result
            await anyio.sleep(0.05)


def restart(daemon: RunningDaemon) -> None:
    result = run_cli("daemon", "restart", state_dir=daemon.paths.root, env=daemon.env)
    assert result.returncode == 0, result.stderr


def test_a_killed_daemon_started_again_gets_the_file_backed_session_back(
    daemon: RunningDaemon, tmp_path: Path
) -> None:
    async def body() -> None:
        async with mcp_client(daemon, "legacy", label="ivy", cwd=tmp_path) as client:
            await call_ok(client, "create_notebook", ephemeral=False)
            await call_ok(client, "create_cell", source="kept = 1")
            await call_ok(client, "save_notebook", path="kept.ipynb")
            daemon.kill()
            started = await anyio.to_thread.run_sync(start_daemon, daemon.paths.root, daemon.env)
            daemon.pid = started.pid
            result = await first_answer_after_recovery(client)
            assert not result.is_error, texts_of(result)
            assert [c["source_preview"] for c in result.structured_content["cells"]] == ["kept = 1"]

    run_bounded(body)


def test_an_ephemeral_notebook_lost_to_a_restart_is_reported_as_no_longer_available(
    daemon: RunningDaemon,
) -> None:
    async def body() -> None:
        async with mcp_client(daemon, "legacy", label="jo") as client:
            created = await call_ok(client, "create_notebook")
            await anyio.to_thread.run_sync(restart, daemon)
            result = await first_answer_after_recovery(client)
            assert result.is_error
            assert texts_of(result)[-1] == (
                "No active notebook session (notebook is no longer available). "
                f'Reconnect with: connect_notebook(notebook_id="{created["notebook_id"]}")'
            )

    run_bounded(body)


def test_a_notebook_whose_file_was_deleted_is_reported_with_the_file_named(
    daemon: RunningDaemon, tmp_path: Path
) -> None:
    notebook = tmp_path / "gone.ipynb"
    notebook.write_text(json.dumps(EMPTY))

    async def body() -> None:
        async with mcp_client(daemon, "legacy", label="kim", cwd=tmp_path) as client:
            connected = await call_ok(client, "connect_notebook", path=str(notebook))
            os.kill(daemon.pid, signal.SIGKILL)
            notebook.unlink()
            started = await anyio.to_thread.run_sync(start_daemon, daemon.paths.root, daemon.env)
            daemon.pid = started.pid
            result = await first_answer_after_recovery(client)
            assert result.is_error
            message = texts_of(result)[-1]
            assert message.startswith(
                "No active notebook session (notebook is no longer available). "
            )
            assert connected["notebook_id"] in message
            assert message.endswith(f" — file: {notebook}")

    run_bounded(body)


def test_without_a_daemon_the_server_answers_and_attaches_when_one_appears(
    state_dir: Path,
) -> None:
    from nbstage.entrypoints.common.statedir import state_paths
    from tests.support import RunningDaemon, assert_daemon_gone

    placeholder = RunningDaemon(state_paths(state_dir), {}, pid=-1)
    state_dir.mkdir(parents=True, mode=0o700)

    async def body() -> None:
        nonlocal placeholder
        async with mcp_client(placeholder, "legacy", label="lu", no_autostart=True) as client:
            tools = await client.list_tools()
            assert "create_notebook" in {tool.name for tool in tools.tools}
            refused = await client.call_tool("create_notebook", {})
            assert refused.is_error
            assert "unreachable" in texts_of(refused)[-1]
            started = await anyio.to_thread.run_sync(start_daemon, state_dir, {})
            placeholder.pid = started.pid
            with anyio.fail_after(20):
                while (await client.call_tool("create_notebook", {})).is_error:
                    await anyio.sleep(0.1)
            await call_ok(client, "list_active_notebooks")

    try:
        run_bounded(body)
    finally:
        if placeholder.pid > 0:
            assert_daemon_gone(placeholder)


def test_a_daemon_killed_under_an_autostarting_client_is_started_again_by_it(
    daemon: RunningDaemon, tmp_path: Path
) -> None:
    """Nobody starts the daemon again here: the session child of the client, whose
    `nbstage mcp` has autostart on, finds the socket refusing, sees that the daemon the
    state dir stamped is gone, and starts one as autostart does (detached, nobody's
    child); then it rejoins its file-backed notebook."""
    old = daemon.pid

    session = mcp_client(daemon, "legacy", label="ada", cwd=tmp_path)

    async def body() -> None:
        async with session as client:
            await call_ok(client, "create_notebook", ephemeral=False)
            await call_ok(client, "create_cell", source="kept = 1")
            await call_ok(client, "save_notebook", path="kept.ipynb")
            daemon.kill()
            await anyio.to_thread.run_sync(
                lambda: wait_until(lambda: pid_gone(old), 15, "the killed daemon to be gone")
            )
            result = await first_answer_after_recovery(client)
            daemon.pid = (await anyio.to_thread.run_sync(daemon.request, "identity"))["pid"]
            assert not result.is_error, texts_of(result)
            assert [c["source_preview"] for c in result.structured_content["cells"]] == ["kept = 1"]
            assert daemon.pid != old
            clients_tree = psutil.Process(session.server_pid).children(recursive=True)
            assert daemon.pid not in [p.pid for p in clients_tree], "not detached from the client"

    run_bounded(body)
    logged = (daemon.paths.logs / "session.log").read_text()
    assert "no daemon answers (died); looking whether to start one" in logged
