"""The daemon process's edge: the Unix socket outside, the actor system inside.

This process holds the Daemon, every Room and every Kernel actor together
(``actor_host.ActorHost``) and owns all outside I/O. Frames from clients become
:class:`ClientRequest` messages; actor answers and room events come back to the
edge address and are written to the right connection. Everything runs on the
asyncio loop; the only other threads are the kernels' socket wakers.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import signal
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import orjson
import psutil
from thespian.actors import ActorExitRequest

from nbstage.actors.daemon.environment import environments
from nbstage.actors.daemon.kernel.kernel_files import sweep_kernel_dir
from nbstage.actors.daemon.kernel.process_tree import end_orphans_of
from nbstage.actors.daemon.kernel.spare_kernel import SPARE, SPARE_UNUSED_SECS
from nbstage.entrypoints.common.actor_host import ActorHost
from nbstage.entrypoints.common.kept_tasks import start_kept
from nbstage.entrypoints.common.offload_runner import MOST_THREADS, OffloadRunner
from nbstage.entrypoints.common.ownership import Untrusted, check_peer
from nbstage.entrypoints.common.statedir import StatePaths
from nbstage.entrypoints.common.worker_threads import DetachedWorkers
from nbstage.entrypoints.daemon import alive_stamp
from nbstage.protocol.common.codec import from_wire, to_wire
from nbstage.protocol.common.errors import ErrorCode, NbstageError
from nbstage.protocol.common.offload import BlockingWorkRequested
from nbstage.protocol.common.safe_files import open_regular
from nbstage.protocol.common.settings import Settings
from nbstage.protocol.daemon.frames import (
    MAX_FRAME_BYTES,
    WIRE_VERSION,
    FrameError,
    FrameKind,
    FrameTooLarge,
    encode_frame,
    encode_result_frame,
    read_frame,
)
from nbstage.protocol.daemon.lab import SharedDocPushed
from nbstage.protocol.daemon.notices import Notice
from nbstage.protocol.daemon.replies import (
    ClientsListed,
    DaemonIdentity,
    DaemonRefused,
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
from nbstage.protocol.daemon_actors.edge import (
    ClientRequest,
    KernelProcessEnded,
    KernelProcessStarted,
    Origin,
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
    DaemonRun,
    DaemonStarted,
    DaemonStopped,
    EarlierDaemon,
    StartDaemon,
    StopDaemon,
)
from nbstage.protocol.session.watching import bounded_client

log = logging.getLogger("nbstage.edge")

ACTOR_START_TIMEOUT = 60.0
STOP_TIMEOUT = 30.0
DRAIN_TIMEOUT = 5.0
"""How long a stop waits for blocking work still under way once the rooms are closed (or
their wait ran out); work still stuck then is left behind, and the process ends anyway."""
HOME_CHECK_SECS = 2.0
JOIN_REQUESTS = (OpenNotebook, CreateNotebook, AttachNotebook)
DAEMON_ANSWERS = (AttachNotebook, EvictRoom)
"""Requests that carry a notebook_id but are answered by the Daemon actor, not the Room."""


@dataclass
class Connection:
    conn_id: int
    writer: asyncio.StreamWriter
    max_unsent: int
    """Past this many bytes written and not yet taken by the client, it is dropped."""
    watch_id: int | str | None = None
    client: dict[str, Any] | None = None
    peers: set[tuple[str, str]] = field(default_factory=set)

    def send(self, payload: dict[str, Any]) -> None:
        try:
            frame = encode_frame({"v": WIRE_VERSION, **payload})
        except FrameTooLarge as exc:
            frame = too_large_frame(payload.get("id"), exc.size)
        self.send_raw(frame)

    def send_raw(self, frame: bytes) -> None:
        if self.writer.is_closing():
            return
        self.writer.write(frame)
        unsent = self.writer.transport.get_write_buffer_size()
        if unsent > self.max_unsent:
            self._drop_unread(unsent)

    def _drop_unread(self, unsent: int) -> None:
        """Close a connection whose client does not read what it is sent (a watcher that
        never reads would hold every event and heartbeat in the daemon), discarding what
        is queued; its serving task then ends it as any closed connection."""
        label = (self.client or {}).get("label")
        log.warning(
            "dropped connection %d%s: %d bytes were waiting for it to read, over the "
            "limit of %d (max_unsent_bytes); it reads too slowly or not at all",
            self.conn_id,
            f" ({label})" if label else "",
            unsent,
            self.max_unsent,
        )
        self.writer.transport.abort()


class Edge:
    def __init__(
        self, paths: StatePaths, settings: Settings, version: str, stale_envs: list[Path]
    ) -> None:
        """``stale_envs``: the pool environments a dead daemon left, removed at start."""
        self.paths = paths
        self.settings = settings
        self._stale_envs = stale_envs
        self._envs_dir = str(environments.envs_dir(paths.root).resolve())
        started_at = round(time.time(), 6)
        self.identity = DaemonIdentity(os.getpid(), started_at, version, (os.getpid(), started_at))
        self.loop: asyncio.AbstractEventLoop | None = None
        self.connections: dict[int, Connection] = {}
        self.rooms: dict[str, Any] = {}
        self.pending: dict[Origin, Any] = {}
        self.pids: dict[int, tuple[str, str, float]] = {}
        self._conn_ids = itertools.count(1)
        self._started = asyncio.Event()
        self._stop_requested = asyncio.Event()
        self._stopped = asyncio.Event()
        self._host: ActorHost | None = None
        self._daemon_actor: Any = None
        self._serving: set[asyncio.Task] = set()

    # --- lifecycle ------------------------------------------------------------------------

    async def run(self) -> None:
        self.loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            self.loop.add_signal_handler(sig, self._stop_requested.set)
        self._workers = DetachedWorkers(MOST_THREADS, "offload")
        earlier = await asyncio.to_thread(alive_stamp.take_over, self.paths.root, self._run)
        self._envs = asyncio.create_task(self._prepare_envs(self._stale_envs))
        await asyncio.to_thread(self._sweep_leftovers, earlier)
        await self._start_actors(earlier)
        server = await asyncio.start_unix_server(self._serve, path=str(self.paths.socket))
        os.chmod(self.paths.socket, 0o600)
        self._socket_identity = _identity_of(self.paths.socket)
        heartbeat = asyncio.create_task(self._heartbeat())
        home = asyncio.create_task(self._watch_home())
        log.info("daemon ready on %s (pid %d)", self.paths.socket, self.identity.pid)
        self.loop.call_later(SPARE_UNUSED_SECS, self._discard_spare)
        await self._stop_requested.wait()
        log.info("daemon stopping")
        server.close()
        heartbeat.cancel()
        home.cancel()
        await self._stop_actors()
        await asyncio.to_thread(alive_stamp.touch, self.paths.root)
        for conn in list(self.connections.values()):
            conn.writer.close()
        for task in list(self._serving):
            task.cancel()
        await asyncio.gather(*self._serving, return_exceptions=True)
        if _identity_of(self.paths.socket) == self._socket_identity:
            self.paths.socket.unlink()

    async def _prepare_envs(self, stale: list[Path]) -> None:
        try:
            # On a detached worker: a stop never waits for a template build (uv) to end.
            await self.loop.run_in_executor(
                self._workers, environments.prepare_envs, self.paths.root, stale
            )
        except environments.EnvironmentUnavailable as exc:
            log.warning("no pool environment for kernels: %s", exc)

    def _sweep_leftovers(self, earlier: EarlierDaemon | None) -> None:
        """Blocking: what a killed predecessor's kernels left, as this daemon starts."""
        if earlier is not None:
            ended = end_orphans_of(earlier.run.pid)
            if ended:
                log.warning(
                    "ended %d processes the kernels of daemon %d left", len(ended), earlier.run.pid
                )
        swept = sweep_kernel_dir(self.paths.kernel_dir)
        if swept:
            log.info("removed %d files of kernels that no longer run", len(swept))

    def _discard_spare(self) -> None:
        self._spawn(asyncio.to_thread(SPARE.discard))

    def _spawn(self, work: Any) -> None:
        """Run ``work`` as a task the stop cancels and waits for."""
        start_kept(self._serving, work)

    @property
    def _run(self) -> DaemonRun:
        return DaemonRun(self.identity.pid, self.identity.started_at)

    async def _start_actors(self, earlier: EarlierDaemon | None) -> None:
        from nbstage.actors.daemon.actor import Daemon

        self._host = ActorHost(self._on_actor_message)
        self._offload = OffloadRunner(self._host.tell, self._workers)
        self._daemon_actor = self._host.create(Daemon)
        start = StartDaemon(
            str(self.paths.root), str(self.paths.kernel_dir), self.settings, self._run, earlier
        )
        self._host.tell(self._daemon_actor, start)
        await asyncio.wait_for(self._started.wait(), ACTOR_START_TIMEOUT)

    async def _stop_actors(self) -> None:
        self._host.tell(self._daemon_actor, StopDaemon())
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
        self._host.tell(self._daemon_actor, ActorExitRequest())
        self._host.close()
        await asyncio.to_thread(SPARE.discard)
        await asyncio.to_thread(self._kill_leftovers)
        await asyncio.to_thread(sweep_kernel_dir, self.paths.kernel_dir)

    def _kill_leftovers(self) -> None:
        """Last resort: SIGKILL any recorded kernel process still alive. A stop that went
        well finds none: each kernel's actor reported its process ended before its room
        closed."""
        for pid, (notebook_id, created) in self.pids.items():
            log.warning(
                "leftover kernel of %s (pid %d): no actor reported it ended", notebook_id, pid
            )
            with contextlib.suppress(psutil.Error):
                proc = psutil.Process(pid)
                if abs(proc.create_time() - created) < 1.0:
                    log.warning("killing the leftover kernel of %s (pid %d)", notebook_id, pid)
                    proc.kill()

    # --- messages from actors -------------------------------------------------------------

    def _on_actor_message(self, message: Any) -> None:
        match message:
            case RequestAnswered():
                self._answer(message)
            case RequestFailed(origin, code, text, notices):
                self._reply(origin, _error_frame(origin.request_id, code, text, notices))
            case RequestProgressed(origin, text):
                self._progress(origin, text)
            case RoomEventOccurred(kind, notebook_id, detail):
                self._broadcast(
                    {
                        "type": FrameKind.EVENT,
                        "event": {"kind": kind, "notebook_id": notebook_id, **detail},
                    }
                )
            case SharedDocPushed(conn_id, notebook_id, peer_id, messages):
                self._push_lab(conn_id, notebook_id, peer_id, messages)
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
                    self.loop.add_reader(fd, self._host.tell, owner, KernelIoReady())
            case UnwatchKernelSockets(fds):
                for fd in fds:
                    self.loop.remove_reader(fd)
            case DaemonStarted():
                self._started.set()
            case DaemonStopped():
                self._stopped.set()
            case _:
                log.warning("edge ignored %s", type(message).__name__)

    def _record_pid(self, notebook_id: str, pid: int) -> None:
        with contextlib.suppress(psutil.Error):
            self.pids[pid] = (notebook_id, psutil.Process(pid).create_time())

    def _answer(self, answered: RequestAnswered) -> None:
        origin = answered.origin
        request = self.pending.pop(origin, None)
        conn = self.connections.get(origin.conn)
        if isinstance(request, GetStatus):
            counts = from_wire(RoomCounts, answered.result())
            status = DaemonStatus(
                **asdict(self.identity),
                socket=str(self.paths.socket),
                state_dir=str(self.paths.root),
                envs_dir=self._envs_dir,
                **asdict(counts),
            )
            if conn is not None:
                conn.send(_result_frame(origin.request_id, status))
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

    def _push_lab(self, conn_id: int, notebook_id: str, peer_id: str, messages: list) -> None:
        conn = self.connections.get(conn_id)
        if conn is not None:
            frame = {"type": FrameKind.LAB, "notebook_id": notebook_id, "messages": messages}
            conn.send({"id": peer_id, **frame})

    def _progress(self, origin: Origin, message: str) -> None:
        """A ``progress`` frame for a request still pending; one answered gets none."""
        conn = self.connections.get(origin.conn)
        if conn is not None and origin in self.pending:
            conn.send(
                {"id": origin.request_id, "type": FrameKind.PROGRESS, "message": message[:2000]}
            )

    def _reply(self, origin: Origin, frame: dict[str, Any]) -> None:
        self.pending.pop(origin, None)
        conn = self.connections.get(origin.conn)
        if conn is not None:
            conn.send(frame)

    def _broadcast(self, payload: dict[str, Any]) -> None:
        for conn in self.connections.values():
            if conn.watch_id is not None:
                conn.send({"id": conn.watch_id, **payload})

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
            self._broadcast({"type": FrameKind.HEARTBEAT, **to_wire(Heartbeat(self.identity))})
            await asyncio.to_thread(alive_stamp.touch, self.paths.root)
            await asyncio.sleep(self.settings.heartbeat_secs)

    # --- client connections ---------------------------------------------------------------

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            check_peer(writer.get_extra_info("socket"), "the connecting process")
        except Untrusted as exc:
            log.warning("refused a connection: %s", exc)
            refusal = f"{exc}. This daemon serves its own user alone; closing the connection."
            frame = _error_frame(None, ErrorCode.BAD_REQUEST, refusal)
            writer.write(encode_frame({"v": WIRE_VERSION, **frame}))
            with contextlib.suppress(ConnectionError):
                await writer.drain()
            writer.close()
            return
        conn = Connection(next(self._conn_ids), writer, self.settings.max_unsent_bytes)
        self.connections[conn.conn_id] = conn
        self._serving.add(asyncio.current_task())
        try:
            while True:
                try:
                    frame = await read_frame(reader)
                except FrameError as exc:
                    conn.send(_error_frame(None, ErrorCode.BAD_FRAME, str(exc)))
                    break
                if frame is None:
                    break
                if not self._dispatch(conn, frame):
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
        address = self.rooms.get(notebook_id)
        if address is not None:
            origin = Origin(0, f"leave-{conn_id}-{peer_id}")
            self._host.tell(address, ClientRequest(origin, LeaveRoom(notebook_id, peer_id)))

    def _dispatch(self, conn: Connection, frame: dict[str, Any]) -> bool:
        """Route one request; False closes the connection (an unknown request type)."""
        request_id = frame["id"]
        try:
            request = decode_request(frame)
        except NbstageError as exc:
            conn.send(_error_frame(request_id, exc.code, exc.message))
            return exc.code is not ErrorCode.UNKNOWN_REQUEST
        origin = Origin(conn.conn_id, request_id, getattr(request, "preview", None))
        match request:
            case GetIdentity():
                conn.send(_result_frame(request_id, self.identity))
            case Watch(client):
                conn.watch_id = request_id
                conn.client = bounded_client(client)
                beat = Heartbeat(self.identity)
                conn.send({"id": request_id, "type": FrameKind.HEARTBEAT, **to_wire(beat)})
            case ListClients():
                clients = [c.client for c in self.connections.values() if c.client is not None]
                conn.send(_result_frame(request_id, ClientsListed(clients)))
            case GetLog(lines):
                self._spawn(self._send_log(conn, request_id, lines))
            case ShutdownDaemon():
                conn.send(_result_frame(request_id, DaemonStopping()))
                self._stop_requested.set()
            case _:
                self._route(origin, conn, request)
        return True

    async def _send_log(self, conn: Connection, request_id: Any, lines: int) -> None:
        entries = await asyncio.to_thread(read_log_tail, self.paths.logs, max(1, min(lines, 5000)))
        conn.send(_result_frame(request_id, LogTail(entries)))

    def _route(self, origin: Origin, conn: Connection, request: Any) -> None:
        notebook_id = getattr(request, "notebook_id", None)
        target = self._daemon_actor
        if notebook_id is not None and not isinstance(request, DAEMON_ANSWERS):
            target = self.rooms.get(notebook_id)
            if target is None:
                conn.send(
                    _error_frame(
                        origin.request_id,
                        ErrorCode.NOTEBOOK_UNAVAILABLE,
                        f"Notebook {notebook_id} is not open in the daemon; attach it first.",
                    )
                )
                return
        if isinstance(request, LeaveRoom):
            conn.peers.discard((request.notebook_id, request.peer_id))
        self.pending[origin] = request
        self._host.tell(target, ClientRequest(origin, request))


def _identity_of(path: Path) -> tuple[int, int] | None:
    try:
        info = os.lstat(path)
    except OSError:
        return None
    return info.st_dev, info.st_ino


def _error_frame(
    request_id: Any, code: ErrorCode, message: str, notices: tuple[Notice, ...] = ()
) -> dict[str, Any]:
    frame = {
        "id": request_id,
        "type": FrameKind.ERROR,
        "error": to_wire(DaemonRefused(code, message)),
    }
    if notices:
        frame["notices"] = [notice.to_json() for notice in notices]
    return frame


def too_large_frame(request_id: Any, size: int) -> bytes:
    """The small ``result_too_large`` error sent instead of a reply over the frame limit."""
    log.warning("a reply of %d bytes is over the frame limit; sent result_too_large", size)
    message = (
        f"The reply is {size:,} bytes, over the {MAX_FRAME_BYTES // (1024 * 1024)} MiB limit "
        "of one frame, so it was not sent. Ask for less: page with start and count, or "
        "leave outputs out."
    )
    frame = _error_frame(request_id, ErrorCode.RESULT_TOO_LARGE, message)
    try:
        return encode_frame({"v": WIRE_VERSION, **frame})
    except FrameTooLarge:
        return encode_frame({"v": WIRE_VERSION, **frame, "id": None})


def _result_frame(request_id: Any, reply: object) -> dict[str, Any]:
    return {"id": request_id, "type": FrameKind.RESULT, "result": to_wire(reply)}


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
