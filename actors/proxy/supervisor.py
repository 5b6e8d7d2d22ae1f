"""The ProxySupervisor actor: one MCP client's connection, kept alive across child restarts.

The stdio edge runs the MCP lifecycle (initialize, ping, server/discover), so a client
is answered before any actor process has spawned; it hands this actor every admitted
tools/list and tools/call. The supervisor answers tools/list itself, from the child's
live list, the tool cache or the built-in list, and forwards tools/call to the
SessionManager in its session child process with an idempotency key. When the child
dies it restarts it (restart_policy.py decides when), retries the calls that were in
flight once, and hands the new child the restart target (restart_target.py) so the
notebook is rejoined.

The tools/call traffic (call_forwarding.py) and a child that goes away (child_restarts.py)
are handlers beside it that act through the supervisor; both answer a call through its
``_reply``, so the second needs nothing from the first.

The child is a process the edge starts, talks to and watches on this actor's behalf
(StartSessionChild, ToSessionChild, StopSessionChild); what the child says comes back
as FromSessionChild, tagged with its generation, so a replaced child is never heard.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from datetime import timedelta
from functools import partial
from typing import Any

from thespian.actors import ActorAddress

from nbstage.actors.common.base import Key, NbActor, wakeup
from nbstage.actors.proxy import (
    call_forwarding,
    child_restarts,
    restart_notices,
    restart_policy,
    restart_target,
)
from nbstage.actors.proxy.child_slot import ChildSlot, session_config
from nbstage.actors.proxy.listen_streams import ListenStreams
from nbstage.actors.proxy.resource_calls import ResourceDesk, SupervisorOutbox
from nbstage.actors.proxy.tool_calls import PendingCall, id_key
from nbstage.actors.proxy.tool_list import ToolList
from nbstage.protocol.common.version import VERSION
from nbstage.protocol.daemon.notices import Notice, with_notices
from nbstage.protocol.mcp import jsonrpc, page_links
from nbstage.protocol.mcp.resources import RESOURCE_METHODS
from nbstage.protocol.mcp.subscriptions import LISTEN_METHOD, Change
from nbstage.protocol.mcp.tool_results import tool_error
from nbstage.protocol.mcp.versions import decorate_result
from nbstage.protocol.session.resource_messages import (
    ResourceAnswered,
    ResourceListChanged,
    ResourceRefused,
    ResourceUpdated,
    ResourceWaitExpired,
)
from nbstage.protocol.session.supervision import (
    ActiveSessionChanged,
    ChildProcessDied,
    FromSessionChild,
    HandoffRequested,
    McpMessageToSend,
    McpRequestAdmitted,
    McpRequestCancelled,
    RestartTargetChanged,
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


def from_child(kind: type) -> Key:
    """The key of what the session child said, by its type: handler(message)."""
    return (FromSessionChild, kind)


class ProxySupervisor(NbActor):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.config: StartSupervisor | None = None
        self.server_info: dict[str, Any] = {}
        self.client_label: str | None = None
        self.entrypoint = uuid.uuid4().hex[:8]
        self.slot = ChildSlot()
        self.restart = restart_policy.RestartState()
        self.target = restart_target.RestartTarget()
        self.calls: dict[str, PendingCall] = {}
        self.tools = ToolList()
        outbox = SupervisorOutbox(self, call_forwarding.CALL_WAIT_LIMIT)
        self.listens = ListenStreams(outbox)
        self.resources = ResourceDesk(outbox, self.listens)
        self.banner: tuple[Notice, ...] = ()
        self.draining = False
        """stdin has ended: the process stops once the calls in flight are answered."""
        self.stopped = False

    def handlers(self) -> dict[Key, Callable[..., None]]:
        return {
            StartSupervisor: self._start,
            StdinClosed: self._stdin_closed,
            McpRequestAdmitted: self._admitted,
            McpRequestCancelled: lambda msg, sender: self._cancel(msg.request_id),
            FromSessionChild: self._from_child,
            ChildProcessDied: partial(child_restarts.child_died, self),
            from_child(SessionManagerReady): self._child_ready,
            from_child(ActiveSessionChanged): self._active_changed,
            from_child(RestartTargetChanged): self._restart_target_changed,
            from_child(ToolCallProgressed): partial(call_forwarding.call_progressed, self),
            from_child(ToolCallFinished): partial(call_forwarding.call_finished, self),
            from_child(HandoffRequested): partial(child_restarts.handoff_requested, self),
            wakeup(DrainOver): self._drain_over,
            wakeup(RestartDue): partial(child_restarts.restart_due, self),
            wakeup(ProgressDue): partial(call_forwarding.progress_due, self),
            wakeup(CallWaitExpired): partial(call_forwarding.call_wait_expired, self),
            from_child(ResourceAnswered): self.resources.answered,
            from_child(ResourceRefused): self.resources.refused,
            from_child(ResourceListChanged): self.resources.list_changed,
            from_child(ResourceUpdated): self.resources.updated,
            wakeup(ResourceWaitExpired): lambda due: self.resources.expired(due.call_id),
        }

    # --- start and stop -------------------------------------------------------------------

    def _start(self, msg: StartSupervisor, sender: ActorAddress) -> None:
        self.config = msg
        self.edge = sender
        self.server_info = {"name": "nbstage", "version": VERSION}
        self.target = restart_target.RestartTarget(msg.rejoin_target, None)
        self.tools.start(msg.cached_tools)
        if msg.no_daemon is None:
            self._start_child()

    def _stdin_closed(self, msg: StdinClosed, sender: ActorAddress) -> None:
        if msg.drain_secs > 0 and self.calls:
            self.draining = True
            self.wakeupAfter(timedelta(seconds=msg.drain_secs), payload=DrainOver())
            return
        self._stop()

    def _stop(self) -> None:
        """Stop once. A call still held then (its drain ran out, or a signal came) is
        answered with an error before the child goes: an answer arriving after this would
        be a retired child's and is not heard, and nothing read from stdin goes unanswered."""
        if self.stopped:
            return
        self.stopped = True
        for call_id, call in list(self.calls.items()):
            del self.calls[call_id]
            self._reply(call, tool_error(restart_notices.STOPPED_FIRST))
        self.listens.close_all()
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

    def _admitted(self, msg: McpRequestAdmitted, sender: ActorAddress) -> None:
        request = msg.request
        self.client_label = self.client_label or msg.client_label
        if self.slot.live is not None and not self.slot.configured and not self.slot.warming:
            self._configure_child()
        if request.method == "tools/list":
            shown = page_links.tools_for(self.tools.tools, msg.apps)
            result = self._decorate({"tools": shown}, msg.version, "tools/list")
            self._send_mcp(jsonrpc.Response(request.id, result))
        elif request.method in RESOURCE_METHODS:
            self.resources.admitted(id_key(request.id), request, msg.version, msg.apps)
        elif request.method == LISTEN_METHOD:
            self.listens.opened(id_key(request.id), request, msg.version)
        else:
            call_forwarding.tool_call(self, request, msg)

    def _decorate(self, result: dict[str, Any], version: str, method: str) -> dict[str, Any]:
        return decorate_result(result, version=version, method=method, server_info=self.server_info)

    def _reply(self, call: PendingCall, result: dict[str, Any]) -> None:
        """A tools/call's answer, carrying the restart banner if it is the first since."""
        result = with_notices(result, self.banner)
        self.banner = ()
        decorated = self._decorate(result, call.version, "tools/call")
        self._send_mcp(jsonrpc.Response(call.request_id, decorated))

    def _cancel(self, request_id: Any) -> None:
        call_id = id_key(request_id)
        self.resources.cancelled(call_id)
        self.listens.cancelled(call_id)
        call = self.calls.pop(call_id, None)
        if call is not None and self.slot.live is not None:
            self._to_child(ToolCallCancelled(call_id))

    def _to_child(self, message: Any) -> None:
        self.send(self.edge, ToSessionChild(self.slot.generation, message))

    def _stop_child(self) -> None:
        live = self.slot.stop()
        if live is not None:
            self.send(self.edge, StopSessionChild(live))

    def _from_child(self, msg: FromSessionChild, sender: ActorAddress) -> None:
        if msg.generation != self.slot.live:
            # A replaced child's late word: its calls were requeued for its successor,
            # which answers them under the same idempotency keys (and gets the banner).
            return
        handler = self.handler_for(from_child(type(msg.message)))
        if handler is None:
            log.warning("the session child sent an unexpected %s", type(msg.message).__name__)
            return
        handler(msg.message)

    def _active_changed(self, msg: ActiveSessionChanged) -> None:
        self.target = restart_target.active_changed(self.target, msg.notebook_id, msg.path)

    def _restart_target_changed(self, msg: RestartTargetChanged) -> None:
        self.target = restart_target.after_change(self.target, msg)

    # --- the child ------------------------------------------------------------------------

    def _start_child(self, configure: bool = True) -> None:
        self.send(self.edge, StartSessionChild(self.slot.start()))
        if configure and (self.config.label or self.client_label):
            self._configure_child()

    def _configure_child(self) -> None:
        self.slot.configured = True
        restarts, generation = self.restart.restarts, self.slot.generation
        config = session_config(
            self.config, self.client_label, self.target.value, restarts, generation
        )
        self._to_child(config)

    def _child_ready(self, msg: SessionManagerReady) -> None:
        self.slot.ready = True
        self.restart = restart_policy.child_ready(self.restart)
        self._refresh_tools(msg.tools)
        self.resources.child_ready()
        for call_id, call in list(self.calls.items()):
            if call.sent_to is None:
                call_forwarding.forward(self, call_id, call)

    def _refresh_tools(self, live: list[dict[str, Any]]) -> None:
        recache, changed = self.tools.adopt(live)
        if recache:
            self.send(self.edge, ToolCacheChanged(live))
        if changed:
            self.send(self.edge, ToolListChanged())
            self.listens.changed(Change.TOOLS)

    def _drain_over(self, over: DrainOver) -> None:
        if not self.stopped:
            self._stop()
