"""The ProxySupervisor's tools/call traffic: a call admitted and forwarded to the session
child under its idempotency key (or held until a child is ready), its progress
notifications, and its answer (the supervisor's ``_reply``, which puts the restart banner
on the first one after a restart). These are the supervisor's handlers for it; they act
through the supervisor, which owns the calls in flight (``calls``)."""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

from nbstage.actors.proxy import child_restarts, restart_notices, restart_policy
from nbstage.actors.proxy.tool_calls import PendingCall, admit, id_key
from nbstage.protocol.mcp import jsonrpc
from nbstage.protocol.mcp.tool_names import ToolName
from nbstage.protocol.mcp.tool_results import progress_notification, tool_error
from nbstage.protocol.mcp.versions import is_modern_version
from nbstage.protocol.session.supervision import (
    McpRequestAdmitted,
    McpResultToSend,
    ToolCallFinished,
    ToolCallProgressed,
    ToolCallRequested,
)
from nbstage.protocol.session.supervisor_followups import CallWaitExpired, ProgressDue

PROGRESS_EVERY = timedelta(seconds=4)
CALL_WAIT_LIMIT = timedelta(seconds=30)


def tool_call(sup: Any, request: jsonrpc.Request, dispatch: McpRequestAdmitted) -> None:
    call = admit(request, sup.entrypoint, dispatch.version, dispatch.progress_token, dispatch.apps)
    if isinstance(call, jsonrpc.ErrorResponse):
        sup._send_mcp(call)
        return
    if isinstance(call, str):
        result = sup._decorate(tool_error(call), dispatch.version, "tools/call")
        sup._send_mcp(jsonrpc.Response(request.id, result))
        return
    call_id = id_key(request.id)
    if sup.config.no_daemon is not None:
        sup._reply(call, tool_error(sup.config.no_daemon))
        return
    if call.name is ToolName.RECONNECT:
        child_restarts.reconnect(sup, call)
        return
    if restart_policy.circuit_is_open(sup.restart, time.monotonic()):
        sup._reply(call, tool_error(child_restarts.circuit_message(sup)))
        return
    sup.calls[call_id] = call
    if call.progress_token is not None:
        sup.wakeupAfter(PROGRESS_EVERY, payload=ProgressDue(call_id))
    forward(sup, call_id, call)


def forward(sup: Any, call_id: str, call: PendingCall) -> None:
    if not sup.slot.ready:
        sup.wakeupAfter(CALL_WAIT_LIMIT, payload=CallWaitExpired(call_id))
        return
    call.attempts += 1
    call.sent_to = sup.slot.generation
    sup._to_child(ToolCallRequested(call_id, call.name, call.arguments, call.key, call.for_app))


def progress(sup: Any, call: PendingCall, message: str) -> None:
    call.progress_sent += 1
    notification = progress_notification(call.progress_token, call.progress_sent, message=message)
    sup._send_mcp(notification)


def call_progressed(sup: Any, msg: ToolCallProgressed) -> None:
    call = sup.calls.get(msg.call_id)
    if call is not None and call.progress_token is not None and call.sent_to == sup.slot.generation:
        progress(sup, call, msg.message)


def call_finished(sup: Any, msg: ToolCallFinished) -> None:
    call = sup.calls.get(msg.call_id)
    if call is None or call.sent_to != sup.slot.generation:
        return
    del sup.calls[msg.call_id]
    if not sup.banner and not is_modern_version(call.version):
        sup.send(sup.edge, McpResultToSend(call.request_id, msg.result_json))
    else:
        sup._reply(call, msg.result())


def progress_due(sup: Any, due: ProgressDue) -> None:
    call = sup.calls.get(due.call_id)
    if sup.stopped or call is None:
        return
    elapsed = time.monotonic() - call.started
    progress(sup, call, f"{call.name} still running after {elapsed:.0f} s")
    sup.wakeupAfter(PROGRESS_EVERY, payload=ProgressDue(due.call_id))


def call_wait_expired(sup: Any, expired: CallWaitExpired) -> None:
    call = sup.calls.get(expired.call_id)
    if sup.stopped or call is None or call.sent_to is not None:
        return
    del sup.calls[expired.call_id]
    sup._reply(call, tool_error(restart_notices.NOT_BACK_IN_TIME))
