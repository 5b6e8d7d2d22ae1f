"""The session tools (connect_notebook, create_notebook, disconnect_notebook) against the
session model: the event a call asks it for, and what the call answers once it has
decided; also the words of the SessionManager's refusals. Pure: facts in, events,
results and restart-target changes out."""

from __future__ import annotations

from typing import Any

from nbstage.actors.session.daemon_link import DaemonFailure
from nbstage.actors.session.session_events import (
    ConnectRequested,
    DisconnectRequested,
    JoinFailed,
    JoinSucceeded,
)
from nbstage.actors.session.session_model import Session, Target
from nbstage.actors.session.tool_handlers import absolute, environment_fields
from nbstage.protocol.common.codec import to_wire
from nbstage.protocol.common.errors import ErrorCode
from nbstage.protocol.common.frozen import frozen
from nbstage.protocol.common.words import plural
from nbstage.protocol.daemon.replies import NotebookJoined, RoomDescribed
from nbstage.protocol.daemon.requests import AttachNotebook, CreateNotebook, OpenNotebook
from nbstage.protocol.mcp import tools
from nbstage.protocol.mcp.tool_names import ToolName
from nbstage.protocol.mcp.tool_results import tool_result
from nbstage.protocol.session.supervision import TargetChange

DEGRADED = {
    tools.Access.PROJECTION_READ: "the notebook list cannot be read",
    tools.Access.DOCUMENT_READ: "the notebook cannot be read",
    tools.Access.DOCUMENT_MUTATION: "the notebook cannot be changed",
    tools.Access.KERNEL_CONTROL: "the kernel cannot be controlled",
    tools.Access.RUNTIME_READ: "execution results cannot be read",
    tools.Access.EXECUTE: "cells cannot run",
}

NEXT_CALLS = {
    ErrorCode.CELL_NOT_FOUND: "get_all_cells()",
    ErrorCode.DEPENDENCIES_CHANGED: "manage_dependencies()",
}
"""The call that shows what a refusal with this code needs, for the result's next_call."""


def unreachable_now(access: tools.Access) -> str:
    return (
        f"The notebook daemon is unreachable, so {DEGRADED[access]} right now. "
        "nbstage is reconnecting and will rejoin this notebook; try again shortly."
    )


def target_of(value: str, cwd: str) -> Target:
    """A restart target as the session model's Target: a path, else a notebook id."""
    if value.endswith(".ipynb") or "/" in value:
        return Target(path=absolute(value, cwd))
    return Target(notebook_id=value)


def session_event(
    name: ToolName, call_id: str, key: str, args: Any, cwd: str
) -> ConnectRequested | DisconnectRequested | str | None:
    """The session model's event for a session call, the refusal of its arguments, or
    None for a call that is not a session call."""
    match name:
        case ToolName.CONNECT_NOTEBOOK:
            if (args.path is None) == (args.notebook_id is None):
                return "Give exactly one of path and notebook_id."
            if args.path is not None:
                return ConnectRequested(call_id, Target(path=absolute(args.path, cwd)))
            return ConnectRequested(call_id, Target(notebook_id=args.notebook_id))
        case ToolName.CREATE_NOTEBOOK:
            create = {"runtime": args.runtime, "ephemeral": args.ephemeral, "key": key}
            if args.kernel_host is not None:
                create["kernel_host"] = args.kernel_host
            create["working_dir"] = absolute(args.working_dir or ".", cwd)
            return ConnectRequested(call_id, Target(create=create))
        case ToolName.DISCONNECT_NOTEBOOK:
            return DisconnectRequested(call_id, args.notebook_id)
    return None


def join_request(target: Target, label: str) -> CreateNotebook | OpenNotebook | AttachNotebook:
    """The daemon request that carries out the session model's Join."""
    if target.create is not None:
        return CreateNotebook(**target.create, peer_label=label)
    if target.path is not None:
        return OpenNotebook(target.path, label)
    assert target.notebook_id is not None
    return AttachNotebook(target.notebook_id, label)


def join_outcome(
    activation_id: int, reply: NotebookJoined | DaemonFailure, incarnation: tuple[Any, ...] | None
) -> JoinSucceeded | JoinFailed:
    """The daemon's answer to a join, as the session model's event."""
    if isinstance(reply, DaemonFailure):
        unavailable = reply.code in (ErrorCode.NOTEBOOK_UNAVAILABLE, ErrorCode.NOT_FOUND)
        return JoinFailed(activation_id, reply.message, unavailable)
    session = Session(reply.notebook_id, reply.path, reply.peer_id, incarnation)
    return JoinSucceeded(activation_id, session, to_wire(reply))


@frozen
class SessionAnswer:
    """A session call's result, and how the supervisor's restart target moves."""

    result: dict[str, Any]
    change: TargetChange
    notebook_id: str
    path: str | None


def session_answer(
    name: ToolName | None, result: dict[str, Any], runtime: str | None
) -> SessionAnswer | None:
    """The answer to a session call the model answered with ``result``; None when it
    is a connect to the active notebook, whose facts must be asked of the room."""
    if name == ToolName.CREATE_NOTEBOOK:
        structured = {
            "notebook_id": result["notebook_id"],
            "path": None,
            "ephemeral": result["ephemeral"],
            "runtime": result["runtime"] if runtime is None else runtime,
        }
        text = f"Created notebook {result['notebook_id']}; its kernel is starting."
        answer = tool_result(structured, text=text)
        return SessionAnswer(answer, TargetChange.JOINED, result["notebook_id"], None)
    if name == ToolName.DISCONNECT_NOTEBOOK:
        text = f"Disconnected from {result['disconnected']}."
        answer = tool_result(result, text=text)
        return SessionAnswer(answer, TargetChange.LEFT, result["disconnected"], None)
    if result["cell_count"] is None:
        return None
    return connected_answer(result, "Connected to")


def connected_answer(result: dict[str, Any], opening: str) -> SessionAnswer:
    structured, kernel = _connected(result)
    text = f"{opening} {result['path'] or result['notebook_id']} {kernel}"
    answer = tool_result(structured, text=text)
    return SessionAnswer(answer, TargetChange.JOINED, result["notebook_id"], result["path"])


def _connected(result: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """connect_notebook's structuredContent, and its words on cells and kernel."""
    hidden = ("ephemeral", "runtime", "kernel_refused", "environment")
    structured = {k: v for k, v in result.items() if k not in hidden}
    structured["kernelspec"] = result.get("runtime")
    structured |= environment_fields(result.get("environment"))
    cells = plural(result["cell_count"], "cell")
    if result.get("kernel_refused"):
        structured["kernel_refused"] = result["kernel_refused"]
        return structured, f"({cells}, no kernel). {result['kernel_refused']}"
    kernel = " ".join(str(v) for v in (result.get("runtime"), result["kernel_status"]) if v)
    if structured["env_source"]:
        kernel += f" in the {structured['env_source']} environment"
    if structured.get("kernel_host"):
        kernel += f" on kernel host {structured['kernel_host']}"
    return structured, f"({cells}, kernel {kernel})."


def already_connected(result: dict[str, Any], room: RoomDescribed) -> SessionAnswer:
    """Connecting to the active notebook joins nothing; its facts come from the room."""
    facts = {
        "cell_count": room.cell_count,
        "kernel_status": room.kernel_status,
        "runtime": room.runtime,
        "kernel_refused": room.kernel_refused,
    }
    return connected_answer({**result, **facts}, "Already connected to")
