"""The daemon process: start, status, singleton, stop (SPEC §3.1, §5)."""

from __future__ import annotations

import json
import os
import stat
import time

import psutil
import pytest

from nbstage.actors.daemon.environment.environments import envs_dir
from nbstage.entrypoints.control.daemon_client import DaemonError
from tests.support import (
    RunningDaemon,
    pid_gone,
    processes_of_daemon,
    run_cell,
    run_cli,
    start_daemon,
    wait_until,
)

pytestmark = pytest.mark.e2e


def test_status_json_reports_identity_socket_and_counts(daemon: RunningDaemon) -> None:
    result = run_cli("daemon", "status", "--json", state_dir=daemon.paths.root, env=daemon.env)
    assert result.returncode == 0, result.stderr
    status = json.loads(result.stdout)
    assert status["pid"] == daemon.pid
    assert status["incarnation"] == [status["pid"], status["started_at"]]
    assert status["socket"] == str(daemon.paths.socket)
    started_with = {**os.environ, **daemon.env}
    assert status["envs_dir"] == str(envs_dir(daemon.paths.root, started_with).resolve())
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


def test_a_graceful_stop_ends_its_actors_and_kernels_itself(daemon: RunningDaemon) -> None:
    with daemon.client() as client:
        busy = client.request("create", ephemeral=False)["notebook_id"]
        cell = client.request("create_cell", notebook_id=busy, source="import time\ntime.sleep(60)")
        running = client.request("execute", notebook_id=busy, cell_id=cell["cell_id"])
        idle = client.request("create")["notebook_id"]
        assert run_cell(client, idle, "1+1")["status"] == "done"

        def sleeping() -> bool:
            execution_id = running["execution"]["execution_id"]
            seen = client.request("get_execution", notebook_id=busy, execution_id=execution_id)
            return seen["execution"]["status"] == "running"

        wait_until(sleeping, 30, "the busy kernel to run its cell")
    daemon.stop()
    wait_until(lambda: not processes_of_daemon(daemon.pid), 10, "every daemon process to exit")
    log_text = (daemon.paths.logs / "daemon.log").read_text()
    assert "daemon stopping" in log_text
    assert "leftover" not in log_text, "the last resort ran on a graceful stop"


def test_an_execution_lost_with_a_killed_daemon_says_so_and_what_to_do(
    daemon: RunningDaemon,
) -> None:
    with daemon.client() as client:
        notebook_id = client.request("create", ephemeral=False)["notebook_id"]
        cell = client.request(
            "create_cell", notebook_id=notebook_id, source="import time\ntime.sleep(60)"
        )
        answer = client.request("execute", notebook_id=notebook_id, cell_id=cell["cell_id"])
    execution_id = answer["execution"]["execution_id"]
    record = daemon.paths.executions / f"{execution_id}.json"
    wait_until(record.exists, 10, "the record of the execution under way")
    family = processes_of_daemon(daemon.pid)
    killed_at = time.time()
    daemon.kill()
    wait_until(lambda: all(pid_gone(p.pid) for p in family), 10, "the killed daemon's processes")
    daemon.pid = start_daemon(daemon.paths.root, daemon.env).pid

    with daemon.client() as client:
        client.request("attach", notebook_id=notebook_id)
        with pytest.raises(DaemonError) as refused:
            client.request("get_execution", notebook_id=notebook_id, execution_id=execution_id)
    assert refused.value.code == "execution_lost"
    seen = {time.strftime("%H:%M:%S", time.localtime(killed_at - back)) for back in (0, 1, 2, 3)}
    message = refused.value.message
    assert message in {
        f"execution {execution_id} was lost when the daemon stopped at {at}; run the cell again "
        f'with execute_cell(cell_id="{cell["cell_id"]}")'
        for at in seen
    }, message
