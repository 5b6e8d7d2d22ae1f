"""Messages inside one `nbstage mcp` process: the stdio edge, the ProxySupervisor
and the SessionManager it supervises."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson


@dataclass(frozen=True, slots=True)
class StartSupervisor:
    """The edge's first message to the ProxySupervisor; its sender is the edge."""

    state_dir: str
    socket_path: str
    label: str | None
    rejoin_target: str | None
    cwd: str
    supervisor_pid: int


@dataclass(frozen=True, slots=True)
class McpRequestAdmitted:
    """A tools/list or tools/call the edge's lifecycle admitted, with its negotiated era."""

    request: Any
    """The jsonrpc Request."""
    version: str
    progress_token: Any
    client_label: str | None


@dataclass(frozen=True, slots=True)
class McpRequestCancelled:
    request_id: Any


@dataclass(frozen=True, slots=True)
class ToolListChanged:
    """The supervisor adopted a new tool list; the edge tells the client if it may."""


@dataclass(frozen=True, slots=True)
class McpMessageToSend:
    """Write this JSON-RPC message to stdout."""

    message: Any


@dataclass(frozen=True, slots=True)
class StdinClosed:
    """The client went away: stop the children and end the process."""


@dataclass(frozen=True, slots=True)
class SupervisorStopped:
    pass


@dataclass(frozen=True, slots=True)
class WatchChildPid:
    """Ask the edge for a fast death signal (pidfd) on this child process."""

    pid: int
    generation: int


@dataclass(frozen=True, slots=True)
class ChildProcessDied:
    pid: int
    generation: int


@dataclass(frozen=True, slots=True)
class SessionConfig:
    """A SessionManager's first message: everything it needs to serve one client."""

    state_dir: str
    socket_path: str
    label: str
    operator_id: str
    cwd: str
    rejoin_target: str | None
    supervisor_pid: int
    restarts: int
    generation: int


@dataclass(frozen=True, slots=True)
class SessionManagerReady:
    pid: int
    generation: int
    tools: list[dict[str, Any]]
    """The tool list of the code this child loaded (it may be newer than the supervisor's)."""


@dataclass(frozen=True, slots=True)
class ToolCallRequested:
    call_id: str
    name: str
    arguments: Any
    idempotency_key: str


@dataclass(frozen=True, slots=True)
class ToolCallFinished:
    call_id: str
    result_json: bytes
    """A complete MCP tools/call result (content, structuredContent, isError), encoded:
    large results cross the actor queues as bytes, and often reach stdout untouched."""

    def result(self) -> dict[str, Any]:
        return orjson.loads(self.result_json)


@dataclass(frozen=True, slots=True)
class McpResultToSend:
    """Write a JSON-RPC response whose result is already encoded."""

    request_id: Any
    result_json: bytes


@dataclass(frozen=True, slots=True)
class ToolCallCancelled:
    call_id: str


@dataclass(frozen=True, slots=True)
class HandoffRequested:
    """The daemon's version changed: restart the session manager at once, outside the budget."""

    from_version: str
    to_version: str
    generation: int


@dataclass(frozen=True, slots=True)
class StopSessionManager:
    pass


@dataclass(frozen=True, slots=True)
class ActiveSessionChanged:
    """The SessionManager's active notebook changed (a tool call or a background rejoin)."""

    notebook_id: str | None
    path: str | None
