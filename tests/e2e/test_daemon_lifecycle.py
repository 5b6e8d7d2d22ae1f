"""The daemon process: start, status, singleton, stop (SPEC §3.1, §5)."""

from __future__ import annotations

import json
import stat

import psutil
import pytest

from tests.support import RunningDaemon, processes_of_daemon, run_cli, wait_until

pytestmark = pytest.mark.e2e


def test_status_json_reports_identity_socket_and_counts(daemon: RunningDaemon) -> None:
    result = run_cli("daemon", "status", "--json", state_dir=daemon.paths.root, env=daemon.env)
    assert result.returncode == 0, result.stderr
    status = json.loads(result.stdout)
    assert status["pid"] == daemon.pid
    assert status["incarnation"] == [status["pid"], status["started_at"]]
    assert status["socket"] == str(daemon.paths.socket)
    assert (status["rooms"], status["kernels"]) == (0, 0)


def test_second_start_reports_the_running_daemon_and_exits_zero(daemon: RunningDaemon) -> None:
    result = run_cli("daemon", "start", state_dir=daemon.paths.root, env=daemon.env)
    assert result.returncode == 0
    assert f"already running: nbstage daemon 0.1.0 pid {daemon.pid}" in result.stdout
    assert daemon.status()["pid"] == daemon.pid


def test_state_dir_and_socket_belong_to_the_user_alone(daemon: RunningDaemon) -> None:
    assert stat.S_IMODE(daemon.paths.root.stat().st_mode) == 0o700
    assert stat.S_IMODE(daemon.paths.socket.stat().st_mode) == 0o600


def test_no_daemon_process_listens_on_tcp(daemon: RunningDaemon) -> None:
    for proc in processes_of_daemon(daemon.pid):
        listening = [c for c in proc.net_connections(kind="inet") if c.status == psutil.CONN_LISTEN]
        assert listening == [], f"{proc.name()} pid {proc.pid} listens on {listening}"


def test_stop_leaves_no_process_behind(daemon: RunningDaemon) -> None:
    assert [p.pid for p in processes_of_daemon(daemon.pid)] == [daemon.pid], (
        "a daemon with no kernels is one process: every actor lives inside it"
    )
    daemon.stop()
    wait_until(lambda: not processes_of_daemon(daemon.pid), 10, "every daemon process to exit")


def test_status_without_a_daemon_says_so_and_exits_one(state_dir) -> None:
    result = run_cli("daemon", "status", state_dir=state_dir)
    assert result.returncode == 1
    assert "not running" in result.stderr
