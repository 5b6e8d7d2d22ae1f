"""The `nbstage mcp` process's edge: stdio outside, the ProxySupervisor inside.

stdout carries MCP messages only. Before anything else starts, the real stdout
is kept on a private fd and fd 1 is pointed at stderr, so no stray print from
this process, its session child or a library can corrupt the stream; fd 0 is
likewise moved aside and replaced by /dev/null.

Lines from stdin are parsed here, and the MCP lifecycle (``lifecycle.py``)
runs here too: a line that is not JSON-RPC, initialize, ping, server/discover and
every refusal are answered at once. Admitted tools/list and tools/call go to the
ProxySupervisor actor, which runs in this process on the same loop.

The edge also carries out what the supervisor asks of the outside world: it starts
the session child process (``entrypoints/session/session_child.py``) with a socketpair for
typed frames, passes messages both ways, and reports the child's exit the moment
the process ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
import signal
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from nbstage.entrypoints.common.actor_host import ActorHost
from nbstage.entrypoints.common.held_writer import HeldWriter
from nbstage.entrypoints.common.kept_tasks import start_kept
from nbstage.entrypoints.common.statedir import StatePaths
from nbstage.entrypoints.mcp import child_start
from nbstage.entrypoints.mcp.child_start import ChildProcess
from nbstage.entrypoints.mcp.envelope import Answer, Dispatch, Reject, method_not_found
from nbstage.entrypoints.mcp.lifecycle import Lifecycle
from nbstage.protocol.common.safe_files import SMALL_FILE_BYTES, read_regular, write_private
from nbstage.protocol.common.version import VERSION
from nbstage.protocol.daemon.frames import FrameError
from nbstage.protocol.mcp import jsonrpc, mcp_apps
from nbstage.protocol.mcp.resources import RESOURCE_METHODS, resource_notice
from nbstage.protocol.mcp.subscriptions import LISTEN_METHOD
from nbstage.protocol.mcp.tool_results import tools_list_changed
from nbstage.protocol.session import session_frames
from nbstage.protocol.session.resource_messages import ResourceNoticeDue
from nbstage.protocol.session.supervision import (
    ChildProcessDied,
    FromSessionChild,
    McpMessageToSend,
    McpRequestAdmitted,
    McpRequestCancelled,
    McpResultToSend,
    StartSessionChild,
    StartSupervisor,
    StdinClosed,
    StopSessionChild,
    StopSessionManager,
    SupervisorStopped,
    ToolCacheChanged,
    ToolListChanged,
    ToSessionChild,
)

SUPERVISED_METHODS = frozenset({"tools/list", "tools/call", LISTEN_METHOD, *RESOURCE_METHODS})

log = logging.getLogger("nbstage.mcp")

MAX_LINE = 64 * 1024 * 1024
READ_CHUNK = 1024 * 1024
"""stdin is read up to a newline or about this much at a time; longer lines come in pieces."""
PIPE_SIZE = 1024 * 1024
"""Linux's default limit for a pipe an unprivileged process widens (fs.pipe-max-size)."""
STOP_MARGIN = 0.5
"""How much longer than its drain the edge waits for the supervisor to say it stopped."""
EOF_DRAIN_SECS = 1.5
"""At stdin's end, how long the calls in flight may take to be answered (SPEC §8: the
actors stop within 2 s); one still unanswered then is answered with an error."""
EOF_DRAIN_ENV = "NBSTAGE_EOF_DRAIN_SECS"
"""Sets another drain; the tests lengthen it to see an answer whatever the machine's speed."""
CHILD_STOP_GRACE = 1.0
TOOL_CACHE = "tool-cache.json"


def read_tool_cache(state_dir: Path) -> list[dict[str, Any]]:
    try:
        cached = orjson.loads(read_regular(state_dir / TOOL_CACHE, SMALL_FILE_BYTES)[0])
    except (OSError, orjson.JSONDecodeError):
        return []
    return cached if isinstance(cached, list) else []


def write_tool_cache(state_dir: Path, tools: list[dict[str, Any]]) -> None:
    """Replace tool-cache.json atomically; every client of the state dir may write it."""
    path = state_dir / TOOL_CACHE
    try:
        write_private(path, orjson.dumps(tools))
    except OSError:
        log.exception("could not write %s", path)


def _figure_files(state_dir: Path) -> int:
    """The figure_files setting; its default if the settings cannot be read (the daemon
    reports a bad config.toml when it starts)."""
    from nbstage.protocol.common.settings import Settings, load_settings

    try:
        return load_settings(state_dir).figure_files
    except Exception as exc:  # the daemon refuses such settings, and says why, at its start
        default = Settings().figure_files
        log.warning("settings not read, so figure_files is %d: %s", default, exc)
        return default


def eof_drain_secs() -> float:
    """EOF_DRAIN_SECS, or the drain ``NBSTAGE_EOF_DRAIN_SECS`` asks for."""
    asked = os.environ.get(EOF_DRAIN_ENV)
    if not asked:
        return EOF_DRAIN_SECS
    try:
        secs = float(asked)
    except ValueError:
        secs = -1.0
    if not 0 <= secs < float("inf"):
        log.warning(
            "%s=%r is not a number of seconds; draining %s s", EOF_DRAIN_ENV, asked, EOF_DRAIN_SECS
        )
        return EOF_DRAIN_SECS
    return secs


def widen_pipe(fd: int, size: int = PIPE_SIZE) -> None:
    """Let a pipe hold ``size`` bytes, so that a large answer is written in one go rather
    than in 64 kB turns with the client; anything but a pipe is left as it is."""
    with contextlib.suppress(OSError):
        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, size)


def claim_stdio() -> tuple[int, int]:
    """Take fds 0 and 1 for MCP alone; return (input fd, output fd)."""
    mcp_in = os.dup(0)
    mcp_out = os.dup(1)
    widen_pipe(mcp_out)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    return mcp_in, mcp_out


@dataclass
class SessionChild:
    """One generation's process and the edge's end of its socketpair."""

    generation: int
    process: ChildProcess | None = None
    out: HeldWriter = field(default_factory=HeldWriter)
    """Frames to the child; those sent before its socket was ready go out first."""
    stopping: bool = False


class McpEdge:
    def __init__(
        self,
        paths: StatePaths,
        label: str | None,
        rejoin_target: str | None,
        mcp_in: int,
        mcp_out: int,
        autostart: bool = True,
        no_daemon: str | None = None,
        await_fork_server: bool = False,
    ) -> None:
        """``await_fork_server``: another client is starting the daemon; the first child
        waits for its fork server rather than compete with its start (ADR 0009)."""
        self.paths = paths
        self.label = label
        self.rejoin_target = rejoin_target
        self.autostart = autostart
        self.no_daemon = no_daemon
        self._in = mcp_in
        self._out = os.fdopen(mcp_out, "wb", buffering=0)
        self.loop: asyncio.AbstractEventLoop | None = None
        self._host: ActorHost | None = None
        self._supervisor: Any = None
        self._stopped = asyncio.Event()
        self._at_eof = False
        self._supervisor_stopped = asyncio.Event()
        self.lifecycle = Lifecycle(version=VERSION)
        self._children: dict[int, SessionChild] = {}
        self._tasks: set[asyncio.Task] = set()
        self.await_fork_server = await_fork_server

    async def run(self) -> None:
        self.loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            self.loop.add_signal_handler(sig, self._stopped.set)
        from nbstage.actors.proxy.supervisor import ProxySupervisor

        self._host = ActorHost(self._on_actor_message)
        self._supervisor = self._host.create(ProxySupervisor)
        root = self.paths.root
        # Two small files, read before stdin is: nothing else waits on the loop yet, and no
        # executor thread is left idle for the client's whole life (SPEC §11).
        cached_tools, figure_files = read_tool_cache(root), _figure_files(root)
        start = StartSupervisor(
            str(self.paths.root),
            str(self.paths.socket),
            self.label,
            self.rejoin_target,
            os.getcwd(),
            os.getpid(),
            self.autostart,
            cached_tools,
            self.no_daemon,
            figure_files,
        )
        self._host.tell(self._supervisor, start)
        reader = asyncio.create_task(self._read_stdin())
        await self._stopped.wait()
        reader.cancel()
        self.lifecycle.close()
        await self._stop_actors(eof_drain_secs() if self._at_eof else 0.0)

    async def _stop_actors(self, drain_secs: float) -> None:
        self._host.tell(self._supervisor, StdinClosed(drain_secs))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._supervisor_stopped.wait(), drain_secs + STOP_MARGIN)
        children = [c.process for c in self._children.values() if c.process is not None]
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(
                asyncio.gather(*(p.wait() for p in children)), CHILD_STOP_GRACE * 2
            )
        for process in children:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
        self._host.close()

    # --- stdin ----------------------------------------------------------------------------

    async def _read_stdin(self) -> None:
        """Hand every non-blank stdin line to ``_on_line`` until EOF.

        The reader's limit is READ_CHUNK, so a long line arrives in pieces that are joined
        here. A line longer than MAX_LINE is answered as soon as that is known, with an
        error whose id is null (the line was never parsed), and the rest of it is dropped
        piece by piece up to its newline; the lines after it are read as usual.
        """
        reader = asyncio.StreamReader(limit=READ_CHUNK)
        pipe = os.fdopen(self._in, "rb", buffering=0)
        await self.loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), pipe)
        pieces: list[bytes] = []
        size = 0
        skipping = False
        at_eof = False
        while not at_eof:
            try:
                piece = await reader.readuntil(b"\n")
            except asyncio.LimitOverrunError as exc:
                # The first exc.consumed buffered bytes hold no newline: one piece.
                piece = await reader.readexactly(exc.consumed)
            except asyncio.IncompleteReadError as exc:
                piece, at_eof = exc.partial, True
            newline = piece.endswith(b"\n")
            if not skipping:
                pieces.append(piece)
                size += len(piece)
                if size - int(newline) > MAX_LINE:
                    skipping = True
                    pieces.clear()
                    log.warning("an input line exceeded %d bytes; skipping it", MAX_LINE)
                    message = (
                        f"Invalid request: the line exceeded the limit of {MAX_LINE} bytes "
                        f"({MAX_LINE // (1024 * 1024)} MiB) and is skipped up to its newline"
                    )
                    self._write(jsonrpc.ErrorResponse(None, jsonrpc.INVALID_REQUEST, message))
            if newline or at_eof:
                line = pieces[0] if len(pieces) == 1 else b"".join(pieces)
                if line and not line.isspace():
                    self._on_line(line)
                pieces.clear()
                size = 0
                skipping = False
        self._at_eof = True
        self._stopped.set()

    def _on_line(self, line: bytes) -> None:
        try:
            message = jsonrpc.parse_line(line)
        except jsonrpc.JsonRpcError as exc:
            self._write(exc.to_response())
            return
        if isinstance(message, jsonrpc.Notification):
            cancelled = message.method == "notifications/cancelled"
            if self.lifecycle.notice(message) and cancelled:
                self._to_supervisor(McpRequestCancelled((message.params or {}).get("requestId")))
        elif isinstance(message, jsonrpc.Request):
            self._admit(message)

    def _admit(self, request: jsonrpc.Request) -> None:
        admission = self.lifecycle.admit(request)
        match admission:
            case Answer() | Reject():
                self._write(admission.response(request.id))
            case Dispatch() if request.method in SUPERVISED_METHODS:
                label = self.lifecycle.client_label
                apps = mcp_apps.client_takes_apps(admission.client_capabilities)
                admitted = McpRequestAdmitted(
                    request, admission.version, admission.progress_token, label, apps
                )
                self._to_supervisor(admitted)
            case Dispatch():
                self._write(method_not_found(request.method).response(request.id))

    def _to_supervisor(self, message: Any) -> None:
        self._host.tell(self._supervisor, message)

    def _write(self, message: Any) -> None:
        self._write_line(jsonrpc.encode(message))

    def _write_line(self, data: bytes) -> None:
        self._out.write(data)

    # --- from the actors ------------------------------------------------------------------

    def _on_actor_message(self, message: Any) -> None:
        match message:
            case McpMessageToSend(payload):
                self._write(payload)
            case McpResultToSend(request_id, result_json):
                self._write_line(jsonrpc.encode_response(request_id, result_json))
            case ToSessionChild(generation, payload):
                self._send_to_child(generation, payload)
            case StartSessionChild(generation):
                child = SessionChild(generation)
                self._children[generation] = child
                self._spawn(self._run_child(child))
            case StopSessionChild(generation):
                self._stop_child(generation)
            case SupervisorStopped():
                self._supervisor_stopped.set()
            case ToolCacheChanged(tools):
                # a thread of its own that ends with the write (the process waits for it)
                args = (self.paths.root, tools)
                threading.Thread(target=write_tool_cache, args=args, name="tool-cache").start()
            case ToolListChanged() if self.lifecycle.may_send_list_changed:
                self._write(tools_list_changed())
            case ToolListChanged():
                pass
            case ResourceNoticeDue(uri) if self.lifecycle.may_send_list_changed:
                notice = resource_notice(uri)
                self._write(notice)
            case ResourceNoticeDue():
                pass
            case _:
                log.warning("mcp edge ignored %s", type(message).__name__)

    def _spawn(self, work: Any) -> None:
        start_kept(self._tasks, work)

    # --- the session child ----------------------------------------------------------------

    async def _run_child(self, child: SessionChild) -> None:
        """Start one generation's process, relay its frames, and report its exit."""
        waits, self.await_fork_server = self.await_fork_server, False
        started = await child_start.start(self.paths, waits)
        if started is None:
            self._children.pop(child.generation, None)
            self._to_supervisor(ChildProcessDied(None, child.generation, None))
            return
        child.process, ours = started
        reader, writer = await asyncio.open_unix_connection(sock=ours)
        child.out.attach(writer)
        if child.stopping:
            self._stop_child(child.generation)
        try:
            while (message := await session_frames.read(reader)) is not None:
                self._to_supervisor(FromSessionChild(child.generation, message))
        except (FrameError, ConnectionError) as exc:
            log.warning("session child %d: %s", child.generation, exc)
        child.out.close()
        code = await self._reap(child.process)
        self._children.pop(child.generation, None)
        self._to_supervisor(ChildProcessDied(child.process.pid, child.generation, code))

    async def _reap(self, process: ChildProcess) -> int:
        try:
            return await asyncio.wait_for(process.wait(), CHILD_STOP_GRACE)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            return await process.wait()

    def _send_to_child(self, generation: int, message: Any) -> None:
        child = self._children.get(generation)
        if child is None or child.stopping:
            return
        child.out.write(session_frames.encode(message))

    def _stop_child(self, generation: int) -> None:
        """Ask the child to stop; its socket closing then ends ``_run_child``, which kills
        a child that has not exited within the grace period."""
        child = self._children.get(generation)
        if child is None:
            return
        child.stopping = True
        if child.out.writer is not None:
            child.out.write(session_frames.encode(StopSessionManager()))
            child.out.close()
