"""A ``tools/call`` as the ProxySupervisor holds it, and what it refuses before a call
reaches the session child (pure: no actor, no clock but a call's start)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from nbstage.protocol.common.errors import NbstageError
from nbstage.protocol.mcp import jsonrpc, page_links, tools
from nbstage.protocol.mcp.tool_names import ToolName

CATALOGUED = frozenset(ToolName) & frozenset(tools.TOOLS_BY_NAME)
"""The names a call may give: a tool with a name and a description (a test checks that
every tool has both)."""


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
    for_app: bool = False
    """The client takes the MCP Apps extension (its result carries the page's outputs)."""


def id_key(request_id: Any) -> str:
    """JSON-RPC ids 1 and "1" are different requests, so keys keep the type."""
    return f"{type(request_id).__name__}:{request_id}"


def admit(
    request: jsonrpc.Request,
    entrypoint: str,
    version: str,
    progress_token: Any,
    apps: bool = False,
) -> PendingCall | jsonrpc.ErrorResponse | str:
    """A ``tools/call`` as a call to hold, the JSON-RPC error for params that name no
    catalogued tool (or an app-only one, from a client that does not take the MCP Apps
    extension), or the refusal of its arguments (a tool error)."""
    params = request.params or {}
    if not isinstance(params, dict):
        message = "tools/call params must be an object"
        return jsonrpc.ErrorResponse(request.id, jsonrpc.INVALID_PARAMS, message)
    asked = params.get("name")
    if (
        not isinstance(asked, str)
        or asked not in CATALOGUED
        or page_links.refused_call(asked, apps)
    ):
        message = f"Unknown tool: {asked}"
        return jsonrpc.ErrorResponse(request.id, jsonrpc.INVALID_PARAMS, message)
    name = ToolName(asked)
    arguments = params.get("arguments")
    refusal = argument_refusal(name, arguments)
    if refusal is not None:
        return refusal
    key = f"{entrypoint}:{id_key(request.id)}"
    return PendingCall(request.id, name, arguments, key, version, progress_token, for_app=apps)


def argument_refusal(name: ToolName, arguments: object) -> str | None:
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


def requeue(calls: dict[str, PendingCall]) -> list[str]:
    """Calls in flight on a child that died are retried once, with the same key: each
    sent once waits for the next child again; the ids of those sent twice are returned,
    to be failed."""
    failed = []
    for call_id, call in calls.items():
        if call.sent_to is None:
            continue
        if call.attempts >= 2:
            failed.append(call_id)
        else:
            call.sent_to = None
    return failed
