"""What nbstage's uv reads and how long it runs (issue 20), through a real daemon and uv."""

from __future__ import annotations

import secrets
import threading
from pathlib import Path

import psutil
import pytest

from nbstage.entrypoints.control.daemon_client import DaemonClient, DaemonError
from tests.conftest import FAST_SETTINGS
from tests.slow_index import slow_index
from tests.support import (
    RunningDaemon,
    daemon_running,
    pid_gone,
    printed,
    run_cell,
    wait_until,
)


def test_a_uv_toml_above_the_folder_the_daemon_started_in_is_not_read(
    state_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Someone else's folder above the agent's holds a uv.toml that uv could not even
    parse: a build that read it would fail. The daemon moves into its state dir, and its
    uv reads no configuration it did not choose."""
    shared = tmp_path / "shared"
    agent_folder = shared / "agent" / "work"
    agent_folder.mkdir(parents=True)
    (shared / "uv.toml").write_text("this is [not toml\n")
    monkeypatch.chdir(agent_folder)

    with daemon_running(state_dir, FAST_SETTINGS) as daemon:
        assert psutil.Process(daemon.pid).cwd() == str(daemon.paths.root)
        with daemon.client(timeout=300) as client:
            nid = client.request("create", working_dir=str(agent_folder))["notebook_id"]
            where = printed(run_cell(client, nid, "import sys; print(sys.prefix)"))
            assert "/envs/pool/" in where, "the template was built, so the kernel is pooled"
            synced = client.request(
                "manage_dependencies", notebook_id=nid, add=["six"], trust=True, apply="sync"
            )
            assert synced["apply"]["ok"] is True, synced
            assert printed(run_cell(client, nid, "import six; print('six here')")) == "six here\n"


def uv_installs_of(daemon_pid: int) -> list[psutil.Process]:
    """The ``uv pip install`` processes the daemon ``daemon_pid`` started, found by the
    variable every process it starts inherits."""
    found = []
    for proc in psutil.process_iter(["name", "cmdline", "environ"]):
        environ = proc.info["environ"] or {}
        installs = proc.info["name"] == "uv" and "install" in (proc.info["cmdline"] or [])
        if installs and environ.get("NBSTAGE_EDGE_PID") == str(daemon_pid):
            found.append(proc)
    return found


def test_a_build_under_way_ends_with_the_daemon_when_it_is_killed(
    state_dir: Path, tmp_path: Path
) -> None:
    """An inline build whose one wheel takes a minute to download; the daemon is
    SIGKILLed while uv waits for it. uv is gone within seconds, not a minute later."""
    name = f"nbstage-slow-{secrets.token_hex(4)}"
    with (
        slow_index(tmp_path / "index", name, seconds=60) as url,
        daemon_running(state_dir, {**FAST_SETTINGS, "UV_INDEX": url}) as daemon,
    ):
        nid = daemon.request("create")["notebook_id"]
        asked = threading.Thread(target=_build_until_cut_off, args=(daemon, nid, name))
        asked.start()
        try:
            (uv, *_) = wait_until(lambda: uv_installs_of(daemon.pid), 60, "uv to start")
            wait_until(lambda: _downloading(uv, url), 60, "uv to connect to the slow index")
            daemon.kill()
            wait_until(lambda: pid_gone(uv.pid), 10, f"uv (pid {uv.pid}) to end")
        finally:
            for proc in uv_installs_of(daemon.pid):
                proc.kill()
            asked.join(timeout=30)


def _build_until_cut_off(daemon: RunningDaemon, nid: str, name: str) -> None:
    try:
        with DaemonClient(daemon.paths.socket, timeout=120) as client:
            client.request("manage_dependencies", notebook_id=nid, add=[name], apply="restart")
    except (DaemonError, ConnectionError, OSError):
        pass


def _downloading(uv: psutil.Process, url: str) -> bool:
    port = int(url.rsplit(":", 1)[1].split("/", 1)[0])
    try:
        return any(
            conn.raddr and conn.raddr.port == port for conn in uv.net_connections(kind="inet")
        )
    except psutil.Error:
        return False
