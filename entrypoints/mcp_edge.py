"""The `nbstage mcp` process's edge: stdio outside, the ProxySupervisor inside.

stdout carries MCP messages only. Before anything else starts, the real stdout
is kept on a private fd and fd 1 is pointed at stderr, so no stray print from
this process, an actor or a library can corrupt the stream; fd 0 is likewise
moved aside and replaced by /dev/null.

Lines from stdin are parsed here, and the MCP lifecycle (protocol.mcp.Lifecycle)
runs here too: a line that is not JSON-RPC, initialize, ping, server/discover and
every refusal are answered at once, before any actor process exists (spawning the
actor system takes about a second). Admitted tools/list and tools/call requests go
to the ProxySupervisor actor, buffered until it is up. The edge also gives
the supervisor a fast death signal for its child: a pidfd on the SessionManager
process, which fires in milliseconds where thespian's own notice takes seconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import threading
from importlib.metadata import version as package_version
from typing import Any

from nbstage.entrypoints.actor_system import ActorBridge, start_actor_system
from nbstage.entrypoints.statedir import StatePaths
from nbstage.protocol import jsonrpc, mcp
from nbstage.protocol.supervision import (
    ChildProcessDied,
    McpMessageToSend,
    McpRequestAdmitted,
    McpRequestCancelled,
    McpResultToSend,
    StartSupervisor,
    StdinClosed,
    SupervisorStopped,
    ToolListChanged,
    WatchChildPid,
)

SUPERVISED_METHODS = ("tools/list", "tools/call")

log = logging.getLogger("nbstage.mcp")

MAX_LINE = 64 * 1024 * 1024
STOP_TIMEOUT = 2.0


def claim_stdio() -> tuple[int, int]:
    """Take fds 0 and 1 for MCP alone; return (input fd, output fd)."""
    mcp_in = os.dup(0)
    mcp_out = os.dup(1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    return mcp_in, mcp_out


class McpEdge:
    def __init__(
        self,
        paths: StatePaths,
        label: str | None,
        rejoin_target: str | None,
        mcp_in: int,
        mcp_out: int,
    ) -> None:
        self.paths = paths
        self.label = label
        self.rejoin_target = rejoin_target
        self._in = mcp_in
        self._out = os.fdopen(mcp_out, "wb", buffering=0)
        self._write_lock = threading.Lock()
        self.loop: asyncio.AbstractEventLoop | None = None
        self._bridge: ActorBridge | None = None
        self._system: Any = None
        self._supervisor: Any = None
        self._stopped = asyncio.Event()
        self._supervisor_stopped = asyncio.Event()
        self.lifecycle = mcp.Lifecycle(version=package_version("nbstage"))
        self._early: list[Any] = []
        """Messages for the supervisor that arrived before it existed."""
        self._child_fds: dict[int, int] = {}
        self._child_pids: set[int] = set()

    async def run(self) -> None:
        self.loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            self.loop.add_signal_handler(sig, self._stopped.set)
        reader = asyncio.create_task(self._read_stdin())
        await self._start_actors()
        for message in self._early:
            self._bridge.tell(self._supervisor, message)
        self._early = []
        await self._stopped.wait()
        reader.cancel()
        self.lifecycle.close()
        await self._stop_actors()

    async def _start_actors(self) -> None:
        from nbstage.actors.supervisor import ProxySupervisor

        self._system = await asyncio.to_thread(start_actor_system, self.paths.logs)
        self._supervisor = await asyncio.to_thread(self._system.createActor, ProxySupervisor)
        self._bridge = ActorBridge(self._system, self._from_actor)
        start = StartSupervisor(
            str(self.paths.root),
            str(self.paths.socket),
            self.label,
            self.rejoin_target,
            os.getcwd(),
            os.getpid(),
        )
        self._bridge.start(self._supervisor, start)

    async def _stop_actors(self) -> None:
        self._bridge.tell(self._supervisor, StdinClosed())
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._supervisor_stopped.wait(), STOP_TIMEOUT)
        self._bridge.stop()
        await asyncio.to_thread(self._system.shutdown)
        for fd in self._child_fds.values():
            os.close(fd)
        for pid in self._child_pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, 9)

    # --- stdin ----------------------------------------------------------------------------

    async def _read_stdin(self) -> None:
        reader = asyncio.StreamReader(limit=MAX_LINE)
        pipe = os.fdopen(self._in, "rb", buffering=0)
        await self.loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), pipe)
        try:
            while line := await reader.readline():
                if line.strip():
                    self._on_line(line)
        except (ValueError, asyncio.LimitOverrunError):
            log.error("an input line exceeded %d bytes; closing", MAX_LINE)
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
            case mcp.Answer() | mcp.Reject():
                self._write(admission.response(request.id))
            case mcp.Dispatch() if request.method in SUPERVISED_METHODS:
                label = self.lifecycle.client_label
                admitted = McpRequestAdmitted(
                    request, admission.version, admission.progress_token, label
                )
                self._to_supervisor(admitted)
            case mcp.Dispatch():
                self._write(mcp.method_not_found(request.method).response(request.id))

    def _to_supervisor(self, message: Any) -> None:
        if self._bridge is None:
            self._early.append(message)
        else:
            self._bridge.tell(self._supervisor, message)

    def _write(self, message: Any) -> None:
        self._write_line(jsonrpc.encode(message))

    def _write_line(self, data: bytes) -> None:
        with self._write_lock:
            self._out.write(data)

    # --- from the actors ------------------------------------------------------------------

    def _from_actor(self, message: Any) -> None:
        if isinstance(message, McpMessageToSend):
            self._write(message.message)
        elif isinstance(message, McpResultToSend):
            self._write_line(jsonrpc.encode_response(message.request_id, message.result_json))
        else:
            self.loop.call_soon_threadsafe(self._on_actor_message, message)

    def _on_actor_message(self, message: Any) -> None:
        match message:
            case WatchChildPid(pid, generation):
                self._watch(pid, generation)
            case SupervisorStopped():
                self._supervisor_stopped.set()
            case ToolListChanged() if self.lifecycle.may_send_list_changed:
                self._write(mcp.tools_list_changed())
            case _:
                log.warning("mcp edge ignored %s", type(message).__name__)

    def _watch(self, pid: int, generation: int) -> None:
        try:
            fd = os.pidfd_open(pid)
        except ProcessLookupError:
            self._bridge.tell(self._supervisor, ChildProcessDied(pid, generation))
            return
        self._child_fds[pid] = fd
        self._child_pids.add(pid)

        def died() -> None:
            self.loop.remove_reader(fd)
            os.close(self._child_fds.pop(pid))
            self._child_pids.discard(pid)
            self._bridge.tell(self._supervisor, ChildProcessDied(pid, generation))

        self.loop.add_reader(fd, died)
