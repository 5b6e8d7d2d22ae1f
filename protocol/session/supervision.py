"""Messages of one MCP client's processes: the `nbstage mcp` edge and its
ProxySupervisor, and the session child with its SessionManager.

The supervisor and the SessionManager live in different processes. What passes
between them crosses a socketpair as typed frames (``protocol/session/session_frames.py``);
the edges turn those frames back into these messages."""

from __future__ import annotations

from dataclasses import field
from enum import StrEnum
from typing import Any

import orjson

from nbstage.protocol.common.frozen import frozen
from nbstage.protocol.mcp.tool_names import ToolName


@frozen
class StartSupervisor:
    """The edge's first message to the ProxySupervisor; its sender is the edge."""

    state_dir: str
    socket_path: str
    label: str | None
    rejoin_target: str | None
    cwd: str
    supervisor_pid: int
    autostart: bool = True
    """Whether a daemon is being started for this client, so first calls wait for it."""
    cached_tools: list[dict[str, Any]] = field(default_factory=list)
    """The tool list last seen from a session child (tool-cache.json), read by the edge."""
    no_daemon: str | None = None
    """Why no daemon can run for the state dir (no dir for its sockets): no session child
    starts, and every tool call fails saying so."""
    figure_files: int = 64
    """The figure_files setting (figure_files.py), read by the edge."""


@frozen
class McpRequestAdmitted:
    """A tools/list or tools/call the edge's lifecycle admitted, with its negotiated era."""

    request: Any
    """The jsonrpc Request."""
    version: str
    progress_token: Any
    client_label: str | None
    apps: bool = False
    """Whether the client takes the MCP Apps extension (``protocol/mcp/mcp_apps.py``)."""


@frozen
class McpRequestCancelled:
    request_id: Any


@frozen
class ToolListChanged:
    """The supervisor adopted a new tool list; the edge tells the client if it may."""


@frozen
class ToolCacheChanged:
    """Supervisor → edge: the live tool list differs from tool-cache.json; rewrite it."""

    tools: list[dict[str, Any]]


@frozen
class McpMessageToSend:
    """Write this JSON-RPC message to stdout."""

    message: Any


@frozen
class StdinClosed:
    """The client went away, or a signal came: stop the children and end the process.

    At stdin's end the calls still in flight get up to ``drain_secs`` to be answered first
    (a client may write its last requests and close stdin at once); a signal stops at once.
    """

    drain_secs: float = 0.0


@frozen
class SupervisorStopped:
    pass


@frozen
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
    autostart: bool = True
    figure_files: int = 64


@frozen
class StartSessionChild:
    """Supervisor → edge: start the session child process for this generation. Its
    first message, a SessionConfig, follows as soon as the client's label is known."""

    generation: int


@frozen
class ToSessionChild:
    """Supervisor → edge: send ``message`` to the child of this generation, if it lives."""

    generation: int
    message: Any


@frozen
class StopSessionChild:
    """Supervisor → edge: end the child of this generation (asked first, then killed)."""

    generation: int


@frozen
class FromSessionChild:
    """Edge → supervisor: a message the child of ``generation`` sent."""

    generation: int
    message: Any


@frozen
class ChildProcessDied:
    """Edge → supervisor: the child process of ``generation`` exited or could not start."""

    pid: int | None
    generation: int
    exit_code: int | None


HANDOFF_EXIT_CODE = 75
"""A session child that exits with this code asks for a handoff: restart it at once, from
the installed code, outside the crash budget (EX_TEMPFAIL, as upstream uses)."""


@frozen
class SessionManagerReady:
    pid: int
    generation: int
    tools: list[dict[str, Any]]
    """The tool list of the code this child loaded (it may be newer than the supervisor's)."""


@frozen
class ToolCallRequested:
    call_id: str
    name: ToolName
    arguments: Any
    idempotency_key: str
    for_app: bool = False
    """The client takes the MCP Apps extension: the result of a tool linked to its page
    carries the outputs the page draws (``mcp_apps.OUTPUTS_KEY``)."""


@frozen
class ToolCallFinished:
    call_id: str
    result_json: bytes
    """A complete MCP tools/call result (content, structuredContent, isError), encoded:
    large results cross the actor queues as bytes, and often reach stdout untouched."""

    def result(self) -> dict[str, Any]:
        result: dict[str, Any] = orjson.loads(self.result_json)
        return result


@frozen
class ToolCallProgressed:
    """Session child → supervisor: a line about a call still under way (uv's output
    during a build), sent on as an MCP progress notification when the call has a token."""

    call_id: str
    message: str


@frozen
class McpResultToSend:
    """Write a JSON-RPC response whose result is already encoded."""

    request_id: Any
    result_json: bytes


@frozen
class ToolCallCancelled:
    call_id: str


@frozen
class HandoffRequested:
    """The daemon's version changed: restart the session manager at once, outside the budget."""

    from_version: str
    to_version: str
    generation: int


@frozen
class StopSessionManager:
    pass


@frozen
class ActiveSessionChanged:
    """The SessionManager's active notebook changed (a tool call or a background rejoin)."""

    notebook_id: str | None
    path: str | None


class TargetChange(StrEnum):
    """What happened to a notebook that may move the supervisor's restart target (SPEC §8)."""

    JOINED = "joined"
    """A connect or create succeeded: the notebook becomes the target."""
    SAVED = "saved"
    """The notebook was saved to ``path``: a target naming it moves there."""
    LEFT = "left"
    """The notebook was disconnected: a target naming it is cleared."""


@frozen
class RestartTargetChanged:
    """The SessionManager reports what the restart target follows, beside the call's result,
    so the supervisor never reads a finished result to learn it."""

    change: TargetChange
    notebook_id: str
    path: str | None
