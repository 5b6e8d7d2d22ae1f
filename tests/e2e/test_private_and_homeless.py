"""Nothing private leaves the state dir; a daemon that lost its home stops (issue 13)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.conftest import FAST_SETTINGS
from tests.support import (
    daemon_running,
    pid_gone,
    processes_of_daemon,
    room_view,
    run_cell,
    start_daemon,
    wait_until,
)

pytestmark = pytest.mark.e2e

MARKER = "nbstage-private-marker-7f3a9c"


def files_holding(root: Path, needle: bytes, skip: Path) -> list[Path]:
    found = []
    for path in root.rglob("*"):
        if path.is_relative_to(skip) or not path.is_file() or path.is_symlink():
            continue
        try:
            if needle in path.read_bytes():
                found.append(path)
        except OSError:
            continue
    return found


def test_a_cell_leaves_no_trace_outside_the_state_dir(state_dir: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    env = {**FAST_SETTINGS, "HOME": str(home), "IPYTHONDIR": str(home / ".ipython")}
    with daemon_running(state_dir, env) as daemon, daemon.client() as client:
        notebook = client.request("create")["notebook_id"]
        assert run_cell(client, notebook, f"secret = {MARKER!r}")["status"] == "done"
        history = run_cell(client, notebook, "get_ipython().history_manager.enabled")
        assert history["outputs"][0]["data"]["text/plain"] == "False"
    assert (home / ".ipython").exists(), "the kernel did use the home it was given"
    for root in (home, tmp_path, state_dir.parent):
        assert files_holding(root, MARKER.encode(), skip=state_dir) == []


def test_a_stopped_daemon_leaves_no_kernel_pipe_socket(daemon) -> None:
    with daemon.client() as client:
        for _ in range(2):
            notebook = client.request("create")["notebook_id"]
            assert run_cell(client, notebook, "1")["status"] == "done"
    kernel_dir = daemon.paths.kernel_dir
    assert list(kernel_dir.glob("pipe-*")), "each running kernel has its IOPub pipe socket"
    daemon.stop()
    assert list(kernel_dir.glob("pipe-*")) == []


def started_with_a_kernel(state_dir: Path) -> tuple[object, int]:
    daemon = start_daemon(state_dir, FAST_SETTINGS)
    with daemon.client() as client:
        notebook = client.request("create")["notebook_id"]
        assert run_cell(client, notebook, "1")["status"] == "done"
    return daemon, room_view(daemon, notebook)["kernel_pid"]


def test_a_daemon_whose_state_dir_is_deleted_stops_with_its_kernel(state_dir: Path) -> None:
    daemon, kernel = started_with_a_kernel(state_dir)
    try:
        shutil.rmtree(state_dir)
        wait_until(lambda: pid_gone(daemon.pid), 12, "the homeless daemon to stop")
        wait_until(lambda: pid_gone(kernel), 30, "its kernel to go with it")
    finally:
        for proc in processes_of_daemon(daemon.pid):
            proc.kill()


def test_a_daemon_whose_socket_is_replaced_stops_and_leaves_the_new_file_alone(
    state_dir: Path,
) -> None:
    daemon, kernel = started_with_a_kernel(state_dir)
    try:
        os.unlink(daemon.paths.socket)
        daemon.paths.socket.write_text("not ours")
        wait_until(lambda: pid_gone(daemon.pid), 12, "the daemon to stop")
        wait_until(lambda: pid_gone(kernel), 2, "its kernel to go with it")
        assert daemon.paths.socket.read_text() == "not ours"
    finally:
        for proc in processes_of_daemon(daemon.pid):
            proc.kill()
