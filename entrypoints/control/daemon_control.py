"""Starting, stopping and asking after the daemon process."""

from __future__ import annotations

import asyncio
import contextlib
import faulthandler
import fcntl
import logging
import os
import signal
import subprocess
import threading
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING

import psutil

from nbstage.entrypoints.common import runtime_dir
from nbstage.entrypoints.common.python_command import module_command
from nbstage.entrypoints.common.statedir import (
    StatePaths,
    daemon_output,
    prepare,
    record_socket_dir,
)
from nbstage.protocol.common.safe_files import open_private
from nbstage.protocol.common.version import VERSION

if TYPE_CHECKING:
    from nbstage.protocol.common.settings import Settings
    from nbstage.protocol.daemon.replies import DaemonStatus

log = logging.getLogger("nbstage.daemon")

VERSION_ENV = "NBSTAGE_DAEMON_VERSION"
START_TIMEOUT = 60.0
STOP_TIMEOUT = 40.0


class AlreadyRunning(Exception):
    pass


class SettingsRefused(Exception):
    """config.toml or the ``NBSTAGE_*`` environment could not be read; the message says
    where and why."""


SETTINGS_REFUSED_EXIT = 78
"""sysexits' EX_CONFIG: a daemon that refused its settings exits with it."""


def daemon_version() -> str:
    return os.environ.get(VERSION_ENV) or VERSION


def query_status(paths: StatePaths, timeout: float = 10.0) -> DaemonStatus | None:
    """The running daemon's status, or None if nothing answers on the socket it recorded
    (a socket dir that is not this user's alone holds no daemon of ours: runtime_dir.py).
    Raises ownership.Untrusted if the state dir, or the process serving that socket, is
    not this user's."""
    recorded = runtime_dir.own_recorded(paths)
    return None if recorded is None else _status_on(recorded, timeout)


def _status_on(recorded: StatePaths, timeout: float) -> DaemonStatus | None:
    from nbstage.entrypoints.control.daemon_client import DaemonClient, DaemonNotRunning
    from nbstage.protocol.daemon.replies import DaemonStatus
    from nbstage.protocol.daemon.requests import GetStatus

    try:
        with DaemonClient(recorded.socket, timeout=timeout) as client:
            return client.call(GetStatus(), DaemonStatus)
    except (DaemonNotRunning, ConnectionError, OSError):
        return None


def _take_lock(paths: StatePaths) -> int:
    fd = open_private(paths.lock, os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise AlreadyRunning(str(paths.lock)) from None
    os.set_inheritable(fd, False)
    return fd


def run_foreground(paths: StatePaths) -> None:
    """Run the daemon in this process until it is told to stop. Raises AlreadyRunning.

    A daemon a client autostarted launches its spare kernel
    (actors/daemon/kernel/spare_kernel.py) as soon as it holds the lock, before it loads the
    rest of its code."""
    from nbstage.actors.daemon.environment import environments
    from nbstage.actors.daemon.kernel import fork_server, spare_kernel
    from nbstage.entrypoints.common.lifelines import EDGE_PID_ENV
    from nbstage.entrypoints.common.logs import setup_logging
    from nbstage.entrypoints.control.daemon_launch import WARM_KERNEL_ENV, inherited_autostart_lock

    autostart = inherited_autostart_lock()
    prepare(paths)
    lock_fd = _take_lock(paths)
    faulthandler.register(signal.SIGUSR1)
    # a fatal signal (SIGSEGV, SIGBUS, ...) leaves every thread's stack in daemon.out,
    # where nothing else would say why the daemon is gone
    faulthandler.enable()
    try:
        setup_logging(paths.logs, "daemon")
        paths = runtime_dir.settle(paths)
        record_socket_dir(paths)
        with contextlib.suppress(FileNotFoundError):
            paths.socket.unlink()
        os.environ[EDGE_PID_ENV] = str(os.getpid())
        work_in_state_dir(paths)
        settings = _settings(paths)
        stale_envs = environments.pool_envs(paths.root)
        if os.environ.pop(WARM_KERNEL_ENV, "") == "1":
            spare_kernel.warm(paths.root, paths.kernel_dir)
        from nbstage.actors.daemon.environment import uv_commands
        from nbstage.entrypoints.daemon.daemon_edge import Edge

        uv_commands.use_config_file(settings.uv_config_file)
        edge = Edge(paths, settings, daemon_version(), stale_envs, autostart)
        asyncio.run(edge.run())
    finally:
        spare_kernel.SPARE.discard()
        fork_server.FORK_SERVERS.stop()
        runtime_dir.release(paths)
        os.close(lock_fd)


def work_in_state_dir(paths: StatePaths) -> None:
    """Move the daemon out of the folder it was started in (an agent's, where anyone may
    have left a ``uv.toml`` above) into its state dir. Clients send absolute paths, and a
    relative ``NBSTAGE_ENVS_DIR`` is made absolute first, from where it was meant."""
    from nbstage.actors.daemon.environment.environments import ENVS_DIR_ENV

    if os.environ.get(ENVS_DIR_ENV):
        os.environ[ENVS_DIR_ENV] = os.path.abspath(os.environ[ENVS_DIR_ENV])
    os.chdir(paths.root)


def _settings(paths: StatePaths) -> Settings:
    """The settings, read before anything starts (a spare kernel, a socket), or
    SettingsRefused: clients see the same words (``settings_problem``)."""
    from nbstage.protocol.common.settings import load_settings, refusal

    try:
        return load_settings(paths.root)
    except Exception as exc:
        problem = refusal(exc, paths.root)
        log.error("the daemon refuses to start: %s", problem)
        raise SettingsRefused(problem) from None


def start_background(
    paths: StatePaths, env: Mapping[str, str] | None = None
) -> tuple[DaemonStatus, bool]:
    """Start a detached daemon unless one runs; return (status, started_now). ``env``
    (default: this process's) is the daemon's environment, and so its settings'."""
    status = query_status(paths)
    if status is not None:
        return status, False
    problem = runtime_dir.client_problem(paths)
    if problem is not None:
        raise runtime_dir.NoRuntimeDir(problem)
    prepare(paths)
    with daemon_output(paths) as log_file:
        proc = subprocess.Popen(
            [
                *module_command("nbstage.entrypoints.cli"),
                "daemon",
                "start",
                "--foreground",
                "--state-dir",
                str(paths.root),
            ],
            stdin=subprocess.DEVNULL,
            stdout=log_file,
            stderr=log_file,
            env=env,
            start_new_session=True,
        )
    threading.Thread(target=_reap, args=(proc, paths), name="reap-daemon", daemon=True).start()
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        status = query_status(paths, timeout=2.0)
        if status is not None:
            return status, status.pid == proc.pid
        if proc.poll() is not None:
            status = query_status(paths)
            if status is not None:
                return status, False
            if proc.returncode == SETTINGS_REFUSED_EXIT:
                from nbstage.protocol.common.settings import settings_problem

                said = settings_problem(paths.root, None if env is None else dict(env))
                raise SettingsRefused(said or f"see {paths.logs}")
            if proc.returncode != 0:
                raise RuntimeError(f"daemon exited with code {proc.returncode}; see {paths.logs}")
            # 0: it found the state dir's lock taken. Another start (a client's autostart
            # or revival, daemon_launch.py) won; it is waited for.
        time.sleep(0.05)
    raise TimeoutError(f"daemon did not answer within {START_TIMEOUT:.0f}s; see {paths.logs}")


def _reap(proc: subprocess.Popen[bytes], paths: StatePaths) -> None:
    """Wait for the daemon; one that a signal ended (SIGKILL leaves no trace of its own)
    gets a line saying so in daemon.out, if this process is still there to see it."""
    code = proc.wait()
    if code < 0:
        note = f"nbstage: the daemon (pid {proc.pid}) was ended by signal {-code}"
        with contextlib.suppress(OSError, ValueError), daemon_output(paths) as out:
            out.write(f"{note} ({signal.strsignal(-code)})\n".encode())


def stop(paths: StatePaths) -> int | None:
    """Ask the daemon to stop and wait until its process is gone; return its pid."""
    from nbstage.entrypoints.control.daemon_client import DaemonClient, DaemonNotRunning
    from nbstage.protocol.daemon.replies import DaemonStopping
    from nbstage.protocol.daemon.requests import ShutdownDaemon

    recorded = runtime_dir.own_recorded(paths)
    status = None if recorded is None else _status_on(recorded, 10.0)
    if recorded is None or status is None:
        return None
    with (
        contextlib.suppress(DaemonNotRunning, ConnectionError, OSError),
        DaemonClient(recorded.socket) as client,
    ):
        client.call(ShutdownDaemon(), DaemonStopping)
    _wait_gone(status.pid, STOP_TIMEOUT)
    return status.pid


def _wait_gone(pid: int, timeout: float) -> None:
    """Wait until the process has exited (a zombie counts: its parent may not be us)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return
        except psutil.NoSuchProcess:
            return
        time.sleep(0.05)
    raise TimeoutError(f"daemon pid {pid} did not exit within {timeout:.0f}s")
