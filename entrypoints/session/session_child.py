"""The session child: one MCP client's SessionManager and WatchLoop, in a process of
their own so that a crash here never reaches the client's stdio.

`nbstage mcp` starts it (``python -m nbstage.entrypoints.session.session_main``)
with one end of a socketpair in ``NBSTAGE_SESSION_FD``. Frames from it become
messages to the SessionManager; what the actors address to the supervisor goes back
as frames. This edge also owns the actors' connections to the daemon socket
(``actors/session/daemon_link.py``): it connects, writes the frames they encode, and hands
each frame that arrives to the actor that owns the link.

The process ends when the supervisor says stop, when the socketpair closes (its
parent died), or, after a handoff request, with exit code 75.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nbstage.actors.session.daemon_link import (
    CloseDaemonLink,
    DaemonFrameArrived,
    DaemonLinkClosed,
    DaemonLinkRefused,
    OpenDaemonLink,
    SendToDaemon,
)
from nbstage.entrypoints.common.actor_host import ActorHost
from nbstage.entrypoints.common.held_writer import HeldWriter
from nbstage.entrypoints.common.kept_tasks import start_kept
from nbstage.entrypoints.common.logs import setup_logging
from nbstage.entrypoints.common.offload_runner import OffloadRunner
from nbstage.entrypoints.common.ownership import Untrusted, check_peer, check_private_dir
from nbstage.entrypoints.common.statedir import LINK_STATE_DIR_ENV, followed_socket
from nbstage.entrypoints.session import fault_points
from nbstage.entrypoints.session.revival import Revival, wants_revival
from nbstage.protocol.common.offload import BlockingWorkRequested
from nbstage.protocol.daemon.frames import FrameError, read_body
from nbstage.protocol.session import session_frames
from nbstage.protocol.session.session_frames import SESSION_FD_ENV
from nbstage.protocol.session.supervision import (
    HANDOFF_EXIT_CODE,
    HandoffRequested,
    SessionConfig,
    StopSessionManager,
)

log = logging.getLogger("nbstage.session")


@dataclass
class Link:
    """One actor's connection to the daemon, as this edge carries it."""

    owner: Any
    out: HeldWriter = field(default_factory=HeldWriter)
    closed: bool = False


class SessionChildEdge:
    def __init__(self, sock: socket.socket, edge_pidfd: int | None = None) -> None:
        """``edge_pidfd``: the edge's pidfd, for a child that is not the edge's own and so
        cannot ask Linux to end it with the edge (session_zygote.py)."""
        self._sock = sock
        self._edge_pidfd = edge_pidfd
        self._writer: asyncio.StreamWriter | None = None
        self._host: ActorHost | None = None
        self._links: dict[int, Link] = {}
        self._tasks: set[asyncio.Task] = set()
        self.exit_code = 0
        self._fault = fault_points.from_environment()
        self._state_dir = os.environ.get(LINK_STATE_DIR_ENV)
        self._autostart = False
        self._revival: Revival | None = None
        self._settings_refused = False

    async def run(self) -> None:
        from nbstage.actors.session.session_manager import SessionManager

        if self._edge_pidfd is not None:
            asyncio.get_running_loop().add_reader(self._edge_pidfd, os._exit, 1)
        reader, self._writer = await asyncio.open_unix_connection(sock=self._sock)
        self._host = ActorHost(self._on_actor_message)
        self._revival = Revival(asyncio.get_running_loop())
        self._offload = OffloadRunner(self._host.tell)
        manager = self._host.create(SessionManager)
        try:
            while (message := await session_frames.read(reader)) is not None:
                if isinstance(message, SessionConfig):
                    setup_logging(Path(message.state_dir) / "logs", "session")
                    self._autostart = message.autostart
                self._host.tell(manager, message)
                if isinstance(message, StopSessionManager) or self.exit_code:
                    break
        except (BrokenPipeError, ConnectionResetError) as exc:
            # The edge closed its end while this child was writing: it is stopping this
            # child (the stop frame may be queued behind the error) or it is gone.
            log.info("the link to nbstage mcp closed: %s", exc)
        except (FrameError, ConnectionError) as exc:
            log.warning("the link to nbstage mcp failed: %s", exc)
        self._host.tell(manager, StopSessionManager())
        for link_id in list(self._links):
            self._close_link(link_id)
        self._host.close()
        with contextlib.suppress(ConnectionError):
            await self._writer.drain()
        self._writer.close()

    def _on_actor_message(self, message: Any) -> None:
        match message:
            case SendToDaemon(link_id, frame):
                self._send_on_link(link_id, frame)
            case OpenDaemonLink(link_id, socket_path, owner):
                link = self._links[link_id] = Link(owner)
                start_kept(self._tasks, self._run_link(link_id, link, socket_path))
            case CloseDaemonLink(link_id):
                self._close_link(link_id)
            case BlockingWorkRequested():
                self._offload.start(message)
            case _ if isinstance(message, session_frames.FROM_CHILD):
                self._to_supervisor(message)
            case _:
                log.warning("the session child ignored %s", type(message).__name__)

    def _to_supervisor(self, message: Any) -> None:
        if not self._writer.is_closing():
            self._writer.write(session_frames.encode(message))
        if isinstance(message, HandoffRequested):
            self.exit_code = HANDOFF_EXIT_CODE

    # --- daemon links ---------------------------------------------------------------------

    def _revive_if_dead(self, refusal: BaseException, settings_problem: str | None) -> None:
        revival = self._revival
        mended, self._settings_refused = self._settings_refused, settings_problem is not None
        if revival is None or self._state_dir is None or settings_problem is not None:
            return
        why = wants_revival(refusal, self._autostart, revival.running, revival.resting, mended)
        if why is not None:
            log.warning("no daemon answers (%s); looking whether to start one", why)
            revival.start(self._state_dir, why)

    def _settings(self) -> str | None:
        """Why a daemon would refuse this state dir's settings: asked only when no daemon
        answers (the settings module is the daemon's, kept out of a lean start)."""
        if self._state_dir is None:
            return None
        from nbstage.protocol.common.settings import settings_problem

        return settings_problem(Path(self._state_dir))

    async def _run_link(self, link_id: int, link: Link, socket_path: str) -> None:
        """Connect and relay one link's frames. The link may be closed (and forgotten)
        before this task first runs, or while it connects."""
        if link.closed:
            return
        writer = None
        try:
            socket_path = followed_socket(self._state_dir, socket_path)
            check_private_dir(Path(socket_path).parent)
            reader, writer = await asyncio.open_unix_connection(socket_path)
            check_peer(writer.get_extra_info("socket"), f"the daemon on {socket_path}")
        except (OSError, Untrusted) as exc:
            if isinstance(exc, Untrusted):
                log.error("daemon link refused: %s", exc)
            if writer is not None:
                writer.close()
            self._links.pop(link_id, None)
            problem = self._settings()
            self._host.tell(link.owner, DaemonLinkRefused(link_id, str(exc), problem))
            self._revive_if_dead(exc, problem)
            return
        if link.closed:
            writer.close()
            return
        link.out.attach(writer)
        reason = "the daemon closed the connection"
        try:
            while (body := await read_body(reader)) is not None:
                if self._fault is not None:
                    self._fault.arrived(link_id, body)
                self._host.tell(link.owner, DaemonFrameArrived(link_id, body))
        except (FrameError, ConnectionError) as exc:
            reason = str(exc) or type(exc).__name__
        writer.close()
        if self._links.pop(link_id, None) is not None and not link.closed:
            self._host.tell(link.owner, DaemonLinkClosed(link_id, reason))

    def _send_on_link(self, link_id: int, frame: bytes) -> None:
        link = self._links.get(link_id)
        if link is None or link.closed:
            return
        if self._fault is not None:
            self._fault.sent(link_id, frame)
        link.out.write(frame)

    def _close_link(self, link_id: int) -> None:
        link = self._links.pop(link_id, None)
        if link is None:
            return
        link.closed = True
        link.out.close()


def main() -> None:
    from nbstage.entrypoints.common.lifelines import EDGE_PID_ENV, die_with_parent

    # Ctrl-C in a terminal reaches the whole foreground group; the edge alone decides
    # what it means and ends this child through the socketpair.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    die_with_parent(int(os.environ[EDGE_PID_ENV]))
    sys.exit(serve(socket.socket(fileno=int(os.environ.pop(SESSION_FD_ENV)))))


def serve(sock: socket.socket, edge_pidfd: int | None = None) -> int:
    """Serve the edge at the other end of ``sock`` until it says stop; returns the exit
    status. A forked child (session_zygote.py) comes here with its edge's pidfd."""
    edge = SessionChildEdge(sock, edge_pidfd)
    asyncio.run(edge.run())
    return edge.exit_code
