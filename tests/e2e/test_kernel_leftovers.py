"""What a kernel leaves behind (issue 20): the connection files of kernels a killed daemon
left, and the processes a cell started in a session of their own."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

from nbstage.actors.daemon.kernel.kernel_files import named_on_command_lines
from nbstage.entrypoints.control.daemon_client import DaemonClient
from tests.conftest import FAST_SETTINGS
from tests.support import (
    daemon_running,
    pid_gone,
    printed,
    run_cell,
    start_daemon,
    wait_until,
)


def test_a_new_daemon_removes_what_the_kernels_of_a_killed_one_left(state_dir: Path) -> None:
    """A SIGKILLed daemon's kernel ends, but its connection file, key and all, stays, and
    so does a child the kernel started in a session of its own, until the next daemon
    starts. A connection file some running process still uses is kept."""
    killed = start_daemon(state_dir, FAST_SETTINGS)
    kernel_dir = killed.paths.kernel_dir
    escaped: list[int] = []
    held = kernel_dir / "held-1234.json"
    holder = None
    try:
        with killed.client() as client:
            nid = client.request("create")["notebook_id"]
            escaped.append(_start_escaping_child(client, nid))
            kernel_pid = client.request("list_rooms")["rooms"][0]["kernel_pid"]
        (left,) = kernel_dir.glob("*.json")
        assert "key" in left.read_text()
        killed.kill()
        wait_until(lambda: pid_gone(kernel_pid), 10, "the killed daemon's kernel to end")
        wait_until(lambda: pid_gone(killed.pid), 10, "the killed daemon to be reaped")

        held.write_text("{}")
        holder = subprocess.Popen(
            [sys.executable, "-c", "import time; time.sleep(300)", "-f", str(held)]
        )
        wait_until(lambda: named_on_command_lines(kernel_dir), 10, "the holder to run")
        with daemon_running(state_dir, FAST_SETTINGS) as daemon:
            assert daemon.pid != killed.pid
            assert not left.exists()
            assert not list(kernel_dir.glob(f"{left.stem}-*")), "its IPC sockets go too"
            assert held.exists()
            wait_until(lambda: pid_gone(escaped[0]), 30, "the escaped child to be ended")
    finally:
        if holder is not None:
            holder.kill()
            holder.wait()
        for pid in escaped:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


SESSION_CHILD = (
    "import subprocess\n"
    "child = subprocess.Popen(['sleep', '300'], start_new_session=True)\n"
    "print(child.pid)\n"
)


def _start_escaping_child(client: DaemonClient, nid: str) -> int:
    pid = int(printed(run_cell(client, nid, SESSION_CHILD)))
    assert not pid_gone(pid)
    return pid


def test_a_child_in_a_session_of_its_own_ends_with_its_kernel_at_a_restart_and_a_stop(
    state_dir: Path,
) -> None:
    escaped: list[int] = []
    try:
        with daemon_running(state_dir, FAST_SETTINGS) as daemon:
            with daemon.client() as client:
                nid = client.request("create")["notebook_id"]
                escaped.append(_start_escaping_child(client, nid))
                client.request("restart_kernel", notebook_id=nid)
                wait_until(lambda: pid_gone(escaped[0]), 30, "the child to end with the restart")
                escaped.append(_start_escaping_child(client, nid))
            daemon.stop()
            wait_until(lambda: pid_gone(escaped[1]), 30, "the child to end with the daemon's stop")
    finally:
        for pid in escaped:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
