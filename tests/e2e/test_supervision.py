"""The ProxySupervisor keeps a client alive across session-manager deaths (SPEC §8, §14).

Real `nbstage mcp` processes under the official SDK client; the session manager
is found through the daemon's own `clients` report and SIGKILLed.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.e2e.test_kernels import wait_for_file
from tests.support import (
    RunningDaemon,
    call_ok,
    client_record,
    mcp_client,
    pid_gone,
    run_bounded,
    session_manager_pid,
    texts_of,
    wait_until,
)

pytestmark = pytest.mark.e2e

RESTARTED = "[nbstage] Session server restarted"


def kill_session_manager(daemon: RunningDaemon, label: str) -> int:
    pid = session_manager_pid(daemon, label)
    os.kill(pid, signal.SIGKILL)
    return pid


async def wait_for_new_session_manager(daemon: RunningDaemon, label: str, old: int) -> int:
    def fresh() -> int | None:
        record = client_record(daemon, label)
        pid = record["session_manager_pid"] if record else None
        return pid if pid not in (None, old) and not pid_gone(pid) else None

    return await anyio.to_thread.run_sync(wait_until, fresh, 20, "a restarted session manager")


def test_a_killed_idle_session_manager_is_replaced_and_the_notebook_keeps_its_state(
    daemon: RunningDaemon,
) -> None:
    async def body() -> None:
        async with mcp_client(daemon, "legacy", label="ada") as client:
            await call_ok(client, "create_notebook", ephemeral=False)
            await call_ok(client, "create_cell", source="secret = 7", and_run=True)
            kill_session_manager(daemon, "ada")
            result = await client.call_tool(
                "create_cell", {"source": "secret * 6", "and_run": True}
            )
            assert not result.is_error, texts_of(result)
            assert texts_of(result)[0] == f"{RESTARTED}, rejoin requested"
            assert result.structured_content["execution"]["outputs"][0]["text"] == "42"
            again = await client.call_tool("get_all_cells", {})
            assert RESTARTED not in " ".join(texts_of(again)), "the banner goes out once"

    run_bounded(body)


def test_a_create_cell_cut_off_by_a_kill_is_applied_exactly_once(daemon: RunningDaemon) -> None:
    rounds = 4

    async def body() -> None:
        async with mcp_client(daemon, "legacy", label="bea") as client:
            await call_ok(client, "create_notebook", runtime="python")
            for i in range(rounds):
                pid = session_manager_pid(daemon, "bea")
                async with anyio.create_task_group() as group:
                    group.start_soon(_create_cell, client, f"# cell {i}")
                    await anyio.to_thread.run_sync(os.kill, pid, signal.SIGKILL)
                await wait_for_new_session_manager(daemon, "bea", pid)
            cells = await call_ok(client, "get_all_cells", format="json")
            sources = [cell["source"] for cell in cells["cells"]]
            assert sorted(sources) == [f"# cell {i}" for i in range(rounds)]

    run_bounded(body)


async def _create_cell(client: Any, source: str) -> None:
    await call_ok(client, "create_cell", source=source)


def test_an_execute_cut_off_by_a_kill_is_retried_without_running_twice(
    daemon: RunningDaemon, tmp_path: Path
) -> None:
    release = tmp_path / "release"

    async def body() -> None:
        async with mcp_client(daemon, "legacy", label="cy") as client:
            await call_ok(client, "create_notebook")
            await call_ok(client, "create_cell", source="runs = 0", and_run=True)
            # The cell runs until the kill has landed, however long that takes.
            source = "runs += 1\n" + wait_for_file(release, "runs")
            made = await call_ok(client, "create_cell", source=source)
            notebook = client_record(daemon, "cy")["active"]

            def busy() -> bool:
                room = daemon.request("describe_room", notebook_id=notebook)
                return room["kernel_status"] == "busy"

            async with anyio.create_task_group() as group:
                outcome: dict[str, Any] = {}

                async def execute() -> None:
                    outcome["result"] = await client.call_tool(
                        "execute_cell", {"cell_id": made["cell_id"]}
                    )

                group.start_soon(execute)
                await anyio.to_thread.run_sync(wait_until, busy, 30, "the cell to start running")
                kill_session_manager(daemon, "cy")
                release.touch()
            result = outcome["result"]
            assert not result.is_error, texts_of(result)
            execution = result.structured_content["execution"]
            assert execution["status"] == "done"
            assert execution["outputs"][0]["text"] == "1"
            count = await call_ok(client, "create_cell", source="runs", and_run=True)
            assert count["execution"]["outputs"][0]["text"] == "1", "the cell ran twice"

    run_bounded(body)


def test_six_quick_crashes_open_the_circuit_and_reconnect_closes_it(
    daemon: RunningDaemon,
) -> None:
    async def body() -> None:
        async with mcp_client(daemon, "legacy", label="dee") as client:
            await call_ok(client, "create_notebook", runtime="python")
            for _ in range(5):
                old = kill_session_manager(daemon, "dee")
                await wait_for_new_session_manager(daemon, "dee", old)
            kill_session_manager(daemon, "dee")
            refused = await client.call_tool("get_all_cells", {})
            assert refused.is_error
            assert "circuit open" in texts_of(refused)[-1]
            assert "reconnect" in texts_of(refused)[-1]
            reconnected = await call_ok(client, "reconnect")
            assert reconnected["restarted"] is True
            assert reconnected["restarts"] >= 6
            cells = await call_ok(client, "get_all_cells")
            assert cells["total"] == 0

    run_bounded(body)


@pytest.mark.parametrize(
    ("steps", "rejoined"),
    [
        pytest.param(["connect_file"], "file", id="a connect sets the target to the path"),
        pytest.param(["create"], "created", id="a create sets the target to the uuid"),
        pytest.param(["create", "save"], "created", id="a save turns a uuid target into the path"),
        pytest.param(
            ["connect_file", "disconnect"], None, id="disconnecting the active notebook clears it"
        ),
        pytest.param(
            ["connect_file", "create", "disconnect_parked"],
            "created",
            id="disconnecting a parked notebook keeps the target",
        ),
        pytest.param(
            ["connect_file", "connect_missing"], "file", id="a failed call never changes it"
        ),
    ],
)
def test_the_restarted_child_rejoins_the_restart_target(
    daemon: RunningDaemon, tmp_path: Path, steps: list[str], rejoined: str | None
) -> None:
    notebook_file = tmp_path / "target.ipynb"
    notebook_file.write_text(json.dumps(_EMPTY_NOTEBOOK))

    async def body() -> None:
        async with mcp_client(daemon, "legacy", label="eve", cwd=tmp_path) as client:
            ids: dict[str, str] = {}
            for step in steps:
                await _target_step(client, step, notebook_file, ids)
            kill_session_manager(daemon, "eve")
            result = await client.call_tool("list_active_notebooks", {})
            banner = texts_of(result)[0]
            if rejoined is None:
                assert banner == RESTARTED
                cells = await client.call_tool("get_all_cells", {})
                assert cells.is_error
                return
            assert banner == f"{RESTARTED}, rejoin requested"
            await call_ok(client, "get_all_cells")
            active = [n for n in result.structured_content["notebooks"] if n["active"]]
            listing = await call_ok(client, "list_active_notebooks")
            active = [n["notebook_id"] for n in listing["notebooks"] if n["active"]]
            assert active == [ids[rejoined]]

    run_bounded(body)


_EMPTY_NOTEBOOK = {"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


async def _target_step(client: Any, step: str, notebook_file: Path, ids: dict[str, str]) -> None:
    match step:
        case "connect_file":
            ids["file"] = (await call_ok(client, "connect_notebook", path=str(notebook_file)))[
                "notebook_id"
            ]
        case "create":
            ids["created"] = (await call_ok(client, "create_notebook", ephemeral=False))[
                "notebook_id"
            ]
        case "save":
            await call_ok(client, "save_notebook", path="saved.ipynb")
        case "disconnect":
            await call_ok(client, "disconnect_notebook")
        case "disconnect_parked":
            await call_ok(client, "disconnect_notebook", notebook_id=ids["file"])
        case "connect_missing":
            failed = await client.call_tool("connect_notebook", {"path": "missing.ipynb"})
            assert failed.is_error


def test_tools_list_is_answered_while_the_child_is_down(daemon: RunningDaemon) -> None:
    cache = daemon.paths.root / "tool-cache.json"
    cache.write_text("[]")

    async def body() -> None:
        async with mcp_client(daemon, "legacy", label="fay") as client:
            await call_ok(client, "list_active_notebooks")
            kill_session_manager(daemon, "fay")
            listed = await client.list_tools()
            names = {tool.name for tool in listed.tools}
            assert {"execute_cell", "reconnect"} <= names
        persisted = json.loads(cache.read_text())
        assert persisted, "an empty tool list was kept"
        assert "execute_cell" in {tool["name"] for tool in persisted}

    run_bounded(body)


def test_a_handoff_restart_does_not_count_against_the_crash_budget(
    daemon: RunningDaemon,
) -> None:
    from tests.support import run_cli

    async def body() -> None:
        async with mcp_client(daemon, "legacy", label="gus") as client:
            await call_ok(client, "create_notebook", ephemeral=False)
            env = {**daemon.env, "NBSTAGE_DAEMON_VERSION": "9.9.9"}
            restarted = await anyio.to_thread.run_sync(
                lambda: run_cli("daemon", "restart", state_dir=daemon.paths.root, env=env)
            )
            assert restarted.returncode == 0, restarted.stderr

            async def upgraded() -> list[str]:
                while True:
                    result = await client.call_tool("get_all_cells", {})
                    if not result.is_error:
                        return texts_of(result)
                    await anyio.sleep(0.1)

            with anyio.fail_after(20):
                shown = await upgraded()
            assert shown[0] == "[nbstage] Daemon upgraded (0.1.0 → 9.9.9), rejoin requested"
            for _ in range(5):
                old = kill_session_manager(daemon, "gus")
                await wait_for_new_session_manager(daemon, "gus", old)
            await call_ok(client, "get_all_cells")

    run_bounded(body)


def test_a_long_wait_sends_progress_so_clients_keep_waiting(
    daemon: RunningDaemon, tmp_path: Path
) -> None:
    """The cell runs until the first progress notification arrives (4 s into the wait),
    so the wait outlasts it whatever the machine's speed."""
    notes: list[tuple[float, str | None]] = []
    release = tmp_path / "release"

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        notes.append((progress, message))
        release.touch()

    async def body() -> None:
        async with mcp_client(daemon, "legacy", label="hal") as client:
            await call_ok(client, "create_notebook")
            made = await call_ok(client, "create_cell", source=wait_for_file(release))
            result = await client.call_tool(
                "execute_cell",
                {"cell_id": made["cell_id"], "timeout_secs": 50},
                progress_callback=on_progress,
            )
            assert result.structured_content["execution"]["status"] == "done"
        assert notes, "no progress notification during a wait that ended only with one"
        assert notes[0][0] == 1
        assert "execute_cell still running" in notes[0][1]

    run_bounded(body)
