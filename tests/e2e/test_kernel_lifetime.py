"""A room's kernel across peers leaving and joining, and the ghost-room reaper (SPEC §5).

Each test starts its own daemon with small keep-alive and reaper settings. A peer
leaves the way a real client does: its connection closes. Waits are for facts:
a kernel pid exiting, or list_rooms showing what the daemon decided.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from nbstage.entrypoints.control.daemon_client import DaemonError
from tests.support import (
    RunningDaemon,
    daemon_running,
    pid_gone,
    processes_of_daemon,
    room_view,
    run_cell,
    wait_until,
)

pytestmark = pytest.mark.e2e

QUIET_AUTOSAVE = {
    "NBSTAGE_HEARTBEAT_SECS": "0.2",
    "NBSTAGE_AUTOSAVE_DELAY_SECS": "60",
    "NBSTAGE_AUTOSAVE_MAX_DELAY_SECS": "120",
}
"""Autosave far off, so a file on disk proves the reaper's durability barrier wrote it."""


def kernel_pid(daemon: RunningDaemon, notebook_id: str) -> int:
    """The room's kernel pid once the kernel is ready."""
    return wait_until(
        lambda: (room_view(daemon, notebook_id) or {}).get("kernel_pid"),
        30,
        f"a kernel pid for {notebook_id}",
    )


def wait_for_no_peers(daemon: RunningDaemon, notebook_id: str) -> None:
    wait_until(
        lambda: room_view(daemon, notebook_id)["peers"] == [],
        10,
        "the closed connection's peer to leave the room",
    )


def text_of(execution: dict) -> str:
    return execution["outputs"][0]["data"]["text/plain"]


def kernel_processes(daemon: RunningDaemon) -> list[int]:
    return [
        proc.pid
        for proc in processes_of_daemon(daemon.pid)
        if any(part.endswith("kernel_launcher.py") for part in proc.cmdline())
    ]


# --- keep-alive ---------------------------------------------------------------------------


def test_the_kernel_goes_after_keep_alive_the_room_stays_and_a_join_gets_a_fresh_one(
    state_dir: Path,
) -> None:
    with daemon_running(state_dir, {"NBSTAGE_KEEP_ALIVE_SECS": "1"}) as daemon:
        with daemon.client() as client:
            nid = client.request("create")["notebook_id"]
            assert run_cell(client, nid, "y = 'from the first kernel'")["status"] == "done"
            first = kernel_pid(daemon, nid)

        wait_until(lambda: pid_gone(first), 15, "the kernel to be torn down after keep-alive")
        room = room_view(daemon, nid)
        assert room is not None, "kernel teardown never removes the room"
        assert room["peers"] == []
        assert (room["kernel_status"], room["kernel_pid"]) == ("none", None)
        described = daemon.request("describe_room", notebook_id=nid)["keep_alive"]
        assert (described["pending"], described["armed_generation"]) == (False, None), (
            "a torn-down kernel leaves no teardown pending"
        )

        with daemon.client() as client:
            joined = client.request("attach", notebook_id=nid)
            assert joined["kernel_status"] in ("starting", "idle")
            fresh = run_cell(client, nid, "1+1")
            assert fresh["status"] == "done"
            assert text_of(fresh) == "2"
            second = kernel_pid(daemon, nid)
            assert second != first
            forgotten = run_cell(client, nid, "y")
            assert forgotten["status"] == "error", "a fresh kernel has none of the old state"
    assert pid_gone(second)


def test_a_rejoin_inside_keep_alive_keeps_the_same_kernel_and_its_state(
    state_dir: Path,
) -> None:
    with daemon_running(state_dir, {"NBSTAGE_KEEP_ALIVE_SECS": "30"}) as daemon:
        with daemon.client() as client:
            nid = client.request("create")["notebook_id"]
            assert run_cell(client, nid, "x = 41")["status"] == "done"
            pid = kernel_pid(daemon, nid)
        wait_for_no_peers(daemon, nid)
        assert room_view(daemon, nid)["kernel_pid"] == pid

        with daemon.client() as client:
            joined = client.request("attach", notebook_id=nid)
            assert joined["kernel_status"] == "idle"
            kept = run_cell(client, nid, "x + 1")
            assert kept["status"] == "done"
            assert text_of(kept) == "42"
            assert room_view(daemon, nid)["kernel_pid"] == pid
            assert kernel_processes(daemon) == [pid]
    assert pid_gone(pid)


def test_an_execute_after_teardown_starts_the_kernel_that_a_later_join_keeps(
    state_dir: Path,
) -> None:
    """One kernel per room: a kernel started by an execute is the room's kernel.

    After teardown a client that has not joined (say, one whose peer left when its
    connection dropped) may still execute; the room starts a kernel for it. A peer
    that joins next must get that kernel, and once everyone has left it must be
    torn down like any other.
    """
    # The keep-alive must outlast the gap between the unjoined execute and the join, or
    # the kernel is (rightly) torn down in between; 3 s leaves room on a loaded machine.
    with daemon_running(state_dir, {"NBSTAGE_KEEP_ALIVE_SECS": "3"}) as daemon:
        with daemon.client() as client:
            nid = client.request("create")["notebook_id"]
            assert run_cell(client, nid, "1+1")["status"] == "done"
            first = kernel_pid(daemon, nid)
        wait_until(lambda: pid_gone(first), 15, "the first kernel to be torn down")

        with daemon.client() as client:
            unjoined = run_cell(client, nid, "import os\nos.getpid()")
            assert unjoined["status"] == "done"
            started_by_execute = int(text_of(unjoined))

        with daemon.client() as client:
            client.request("attach", notebook_id=nid)
            joined = run_cell(client, nid, "import os\nos.getpid()")
            assert joined["status"] == "done"
            assert int(text_of(joined)) == started_by_execute, "the join started a second kernel"
            assert kernel_processes(daemon) == [started_by_execute]

        wait_until(
            lambda: pid_gone(started_by_execute), 15, "the kernel to be torn down after leaving"
        )


# --- the reaper ---------------------------------------------------------------------------


def test_the_reaper_removes_a_left_file_backed_room_after_saving_it(
    state_dir: Path, tmp_path: Path
) -> None:
    settings = {
        **QUIET_AUTOSAVE,
        "NBSTAGE_KEEP_ALIVE_SECS": "0.2",
        "NBSTAGE_REAPER_TTL_SECS": "0.5",
        "NBSTAGE_REAPER_INTERVAL_SECS": "1",
    }
    path = tmp_path / "reaped.ipynb"
    nbformat.write(nbformat.v4.new_notebook(), path)
    with daemon_running(state_dir, settings) as daemon:
        with daemon.client() as client:
            nid = client.request("open", path=str(path))["notebook_id"]
            assert run_cell(client, nid, "'the last edit'")["status"] == "done"
            pid = kernel_pid(daemon, nid)
        assert nbformat.read(path, as_version=4).cells == [], "autosave is off in this test"

        wait_until(lambda: pid_gone(pid), 15, "the kernel to be torn down after keep-alive")
        wait_until(lambda: room_view(daemon, nid) is None, 15, "the reaper to remove the room")

        saved = nbformat.read(path, as_version=4)
        nbformat.validate(saved)
        assert [cell.source for cell in saved.cells] == ["'the last edit'"]
        assert saved.cells[0].outputs[0]["data"]["text/plain"] == "'the last edit'"

        with daemon.client() as client:
            reopened = client.request("open", path=str(path))
            assert reopened["notebook_id"] == nid, "the registry keeps the path's uuid"
            assert reopened["cell_count"] == 1
            again = run_cell(client, nid, "1+1")
            assert again["status"] == "done"
            assert room_view(daemon, nid) is not None, "a room with a peer is not reaped"


def test_the_reap_request_reaps_at_once_and_spares_a_room_with_a_peer(state_dir: Path) -> None:
    settings = {
        **QUIET_AUTOSAVE,
        "NBSTAGE_KEEP_ALIVE_SECS": "0.2",
        "NBSTAGE_REAPER_TTL_SECS": "0",
        "NBSTAGE_REAPER_INTERVAL_SECS": "3600",
    }
    with daemon_running(state_dir, settings) as daemon, daemon.client() as holder:
        kept = holder.request("create", runtime=None)["notebook_id"]
        with daemon.client() as client:
            left = client.request("create", ephemeral=False)["notebook_id"]
            assert run_cell(client, left, "'journaled'")["status"] == "done"
            pid = kernel_pid(daemon, left)
        wait_until(lambda: pid_gone(pid), 15, "the kernel to be torn down after keep-alive")
        assert room_view(daemon, left)["peers"] == []
        assert room_view(daemon, left)["kernel_status"] == "none"

        assert daemon.request("reap") == {"reaped": [left], "kept": []}
        wait_until(lambda: room_view(daemon, left) is None, 10, "the reaped room to close")
        assert room_view(daemon, kept)["peers"] != [], "the room with a peer stays"
        assert daemon.request("reap") == {"reaped": [], "kept": []}

        with daemon.client() as client:
            back = client.request("attach", notebook_id=left)
            assert back["cell_count"] == 1, "the barrier flushed the untitled notebook"
            cells = client.request("get_cells", notebook_id=left, format="json")["cells"]
            assert [cell["source"] for cell in cells] == ["'journaled'"]
        with pytest.raises(DaemonError) as unknown:
            daemon.request("attach", notebook_id="00000000-0000-4000-8000-000000000000")
        assert unknown.value.code == "notebook_unavailable"
