"""The ProxySupervisor actor: one MCP client's connection, kept alive across child restarts.

The stdio edge runs the MCP lifecycle (initialize, ping, server/discover), so a client
is answered before any actor process has spawned; it hands this actor every admitted
tools/list and tools/call. The supervisor answers tools/list itself, from the child's
live list, the tool cache or the built-in list, and forwards tools/call to the
SessionManager in its session child process with an idempotency key. When the child
dies it restarts it (restart_policy.py decides when), retries the calls that were in
flight once, and hands the new child the restart target (restart_target.py) so the
notebook is rejoined.

The child is a process the edge starts, talks to and watches on this actor's behalf
(StartSessionChild, ToSessionChild, StopSessionChild); what the child says comes back
as FromSessionChild, tagged with its generation, so a replaced child is never heard.
"""

from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from thespian.actors import ActorAddress, WakeupMessage

from nbstage.actors.common.base import NbActor
from nbstage.actors.proxy import restart_policy, restart_target
from nbstage.protocol.common.errors import NbstageError
from nbstage.protocol.common.labels import fitted_label
from nbstage.protocol.common.version import VERSION
from nbstage.protocol.daemon.notices import Notice, NoticeKind, with_notices
from nbstage.protocol.mcp import jsonrpc, tools
from nbstage.protocol.mcp import lifecycle as mcp
from nbstage.protocol.mcp.lifecycle import is_modern_version
from nbstage.protocol.mcp.tool_names import ToolName
from nbstage.protocol.session.supervision import (
    HANDOFF_EXIT_CODE,
    ActiveSessionChanged,
    ChildProcessDied,
    FromSessionChild,
    HandoffRequested,
    McpMessageToSend,
    McpRequestAdmitted,
    McpRequestCancelled,
    McpResultToSend,
    RestartTargetChanged,
    SessionConfig,
    SessionManagerReady,
    StartSessionChild,
    StartSupervisor,
    StdinClosed,
    StopSessionChild,
    SupervisorStopped,
    ToolCacheChanged,
    ToolCallCancelled,
    ToolCallFinished,
    ToolCallProgressed,
    ToolCallRequested,
    ToolListChanged,
    ToSessionChild,
)
from nbstage.protocol.session.supervisor_followups import (
    CallWaitExpired,
    DrainOver,
    ProgressDue,
    RestartDue,
)

log = logging.getLogger("nbstage.supervisor")

PROGRESS_EVERY = timedelta(seconds=4)
CALL_WAIT_LIMIT = timedelta(seconds=30)
KERNEL_RENEWED_BY_UPGRADE = Notice(
    NoticeKind.KERNEL_RENEWED,
    "The upgraded daemon reopens the notebook with a new kernel: variables from before are "
    "gone; run the cells you need again.",
)


_CATALOGUED = frozenset(ToolName) & frozenset(tools.TOOLS_BY_NAME)
"""The names a call may give: a tool with a name and a description (a test checks that
every tool has both)."""


def _argument_refusal(name: ToolName, arguments: object) -> str | None:
    """Arguments refused before they reach the session child: any nested too deep, and
    any for reconnect, which the supervisor carries out itself."""
    if tools.nested_deeper_than(arguments, tools.MAX_ARGUMENT_DEPTH):
        return (
            f"Invalid arguments for {name}: nested more than {tools.MAX_ARGUMENT_DEPTH} "
            "levels deep."
        )
    if name == ToolName.RECONNECT:
        try:
            tools.TOOLS_BY_NAME[name].parse(arguments)
        except NbstageError as exc:
            return f"Invalid arguments for reconnect: {exc.message}"
    return None


def _id_key(request_id: Any) -> str:
    """JSON-RPC ids 1 and "1" are different requests, so keys keep the type."""
    return f"{type(request_id).__name__}:{request_id}"


@dataclass
class PendingCall:
    request_id: Any
    name: ToolName
    arguments: Any
    key: str
    version: str
    progress_token: Any
    attempts: int = 0
    sent_to: int | None = None
    """The child generation it was sent to, or None while it waits for a child."""
    started: float = field(default_factory=time.monotonic)
    progress_sent: int = 0
    """Progress notifications sent for it; each one's value is the next count."""


class ProxySupervisor(NbActor):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.config: StartSupervisor | None = None
        self.server_info: dict[str, Any] = {}
        self.client_label: str | None = None
        self.entrypoint = uuid.uuid4().hex[:8]
        self.child: int | None = None
        """The generation of the live child process, or None while there is none."""
        self.generation = 0
        self.ready = False
        self.configured = False
        self.warming = False
        """A successor process started early is waiting out the backoff, unconfigured."""
        self.restart = restart_policy.RestartState()
        self.target = restart_target.RestartTarget()
        self.calls: dict[str, PendingCall] = {}
        self.tools: list[dict[str, Any]] = []
        self.cached_tools: list[dict[str, Any]] = []
        self.banner: tuple[Notice, ...] = ()
        self.handoff_to: tuple[str, str] | None = None
        self.draining = False
        """stdin has ended: the process stops once the calls in flight are answered."""
        self.stopped = False

    # --- start and stop -------------------------------------------------------------------

    def receiveMsg_StartSupervisor(self, msg: StartSupervisor, sender: ActorAddress) -> None:
        self.config = msg
        self.edge = sender
        self.server_info = {"name": "nbstage", "version": VERSION}
        self.target = restart_target.RestartTarget(msg.rejoin_target, None)
        self.cached_tools = msg.cached_tools
        self.tools = self.cached_tools or tools.builtin_tool_list()
        if msg.no_daemon is None:
            self._start_child()

    def receiveMsg_StdinClosed(self, msg: StdinClosed, sender: ActorAddress) -> None:
        if msg.drain_secs > 0 and self.calls:
            self.draining = True
            self.wakeupAfter(timedelta(seconds=msg.drain_secs), payload=DrainOver())
            return
        self._stop()

    def _stop(self) -> None:
        if self.stopped:
            return
        self.stopped = True
        self._stop_child()
        self.send(self.edge, SupervisorStopped())

    def receiveMessage(self, msg: Any, sender: ActorAddress) -> None:
        """Whatever answers or drops the last call in flight after stdin's end (an answer,
        a cancel, a wait that ran out, a crash that gives up) lets the process stop."""
        super().receiveMessage(msg, sender)
        if self.draining and not self.calls:
            self._stop()

    # --- MCP messages ---------------------------------------------------------------------

    def _send_mcp(self, message: Any) -> None:
        self.send(self.edge, McpMessageToSend(message))

    def receiveMsg_McpRequestAdmitted(self, msg: McpRequestAdmitted, sender: ActorAddress) -> None:
        request = msg.request
        self.client_label = self.client_label or msg.client_label
        if self.child is not None and not self.configured and not self.warming:
            self._configure_child()
        if request.method == "tools/list":
            result = self._decorate({"tools": self.tools}, msg.version, "tools/list")
            self._send_mcp(jsonrpc.Response(request.id, result))
        else:
            self._tool_call(request, msg)

    def receiveMsg_McpRequestCancelled(
        self, msg: McpRequestCancelled, sender: ActorAddress
    ) -> None:
        self._cancel(msg.request_id)

    def _decorate(self, result: dict[str, Any], version: str, method: str) -> dict[str, Any]:
        return mcp.decorate_result(
            result, version=version, method=method, server_info=self.server_info
        )

    def _tool_call(self, request: jsonrpc.Request, dispatch: McpRequestAdmitted) -> None:
        params = request.params or {}
        if not isinstance(params, dict):
            error = jsonrpc.ErrorResponse(
                request.id, jsonrpc.INVALID_PARAMS, "tools/call params must be an object"
            )
            self._send_mcp(error)
            return
        asked = params.get("name")
        if not isinstance(asked, str) or asked not in _CATALOGUED:
            error = jsonrpc.ErrorResponse(
                request.id, jsonrpc.INVALID_PARAMS, f"Unknown tool: {asked}"
            )
            self._send_mcp(error)
            return
        name = ToolName(asked)
        arguments = params.get("arguments")
        refusal = _argument_refusal(name, arguments)
        if refusal is not None:
            result = self._decorate(mcp.tool_error(refusal), dispatch.version, "tools/call")
            self._send_mcp(jsonrpc.Response(request.id, result))
            return
        call = PendingCall(
            request.id,
            name,
            arguments,
            f"{self.entrypoint}:{_id_key(request.id)}",
            dispatch.version,
            dispatch.progress_token,
        )
        call_id = _id_key(request.id)
        if self.config.no_daemon is not None:
            self._reply(call_id, call, mcp.tool_error(self.config.no_daemon))
            return
        if name is ToolName.RECONNECT:
            self._reconnect(call_id, call)
            return
        if restart_policy.circuit_is_open(self.restart, time.monotonic()):
            self._reply(call_id, call, mcp.tool_error(self._circuit_message()))
            return
        self.calls[call_id] = call
        if call.progress_token is not None:
            self.wakeupAfter(PROGRESS_EVERY, payload=ProgressDue(call_id))
        self._forward(call_id, call)

    def _forward(self, call_id: str, call: PendingCall) -> None:
        if not self.ready:
            self.wakeupAfter(CALL_WAIT_LIMIT, payload=CallWaitExpired(call_id))
            return
        call.attempts += 1
        call.sent_to = self.generation
        self._to_child(ToolCallRequested(call_id, call.name, call.arguments, call.key))

    def _cancel(self, request_id: Any) -> None:
        call_id = _id_key(request_id)
        call = self.calls.pop(call_id, None)
        if call is not None and self.child is not None:
            self._to_child(ToolCallCancelled(call_id))

    def _to_child(self, message: Any) -> None:
        self.send(self.edge, ToSessionChild(self.generation, message))

    def _stop_child(self) -> None:
        if self.child is not None:
            self.send(self.edge, StopSessionChild(self.child))
            self.child = None

    def receiveMsg_FromSessionChild(self, msg: FromSessionChild, sender: ActorAddress) -> None:
        if msg.generation != self.child:
            # A replaced child's late word: its calls were requeued for its successor,
            # which answers them under the same idempotency keys (and gets the banner).
            return
        handler = getattr(self, f"_child_{type(msg.message).__name__}", None)
        if handler is None:
            log.warning("the session child sent an unexpected %s", type(msg.message).__name__)
            return
        handler(msg.message)

    def _child_ActiveSessionChanged(self, msg: ActiveSessionChanged) -> None:
        self.target = restart_target.active_changed(self.target, msg.notebook_id, msg.path)

    def _child_RestartTargetChanged(self, msg: RestartTargetChanged) -> None:
        self.target = restart_target.after_change(self.target, msg)

    def _progress(self, call: PendingCall, message: str) -> None:
        call.progress_sent += 1
        notification = mcp.progress_notification(
            call.progress_token, call.progress_sent, message=message
        )
        self._send_mcp(notification)

    def _child_ToolCallProgressed(self, msg: ToolCallProgressed) -> None:
        call = self.calls.get(msg.call_id)
        if call is not None and call.progress_token is not None and call.sent_to == self.generation:
            self._progress(call, msg.message)

    def _child_ToolCallFinished(self, msg: ToolCallFinished) -> None:
        call = self.calls.get(msg.call_id)
        if call is None or call.sent_to != self.generation:
            return
        del self.calls[msg.call_id]
        if not self.banner and not is_modern_version(call.version):
            self.send(self.edge, McpResultToSend(call.request_id, msg.result_json))
        else:
            self._reply(msg.call_id, call, msg.result())

    def _reply(self, call_id: str, call: PendingCall, result: dict[str, Any]) -> None:
        result = with_notices(result, self.banner)
        self.banner = ()
        decorated = self._decorate(result, call.version, "tools/call")
        self._send_mcp(jsonrpc.Response(call.request_id, decorated))

    # --- the child ------------------------------------------------------------------------

    def _start_child(self, configure: bool = True) -> None:
        self.generation += 1
        self.ready = False
        self.warming = False
        self.child = self.generation
        self.configured = False
        self.send(self.edge, StartSessionChild(self.generation))
        if configure and (self.config.label or self.client_label):
            self._configure_child()

    def _configure_child(self) -> None:
        """The child's first message; it waits for the client's label (from initialize)."""
        self.configured = True
        label = fitted_label(self.config.label or self.client_label or "agent")
        config = SessionConfig(
            self.config.state_dir,
            self.config.socket_path,
            label,
            f"agent::{label}",
            self.config.cwd,
            self.target.value,
            self.config.supervisor_pid,
            self.restart.restarts,
            self.generation,
            self.config.autostart,
            self.config.figure_files,
        )
        self._to_child(config)

    def _child_SessionManagerReady(self, msg: SessionManagerReady) -> None:
        self.ready = True
        self.restart = restart_policy.child_ready(self.restart)
        self._refresh_tools(msg.tools)
        for call_id, call in list(self.calls.items()):
            if call.sent_to is None:
                self._forward(call_id, call)

    def _refresh_tools(self, live: list[dict[str, Any]]) -> None:
        """Adopt the child's tool list; persist it (never an empty one) and announce a change."""
        if not live:
            return
        changed = live != self.tools
        self.tools = live
        if live != self.cached_tools:
            self.send(self.edge, ToolCacheChanged(live))
            self.cached_tools = live
        if changed:
            self.send(self.edge, ToolListChanged())

    def _child_lost(self, generation: int, why: str) -> None:
        if generation != self.generation or self.child is None:
            return
        log.warning("session manager generation %d lost: %s", generation, why)
        was_serving = self.ready
        self.child = None
        self.ready = False
        self._requeue_or_fail_calls()
        self.restart, decision = restart_policy.child_crashed(self.restart, time.monotonic())
        if was_serving and isinstance(decision, restart_policy.RestartAfter):
            # The successor's process starts now and waits out the backoff unconfigured, so
            # Python's start-up overlaps the backoff. A child that never served waits first.
            self._start_child(configure=False)
            self.warming = True
        self._plan_restart(
            decision, Notice(NoticeKind.SESSION_RESTARTED, "Session server restarted")
        )

    def _requeue_or_fail_calls(self) -> None:
        """Calls in flight on the dead child are retried once, with the same key."""
        for call_id, call in list(self.calls.items()):
            if call.sent_to is None:
                continue
            if call.attempts >= 2:
                del self.calls[call_id]
                message = "The session server crashed twice while running this call; not retried."
                self._reply(call_id, call, mcp.tool_error(message))
            else:
                call.sent_to = None

    def _plan_restart(
        self,
        decision: restart_policy.Decision,
        banner: Notice,
        when_rejoining: Notice | None = None,
    ) -> None:
        """The banner opens the next result; ``when_rejoining`` follows it if a notebook is
        to be rejoined."""
        rejoining = bool(self.target.value)
        if rejoining:
            banner = Notice(banner.kind, banner.message + ", rejoin requested", banner.next_call)
        self.banner = (banner, when_rejoining) if rejoining and when_rejoining else (banner,)
        match decision:
            case restart_policy.RestartAfter(delay):
                self.wakeupAfter(timedelta(seconds=delay), payload=RestartDue(self.generation))
            case restart_policy.OpenCircuit(until):
                for call_id, call in list(self.calls.items()):
                    del self.calls[call_id]
                    self._reply(call_id, call, mcp.tool_error(self._circuit_message()))
                delay = max(0.0, until - time.monotonic())
                self.wakeupAfter(timedelta(seconds=delay), payload=RestartDue(self.generation))

    def _circuit_message(self) -> str:
        until = self.restart.circuit_open_until or time.monotonic()
        wait = max(0, round(until - time.monotonic()))
        return (
            f"The nbstage session server crashed {len(self.restart.crashes)} times in "
            f"{restart_policy.DEFAULT_POLICY.window_secs:.0f} s, so restarts are paused "
            f"(circuit open). It retries by itself in {wait} s; call reconnect() to "
            "retry now."
        )

    def receiveMsg_ChildProcessDied(self, msg: ChildProcessDied, sender: ActorAddress) -> None:
        if msg.generation != self.child:
            return
        if msg.exit_code == HANDOFF_EXIT_CODE:
            self._hand_off(
                Notice(
                    NoticeKind.SESSION_RESTARTED, "Session server handed off to the installed code"
                )
            )
        else:
            self._child_lost(msg.generation, f"process {msg.pid} exited ({msg.exit_code})")

    def _child_HandoffRequested(self, msg: HandoffRequested) -> None:
        self._hand_off(
            Notice(
                NoticeKind.DAEMON_UPGRADED,
                f"Daemon upgraded ({msg.from_version} → {msg.to_version})",
            ),
            KERNEL_RENEWED_BY_UPGRADE,
        )

    def _hand_off(self, banner: Notice, when_rejoining: Notice | None = None) -> None:
        self._stop_child()
        self.ready = False
        self._requeue_or_fail_calls()
        self.restart, decision = restart_policy.handoff(self.restart)
        self._plan_restart(decision, banner, when_rejoining)

    def _reconnect(self, call_id: str, call: PendingCall) -> None:
        self._stop_child()
        self.ready = False
        self._requeue_or_fail_calls()
        self.restart, _ = restart_policy.reconnect(self.restart)
        self._start_child()
        structured = {"restarted": True, "restarts": self.restart.restarts}
        self._reply(call_id, call, mcp.tool_result(structured, text="Session server restarted."))

    def receiveMsg_WakeupMessage(self, msg: WakeupMessage, sender: ActorAddress) -> None:
        if self.stopped:
            return
        match msg.payload:
            case DrainOver():
                self._stop()
            case RestartDue(generation) if generation == self.generation and self.child is None:
                self._start_child()
            case RestartDue(generation) if generation == self.generation and not self.configured:
                self.warming = False
                self._configure_child()
            case ProgressDue(call_id) if call_id in self.calls:
                call = self.calls[call_id]
                elapsed = time.monotonic() - call.started
                self._progress(call, f"{call.name} still running after {elapsed:.0f} s")
                self.wakeupAfter(PROGRESS_EVERY, payload=ProgressDue(call_id))
            case CallWaitExpired(call_id) if call_id in self.calls:
                call = self.calls[call_id]
                if call.sent_to is None:
                    del self.calls[call_id]
                    message = "The nbstage session server did not come back in time; try again."
                    self._reply(call_id, call, mcp.tool_error(message))
