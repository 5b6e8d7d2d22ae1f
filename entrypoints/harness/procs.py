"""The processes a harness run owns: its daemon, the pids it recorded, and the final sweep.

Processes are found through what they report (the daemon's ``identity``, ``clients`` and
``list_rooms``) or through the ``NBSTAGE_EDGE_PID`` every session child and kernel inherits from
the process that started it, never by name.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from functools import partial
from typing import TypeVar

import anyio
import anyio.abc
import psutil

from nbstage.entrypoints.common.file_locks import held_elsewhere
from nbstage.entrypoints.common.lifelines import EDGE_PID_ENV
from nbstage.entrypoints.common.python_command import module_command
from nbstage.entrypoints.common.statedir import StatePaths
from nbstage.entrypoints.control.daemon_client import DaemonClient
from nbstage.entrypoints.control.daemon_control import VERSION_ENV, query_status, stop
from nbstage.entrypoints.mcp.mcp_main import REJOIN_ENV
from nbstage.protocol.daemon.replies import DaemonIdentity
from nbstage.protocol.daemon.requests import GetIdentity

NBSTAGE = module_command("nbstage.entrypoints.cli")
INHERITED_MARKERS = (EDGE_PID_ENV, REJOIN_ENV)
GONE_SECS = 15.0
_T = TypeVar("_T")


class FaultError(Exception):
    """A fault or a process operation could not be carried out."""


class ClientUnusable(Exception):
    """The client's connection is gone; calls cannot be sent until start_client."""


def child_environ(settings: dict[str, str]) -> dict[str, str]:
    """This process's environment plus the run's settings, minus what marks a process as
    belonging to another nbstage edge or asks it to rejoin a notebook."""
    env = {k: v for k, v in os.environ.items() if k not in INHERITED_MARKERS}
    return {**env, **settings}


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


async def wait_gone(pid: int, what: str, timeout: float = GONE_SECS) -> None:
    with anyio.move_on_after(timeout):
        while alive(pid):
            await anyio.sleep(0.02)
        return
    raise FaultError(f"{what} (pid {pid}) still runs {timeout:.0f}s after being told to end")


def sigkill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        raise FaultError(f"pid {pid} had already exited") from None


class Owned:
    """Every process the run started or was told about, kept for the last-resort sweep."""

    def __init__(self) -> None:
        self.started: dict[int, float] = {}

    def add(self, pid: int) -> None:
        try:
            self.started.setdefault(pid, psutil.Process(pid).create_time())
        except psutil.NoSuchProcess:
            self.started.setdefault(pid, 0.0)

    def _same_process(self, proc: psutil.Process) -> bool:
        return self.started.get(proc.pid) == proc.create_time()

    def _edges(self) -> set[str]:
        """Recorded pids whose process is gone or still ours (a reused pid is someone else's)."""
        edges = set()
        for pid in self.started:
            try:
                proc = psutil.Process(pid)
                if not self._same_process(proc):
                    continue
            except psutil.NoSuchProcess:
                pass
            edges.add(str(pid))
        return edges

    def leftovers(self) -> list[psutil.Process]:
        edges = self._edges()
        found = []
        for proc in psutil.process_iter():
            try:
                mine = self._same_process(proc) or proc.environ().get(EDGE_PID_ENV) in edges
                if mine and proc.status() != psutil.STATUS_ZOMBIE:
                    found.append(proc)
            except psutil.Error:
                continue
        return found

    def kill_leftovers(self, grace: float) -> list[int]:
        """SIGKILL whatever of ours still runs after ``grace`` seconds; returns those pids."""
        deadline = time.monotonic() + grace
        while (found := self.leftovers()) and time.monotonic() < deadline:
            time.sleep(0.1)
        killed = []
        for proc in found:
            try:
                proc.kill()
                killed.append(proc.pid)
            except psutil.Error:
                continue
        return killed


def lock_held(paths: StatePaths) -> bool:
    """Whether a daemon (running or still starting) holds the state dir's lock."""
    return held_elsewhere(paths.lock)


def stop_any_daemon(paths: StatePaths, owned: Owned, timeout: float) -> None:
    """The last word on the run's state dir: any daemon that answers there, or is still
    starting there (it holds the lock), was started by this run, and is stopped."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = query_status(paths, timeout=2.0)
        if status is not None:
            owned.add(status.pid)
            with contextlib.suppress(TimeoutError, OSError):
                stop(paths)
        elif not lock_held(paths):
            return
        else:
            time.sleep(0.1)


class Daemon:
    """The run's daemon: started through ``nbstage daemon start`` with the run's settings."""

    def __init__(self, paths: StatePaths, env: dict[str, str], owned: Owned) -> None:
        self.paths = paths
        self.env = env
        self.owned = owned
        self.version: str | None = os.environ.get(VERSION_ENV) or None
        self.pids: list[int] = []

    def call(self, request: object, expected: type[_T]) -> _T:
        with DaemonClient(self.paths.socket, timeout=10.0) as client:
            return client.call(request, expected)

    async def ask(self, request: object, expected: type[_T]) -> _T:
        return await anyio.to_thread.run_sync(partial(self.call, request, expected))

    def _environ(self) -> dict[str, str]:
        env = child_environ(self.env)
        if self.version:
            env[VERSION_ENV] = self.version
        return env

    async def start(self) -> DaemonIdentity:
        command = [*NBSTAGE, "daemon", "start", "--state-dir", str(self.paths.root)]
        done = await anyio.run_process(command, env=self._environ(), check=False)
        said = (done.stdout + done.stderr).decode(errors="replace").strip()
        if done.returncode != 0:
            raise FaultError(f"nbstage daemon start exited {done.returncode}: {said[-300:]}")
        if said.startswith("already running"):
            raise FaultError(f"a daemon was running already ({said})")
        identity = await self.ask(GetIdentity(), DaemonIdentity)
        self.owned.add(identity.pid)
        if identity.pid not in self.pids:
            self.pids.append(identity.pid)
        if self.version and identity.version != self.version:
            raise FaultError(f"the daemon reports version {identity.version}, not {self.version}")
        return identity

    async def stop(self) -> int | None:
        return await anyio.to_thread.run_sync(stop, self.paths)

    async def kill(self) -> int:
        pid = (await self.ask(GetIdentity(), DaemonIdentity)).pid
        sigkill(pid)
        await wait_gone(pid, "the killed daemon")
        return pid
