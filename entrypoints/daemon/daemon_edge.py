"""The daemon process's edge: the Unix socket outside, the actor system inside.

This process holds the Daemon, every Room and every Kernel actor together
(``actor_wiring.ActorWiring``) and owns all outside I/O (``client_server.ClientServer``).
Frames from clients become :class:`ClientRequest` messages; actor answers and room
events come back to the edge and are written to the right connection. Everything runs
on the asyncio loop; the only other threads are the kernels' socket wakers and the
workers of blocking work. This file is the process's life: its start, the watches that
run while it serves, and its stop.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import time
from pathlib import Path

from nbstage.actors.daemon.environment import environments
from nbstage.actors.daemon.kernel.kernel_files import sweep_kernel_dir
from nbstage.actors.daemon.kernel.spare_kernel import SPARE, SPARE_UNUSED_SECS
from nbstage.entrypoints.common.offload_runner import MOST_THREADS
from nbstage.entrypoints.common.statedir import StatePaths
from nbstage.entrypoints.common.worker_threads import DetachedWorkers
from nbstage.entrypoints.control.daemon_launch import let_autostart_go
from nbstage.entrypoints.daemon import alive_stamp, leftovers
from nbstage.entrypoints.daemon.actor_wiring import ActorWiring
from nbstage.entrypoints.daemon.client_server import ClientServer
from nbstage.entrypoints.daemon.session_fork_server import SessionForkServer
from nbstage.protocol.common.codec import to_wire
from nbstage.protocol.common.settings import Settings
from nbstage.protocol.daemon.frames import FrameKind
from nbstage.protocol.daemon.replies import DaemonIdentity, Heartbeat
from nbstage.protocol.daemon_actors.rooms import DaemonRun, EarlierDaemon, StartDaemon

log = logging.getLogger("nbstage.edge")

HOME_CHECK_SECS = 2.0
SESSION_FORKS_AFTER_SECS = 1.0
"""The session fork server starts this long after the daemon is ready: its imports would
compete with the first client's first call, which it cannot serve (that client's child
started before the daemon). Its work is the clients that come later (ADR 0009). Clients
that started with the daemon and wait for it leave ``StatePaths.forks_wanted``: then
it starts at once."""


class Edge:
    def __init__(
        self,
        paths: StatePaths,
        settings: Settings,
        version: str,
        stale_envs: list[Path],
        autostart_lock: int | None = None,
    ) -> None:
        """``stale_envs``: the pool environments a dead daemon left, removed at start;
        ``autostart_lock``: the launching client's ``autostart.lock``, let go once this
        daemon listens (daemon_launch.py)."""
        self.paths = paths
        self._autostart_lock = autostart_lock
        self.settings = settings
        self._stale_envs = stale_envs
        started_at = round(time.time(), 6)
        self.identity = DaemonIdentity(os.getpid(), started_at, version, (os.getpid(), started_at))
        self.loop: asyncio.AbstractEventLoop | None = None
        self._stop_requested = asyncio.Event()
        self._workers = DetachedWorkers(MOST_THREADS, "offload")
        self.actors = ActorWiring(self._workers)
        envs_dir = str(environments.envs_dir(paths.root).resolve())
        self.clients = ClientServer(
            self.identity, paths, settings, envs_dir, self.actors, self._stop_requested.set
        )
        self.session_forks = SessionForkServer(paths)

    async def run(self) -> None:
        self.loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            self.loop.add_signal_handler(sig, self._stop_requested.set)
        earlier = await asyncio.to_thread(alive_stamp.take_over, self.paths.root, self._run)
        self._envs = asyncio.create_task(self._prepare_envs(self._stale_envs))
        await asyncio.to_thread(leftovers.sweep_at_start, earlier, self.paths.kernel_dir)
        await self.actors.start(self._start_message(earlier), self.clients)
        server = await asyncio.start_unix_server(self.clients.serve, path=str(self.paths.socket))
        os.chmod(self.paths.socket, 0o600)
        self._socket_identity = _identity_of(self.paths.socket)
        heartbeat = asyncio.create_task(self._heartbeat())
        home = asyncio.create_task(self._watch_home())
        log.info("daemon ready on %s (pid %d)", self.paths.socket, self.identity.pid)
        let_autostart_go(self._autostart_lock)
        self.loop.call_later(SPARE_UNUSED_SECS, self._discard_spare)
        wanted = await asyncio.to_thread(_taken, self.paths.forks_wanted)
        self.loop.call_later(0 if wanted else SESSION_FORKS_AFTER_SECS, self._start_session_forks)
        await self._stop_requested.wait()
        log.info("daemon stopping")
        server.close()
        await self.session_forks.stop()
        heartbeat.cancel()
        home.cancel()
        await self._stop_actors()
        await asyncio.to_thread(alive_stamp.touch, self.paths.root)
        await self.clients.close()
        if _identity_of(self.paths.socket) == self._socket_identity:
            self.paths.socket.unlink()

    @property
    def _run(self) -> DaemonRun:
        return DaemonRun(self.identity.pid, self.identity.started_at)

    def _start_message(self, earlier: EarlierDaemon | None) -> StartDaemon:
        paths = self.paths
        return StartDaemon(
            str(paths.root), str(paths.kernel_dir), self.settings, self._run, earlier
        )

    async def _prepare_envs(self, stale: list[Path]) -> None:
        try:
            # On a detached worker: a stop never waits for a template build (uv) to end.
            await self.loop.run_in_executor(
                self._workers, environments.prepare_envs, self.paths.root, stale
            )
        except environments.EnvironmentUnavailable as exc:
            log.warning("no pool environment for kernels: %s", exc)

    def _start_session_forks(self) -> None:
        if not self._stop_requested.is_set():
            # a request left after the daemon looked at it would speed up the next start
            self.clients.spawn(asyncio.to_thread(_taken, self.paths.forks_wanted))
            self.clients.spawn(self.session_forks.start())

    def _discard_spare(self) -> None:
        self.clients.spawn(asyncio.to_thread(SPARE.discard))

    async def _stop_actors(self) -> None:
        await self.actors.stop()
        await asyncio.to_thread(SPARE.discard)
        await asyncio.to_thread(leftovers.kill_leftover_kernels, self.actors.pids)
        await asyncio.to_thread(sweep_kernel_dir, self.paths.kernel_dir)

    async def _watch_home(self) -> None:
        """Stop if the state dir or the socket is removed or replaced under the daemon: it
        could never be reached again, and would otherwise run on with its kernels."""
        home = _identity_of(self.paths.root)
        sock = self._socket_identity
        while True:
            await asyncio.sleep(HOME_CHECK_SECS)
            for path, seen in ((self.paths.root, home), (self.paths.socket, sock)):
                if _identity_of(path) != seen:
                    log.error("%s was removed or replaced; the daemon stops", path)
                    self._stop_requested.set()
                    return

    async def _heartbeat(self) -> None:
        while True:
            beat = to_wire(Heartbeat(self.identity))
            self.clients.broadcast({"type": FrameKind.HEARTBEAT, **beat})
            await asyncio.to_thread(alive_stamp.touch, self.paths.root)
            await asyncio.sleep(self.settings.heartbeat_secs)


def _taken(path: Path) -> bool:
    """Whether ``path`` was there; it is gone afterwards."""
    try:
        path.unlink()
    except FileNotFoundError:
        return False
    return True


def _identity_of(path: Path) -> tuple[int, int] | None:
    try:
        info = os.lstat(path)
    except OSError:
        return None
    return info.st_dev, info.st_ino
