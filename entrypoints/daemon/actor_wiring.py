"""The daemon edge's inside: the actor system that holds the Daemon, every Room and every
Kernel (``actor_host.ActorHost``), the messages the actors send the edge, and the
actors' start and stop.

Answers and progress go to the client side (``client_server.ClientServer``); blocking
work goes to the worker threads (``OffloadRunner``); a kernel's sockets are watched on
the loop. It also keeps what routing needs of the actors: each resident room's address,
and the pid of each running kernel, for the last-resort kill at stop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING, Any

import psutil
from thespian.actors import ActorExitRequest

from nbstage.entrypoints.common.actor_host import ActorHost
from nbstage.entrypoints.common.offload_runner import OffloadRunner
from nbstage.entrypoints.common.worker_threads import DetachedWorkers
from nbstage.protocol.common.offload import BlockingWorkRequested
from nbstage.protocol.daemon.frames import FrameKind
from nbstage.protocol.daemon.lab import SharedDocPushed
from nbstage.protocol.daemon_actors.edge import (
    KernelProcessEnded,
    KernelProcessStarted,
    RequestAnswered,
    RequestFailed,
    RequestProgressed,
    RoomEventOccurred,
    RoomGone,
    RoomResident,
)
from nbstage.protocol.daemon_actors.kernels import (
    KernelIoReady,
    UnwatchKernelSockets,
    WatchKernelSockets,
)
from nbstage.protocol.daemon_actors.rooms import (
    DaemonStarted,
    DaemonStopped,
    StartDaemon,
    StopDaemon,
)

if TYPE_CHECKING:
    from nbstage.entrypoints.daemon.client_server import ClientServer

log = logging.getLogger("nbstage.edge")

ACTOR_START_TIMEOUT = 60.0
STOP_TIMEOUT = 30.0
DRAIN_TIMEOUT = 5.0
"""How long a stop waits for blocking work still under way once the rooms are closed (or
their wait ran out); work still stuck then is left behind, and the process ends anyway."""


class ActorWiring:
    def __init__(self, workers: DetachedWorkers) -> None:
        self._workers = workers
        self.rooms: dict[str, Any] = {}
        """notebook_id → the address of its resident room."""
        self.pids: dict[int, tuple[str, float]] = {}
        """A running kernel's pid → its notebook and its process's start time."""
        self.daemon: Any = None
        self._host: ActorHost | None = None
        self._offload: OffloadRunner | None = None
        self._clients: ClientServer | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._started = asyncio.Event()
        self._stopped = asyncio.Event()

    def tell(self, address: Any, message: Any) -> None:
        self._host.tell(address, message)

    async def start(self, start: StartDaemon, clients: ClientServer) -> None:
        """Create the actor system and the Daemon actor, and wait for it to be up."""
        from nbstage.actors.daemon.actor import Daemon

        self._loop = asyncio.get_running_loop()
        self._clients = clients
        self._host = ActorHost(self._on_actor_message)
        self._offload = OffloadRunner(self._host.tell, self._workers)
        self.daemon = self._host.create(Daemon)
        self._host.tell(self.daemon, start)
        await asyncio.wait_for(self._started.wait(), ACTOR_START_TIMEOUT)

    async def stop(self) -> None:
        """Close every room (each saves first), then the actor system."""
        self._host.tell(self.daemon, StopDaemon())
        try:
            await asyncio.wait_for(self._stopped.wait(), STOP_TIMEOUT)
        except TimeoutError:
            log.error("rooms did not close within %.0fs; stopping anyway", STOP_TIMEOUT)
        stuck = await self._offload.drain(DRAIN_TIMEOUT)
        if stuck:
            log.error(
                "blocking work still running after %.0fs, left behind: %s",
                DRAIN_TIMEOUT,
                ", ".join(type(token).__name__ for token in stuck),
            )
        leftover = [name for name in self._host.live_actors() if name != "Daemon"]
        if leftover:
            log.warning("killing leftover actors: %s", ", ".join(leftover))
        self._host.tell(self.daemon, ActorExitRequest())
        self._host.close()

    def _on_actor_message(self, message: Any) -> None:
        clients = self._clients
        match message:
            case RequestAnswered():
                clients.answer(message)
            case RequestFailed(origin, code, text, notices):
                clients.refuse(origin, code, text, notices)
            case RequestProgressed(origin, text):
                clients.progress(origin, text)
            case RoomEventOccurred(kind, notebook_id, detail):
                event = {"kind": kind, "notebook_id": notebook_id, **detail}
                clients.broadcast({"type": FrameKind.EVENT, "event": event})
            case SharedDocPushed(conn_id, notebook_id, peer_id, messages):
                clients.push_lab(conn_id, notebook_id, peer_id, messages)
            case RoomResident(notebook_id, address):
                self.rooms[notebook_id] = address
            case RoomGone(notebook_id):
                self.rooms.pop(notebook_id, None)
            case KernelProcessStarted(notebook_id, pid):
                self._record_pid(notebook_id, pid)
            case KernelProcessEnded(_, pid):
                self.pids.pop(pid, None)
            case BlockingWorkRequested():
                self._offload.start(message)
            case WatchKernelSockets(owner, fds):
                for fd in fds:
                    self._loop.add_reader(fd, self._host.tell, owner, KernelIoReady())
            case UnwatchKernelSockets(fds):
                for fd in fds:
                    self._loop.remove_reader(fd)
            case DaemonStarted():
                self._started.set()
            case DaemonStopped():
                self._stopped.set()
            case _:
                log.warning("edge ignored %s", type(message).__name__)

    def _record_pid(self, notebook_id: str, pid: int) -> None:
        with contextlib.suppress(psutil.Error):
            self.pids[pid] = (notebook_id, psutil.Process(pid).create_time())
