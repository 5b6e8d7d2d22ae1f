"""The daemon edge's outside: the Unix socket's clients, their requests and the answers
written back to them.

A frame from a client becomes a :class:`ClientRequest` to the Daemon actor or to the
room it names (``actor_wiring.ActorWiring`` knows the addresses); what the edge itself
can say (identity, watch, clients, log, shutdown) it answers here. A connection that
closes leaves every room it joined.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import sys
from collections.abc import Callable, Coroutine
from dataclasses import asdict
from pathlib import Path
from typing import Any

import orjson

from nbstage.entrypoints.common.kept_tasks import start_kept
from nbstage.entrypoints.common.ownership import Untrusted, check_peer
from nbstage.entrypoints.common.statedir import StatePaths
from nbstage.entrypoints.daemon.actor_wiring import ActorWiring
from nbstage.entrypoints.daemon.connection import (
    Connection,
    error_frame,
    result_frame,
    too_large_frame,
)
from nbstage.protocol.common.codec import from_wire, to_wire
from nbstage.protocol.common.errors import ErrorCode, NbstageError
from nbstage.protocol.common.safe_files import open_regular
from nbstage.protocol.common.settings import Settings
from nbstage.protocol.daemon.frames import (
    WIRE_VERSION,
    FrameError,
    FrameKind,
    FrameTooLarge,
    encode_frame,
    encode_result_frame,
    read_frame,
)
from nbstage.protocol.daemon.notices import Notice
from nbstage.protocol.daemon.replies import (
    ClientsListed,
    DaemonIdentity,
    DaemonStatus,
    DaemonStopping,
    Heartbeat,
    LogTail,
    NotebookJoined,
    RoomCounts,
)
from nbstage.protocol.daemon.requests import (
    AttachNotebook,
    CreateNotebook,
    EvictRoom,
    GetIdentity,
    GetLog,
    GetStatus,
    LeaveRoom,
    ListClients,
    OpenNotebook,
    ShutdownDaemon,
    Watch,
    decode_request,
)
from nbstage.protocol.daemon_actors.edge import ClientRequest, Origin, RequestAnswered
from nbstage.protocol.session.watching import bounded_client

log = logging.getLogger("nbstage.edge")

JOIN_REQUESTS = (OpenNotebook, CreateNotebook, AttachNotebook)
DAEMON_ANSWERS = (AttachNotebook, EvictRoom)
"""Requests that carry a notebook_id but are answered by the Daemon actor, not the Room."""


class ClientServer:
    def __init__(
        self,
        identity: DaemonIdentity,
        paths: StatePaths,
        settings: Settings,
        envs_dir: str,
        actors: ActorWiring,
        stop: Callable[[], None],
    ) -> None:
        """``stop`` asks the daemon to stop (a client's shutdown)."""
        self.identity = identity
        self.paths = paths
        self.settings = settings
        self._envs_dir = envs_dir
        self._actors = actors
        self._stop = stop
        self.connections: dict[int, Connection] = {}
        self.pending: dict[Origin, Any] = {}
        self._conn_ids = itertools.count(1)
        self._serving: set[asyncio.Task] = set()

    def spawn(self, work: Coroutine[Any, Any, Any]) -> None:
        """Run ``work`` as a task the stop cancels and waits for."""
        start_kept(self._serving, work)

    async def close(self) -> None:
        """Close every connection and end the tasks serving them."""
        for conn in list(self.connections.values()):
            conn.writer.close()
        for task in list(self._serving):
            task.cancel()
        await asyncio.gather(*self._serving, return_exceptions=True)

    # --- answers from the actors ----------------------------------------------------------

    def answer(self, answered: RequestAnswered) -> None:
        origin = answered.origin
        request = self.pending.pop(origin, None)
        conn = self.connections.get(origin.conn)
        if isinstance(request, GetStatus):
            if conn is not None:
                conn.send(result_frame(origin.request_id, self._status(answered)))
            return
        if isinstance(request, JOIN_REQUESTS):
            result = from_wire(NotebookJoined, answered.result())
            joined = (result.notebook_id, result.peer_id)
            if conn is not None:
                conn.peers.add(joined)
            else:
                self._leave(origin.conn, *joined)
        if conn is not None:
            try:
                frame = encode_result_frame(
                    origin.request_id, answered.result_json, answered.notices
                )
            except FrameTooLarge as exc:
                frame = too_large_frame(origin.request_id, exc.size)
            conn.send_raw(frame)

    def _status(self, answered: RequestAnswered) -> DaemonStatus:
        counts = from_wire(RoomCounts, answered.result())
        return DaemonStatus(
            **asdict(self.identity),
            socket=str(self.paths.socket),
            state_dir=str(self.paths.root),
            envs_dir=self._envs_dir,
            **asdict(counts),
        )

    def refuse(
        self, origin: Origin, code: ErrorCode, text: str, notices: tuple[Notice, ...]
    ) -> None:
        self.pending.pop(origin, None)
        conn = self.connections.get(origin.conn)
        if conn is not None:
            conn.send(error_frame(origin.request_id, code, text, notices))

    def progress(self, origin: Origin, message: str) -> None:
        """A ``progress`` frame for a request still pending; one answered gets none."""
        conn = self.connections.get(origin.conn)
        if conn is not None and origin in self.pending:
            conn.send(
                {"id": origin.request_id, "type": FrameKind.PROGRESS, "message": message[:2000]}
            )

    def push_lab(self, conn_id: int, notebook_id: str, peer_id: str, messages: list) -> None:
        """Y messages for one person, on the connection it joined from (ADR 0004)."""
        conn = self.connections.get(conn_id)
        if conn is not None:
            frame = {"type": FrameKind.LAB, "notebook_id": notebook_id, "messages": messages}
            conn.send({"id": peer_id, **frame})

    def broadcast(self, payload: dict[str, Any]) -> None:
        for conn in self.connections.values():
            if conn.watch_id is not None:
                conn.send({"id": conn.watch_id, **payload})

    # --- client connections ---------------------------------------------------------------

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            check_peer(writer.get_extra_info("socket"), "the connecting process")
        except Untrusted as exc:
            await _refuse_stranger(writer, exc)
            return
        conn = Connection(next(self._conn_ids), writer, self.settings.max_unsent_bytes)
        self.connections[conn.conn_id] = conn
        self._serving.add(asyncio.current_task())
        try:
            while True:
                try:
                    frame = await read_frame(reader)
                except FrameError as exc:
                    conn.send(error_frame(None, ErrorCode.BAD_FRAME, str(exc)))
                    break
                if frame is None or not self._dispatch(conn, frame):
                    break
                await writer.drain()
        except ConnectionError:
            pass
        finally:
            self._serving.discard(asyncio.current_task())
            self._drop(conn)
            writer.close()

    def _drop(self, conn: Connection) -> None:
        """A closed connection leaves every room it joined."""
        del self.connections[conn.conn_id]
        for notebook_id, peer_id in conn.peers:
            self._leave(conn.conn_id, notebook_id, peer_id)

    def _leave(self, conn_id: int, notebook_id: str, peer_id: str) -> None:
        address = self._actors.rooms.get(notebook_id)
        if address is not None:
            origin = Origin(0, f"leave-{conn_id}-{peer_id}")
            self._actors.tell(address, ClientRequest(origin, LeaveRoom(notebook_id, peer_id)))

    def _dispatch(self, conn: Connection, frame: dict[str, Any]) -> bool:
        """Route one request; False closes the connection (an unknown request type)."""
        request_id = frame["id"]
        try:
            request = decode_request(frame)
        except NbstageError as exc:
            conn.send(error_frame(request_id, exc.code, exc.message))
            return exc.code is not ErrorCode.UNKNOWN_REQUEST
        origin = Origin(conn.conn_id, request_id, getattr(request, "preview", None))
        match request:
            case GetIdentity():
                conn.send(result_frame(request_id, self.identity))
            case Watch(client):
                conn.watch_id = request_id
                conn.client = bounded_client(client)
                beat = Heartbeat(self.identity)
                conn.send({"id": request_id, "type": FrameKind.HEARTBEAT, **to_wire(beat)})
            case ListClients():
                clients = [c.client for c in self.connections.values() if c.client is not None]
                conn.send(result_frame(request_id, ClientsListed(clients)))
            case GetLog(lines):
                self.spawn(self._send_log(conn, request_id, lines))
            case ShutdownDaemon():
                conn.send(result_frame(request_id, DaemonStopping()))
                self._stop()
            case _:
                self._route(origin, conn, request)
        return True

    async def _send_log(self, conn: Connection, request_id: Any, lines: int) -> None:
        entries = await asyncio.to_thread(read_log_tail, self.paths.logs, max(1, min(lines, 5000)))
        conn.send(result_frame(request_id, LogTail(entries)))

    def _route(self, origin: Origin, conn: Connection, request: Any) -> None:
        notebook_id = getattr(request, "notebook_id", None)
        target = self._actors.daemon
        if notebook_id is not None and not isinstance(request, DAEMON_ANSWERS):
            target = self._actors.rooms.get(notebook_id)
            if target is None:
                conn.send(
                    error_frame(
                        origin.request_id,
                        ErrorCode.NOTEBOOK_UNAVAILABLE,
                        f"Notebook {notebook_id} is not open in the daemon; attach it first.",
                    )
                )
                return
        if isinstance(request, LeaveRoom):
            conn.peers.discard((request.notebook_id, request.peer_id))
        self.pending[origin] = request
        self._actors.tell(target, ClientRequest(origin, request))


async def _refuse_stranger(writer: asyncio.StreamWriter, exc: Untrusted) -> None:
    log.warning("refused a connection: %s", exc)
    refusal = f"{exc}. This daemon serves its own user alone; closing the connection."
    frame = error_frame(None, ErrorCode.BAD_REQUEST, refusal)
    writer.write(encode_frame({"v": WIRE_VERSION, **frame}))
    with contextlib.suppress(ConnectionError):
        await writer.drain()
    writer.close()


def read_log_tail(logs_dir: Path, lines: int) -> list[dict[str, Any]]:
    """The newest ``lines`` entries of daemon.log (the actors log there too); actors.log is
    read as well where an older daemon left one, merged by time."""
    entries = []
    for name in ("daemon.log", "actors.log"):
        try:
            fd, info = open_regular(logs_dir / name, sys.maxsize)
        except OSError:
            continue
        with os.fdopen(fd, "rb") as log_file:
            log_file.seek(max(0, info.st_size - 400 * lines))
            for raw in log_file.read().splitlines()[-lines:]:
                with contextlib.suppress(orjson.JSONDecodeError):
                    entries.append(orjson.loads(raw))
    entries.sort(key=lambda e: e.get("ts", 0))
    return entries[-lines:]
