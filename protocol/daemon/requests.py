"""Requests a client may send to the daemon over its socket.

Each class is registered under its wire ``type`` with :func:`wire_request`.
``decode_request`` turns a checked frame into one of these, naming any bad field.
Requests that carry ``notebook_id`` are answered by that notebook's Room; the rest
by the Daemon or by the socket edge itself.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import field
from enum import StrEnum
from typing import Any, TypeVar

from nbstage.protocol.common.codec import from_wire
from nbstage.protocol.common.errors import ErrorCode, NbstageError
from nbstage.protocol.common.frozen import frozen
from nbstage.protocol.common.labels import check_labels
from nbstage.protocol.common.paths import check_paths
from nbstage.protocol.daemon.dependency_modes import ApplyDependencies

REQUEST_TYPES: dict[str, type] = {}
WIRE_NAMES: dict[type, str] = {}
REQUEST_FIELDS: dict[type, frozenset[str]] = {}
ENVELOPE = ("v", "type", "id")
_R = TypeVar("_R", bound=type)


def wire_request(name: str) -> Callable[[_R], _R]:
    def register(cls: _R) -> _R:
        REQUEST_TYPES[name] = cls
        WIRE_NAMES[cls] = name
        REQUEST_FIELDS[cls] = frozenset(f.name for f in dataclasses.fields(cls))
        return cls

    return register


def decode_request(frame: dict[str, Any]) -> object:
    """Build the request a checked frame asks for; a field the request does not have is
    refused by name, like a missing or mistyped one (the envelope's keys are not fields)."""
    cls = REQUEST_TYPES.get(frame["type"])
    if cls is None:
        names = ", ".join(sorted(REQUEST_TYPES))
        raise NbstageError(
            ErrorCode.UNKNOWN_REQUEST, f"unknown request type {frame['type']!r}; known: {names}"
        )
    fields = {k: v for k, v in frame.items() if k not in ENVELOPE}
    known = REQUEST_FIELDS[cls]
    unknown = sorted(set(fields) - known)
    if unknown:
        takes = ", ".join(sorted(known)) or "no fields"
        raise NbstageError(
            ErrorCode.BAD_REQUEST,
            f"unknown field {unknown[0]!r} for {frame['type']!r}; it takes {takes}",
        )
    return check_labels(check_paths(from_wire(cls, fields)))


# --- daemon-level requests -------------------------------------------------------------


@wire_request("identity")
@frozen
class GetIdentity:
    """Ask who the daemon is: pid, start time, version and incarnation."""


@wire_request("status")
@frozen
class GetStatus:
    """Identity plus the socket path and room and kernel counts."""


@wire_request("watch")
@frozen
class Watch:
    """Open a stream of heartbeats and room events on this connection."""

    client: dict[str, Any] | None = None
    """What the watching client reports about itself (label, pids, notebooks); shown by admin."""


@wire_request("clients")
@frozen
class ListClients:
    """Every connected client that reported itself on a watch subscription."""


@wire_request("shutdown")
@frozen
class ShutdownDaemon:
    """Save and flush every room, stop every kernel, then exit."""


@wire_request("list_rooms")
@frozen
class ListRooms:
    """Every resident room with its id, path, peers and flags."""


@wire_request("reap")
@frozen
class RunReaper:
    """Run the ghost-room reaper now; answers with the rooms it chose."""


@wire_request("gc_envs")
@frozen
class CollectEnvironments:
    """Remove the inline environments no open room uses, last used ``older_than_secs`` ago
    or longer (0: every unused one)."""

    older_than_secs: float = 0.0


@wire_request("tree")
@frozen
class GetActorTree:
    """The live actor tree: the Daemon actor, each Room and each Kernel, with addresses and pids."""


@wire_request("log")
@frozen
class GetLog:
    """The newest lines of the daemon's logs (daemon and actors), oldest first."""

    lines: int = 50


@wire_request("evict")
@frozen
class EvictRoom:
    """Save or flush a room, stop its kernel and remove it; answers once it is gone."""

    notebook_id: str


@wire_request("open")
@frozen
class OpenNotebook:
    """Join the room of an .ipynb file, loading it if no room holds it yet."""

    path: str
    peer_label: str = "anonymous"


@wire_request("create")
@frozen
class CreateNotebook:
    """Make a new untitled room and join it."""

    runtime: str | None = "python"
    """Kernel runtime; None makes a room with no kernel."""
    ephemeral: bool = True
    """Ephemeral rooms are never written anywhere; others are journaled in the registry."""
    working_dir: str | None = None
    peer_label: str = "anonymous"
    key: str | None = None
    """Idempotency key: a repeat joins the notebook the first made instead of another."""


@wire_request("attach")
@frozen
class AttachNotebook:
    """Join a notebook by UUID; attach-only, never creates an empty document."""

    notebook_id: str
    peer_label: str = "anonymous"


# --- room-level requests (answered by the Room that holds notebook_id) ------------------


@wire_request("leave")
@frozen
class LeaveRoom:
    notebook_id: str
    peer_id: str


@wire_request("save")
@frozen
class SaveNotebook:
    """Write the notebook atomically; ``path`` saves it there (promoting an untitled room)."""

    notebook_id: str
    path: str | None = None
    key: str | None = None
    """Idempotency key: a repeat answers the first save's result and writes nothing."""
    overwrite: bool = False
    """Replace an existing notebook that is not this room's file (never a non-notebook)."""


@wire_request("get_cell")
@frozen
class GetCell:
    notebook_id: str
    cell_id: str
    preview: int | None = None
    """Cut each output text in the answer to about this many bytes (an agent's preview,
    applied before the reply is encoded); None: outputs whole."""


class CellsFormat(StrEnum):
    SUMMARY = "summary"
    """One short line per cell: CellsSummarized."""
    JSON = "json"
    """Whole nbformat cells: CellsShown."""


@wire_request("get_cells")
@frozen
class GetCells:
    notebook_id: str
    format: CellsFormat = CellsFormat.SUMMARY
    start: int = 0
    count: int | None = None
    include_outputs: bool = False
    preview: int | None = None
    """As GetCell's, for each cell's outputs."""


@wire_request("create_cell")
@frozen
class CreateCell:
    notebook_id: str
    source: str = ""
    cell_type: str = "code"
    index: int | None = None
    key: str | None = None
    """Idempotency key: a repeat returns the first result and changes nothing."""


@wire_request("set_cell")
@frozen
class SetCell:
    notebook_id: str
    cell_id: str
    source: str | None = None
    cell_type: str | None = None
    key: str | None = None


@wire_request("delete_cell")
@frozen
class DeleteCell:
    notebook_id: str
    cell_id: str
    key: str | None = None


@wire_request("move_cell")
@frozen
class MoveCell:
    notebook_id: str
    cell_id: str
    after_cell_id: str | None = None
    key: str | None = None


@wire_request("replace_match")
@frozen
class ReplaceMatch:
    notebook_id: str
    cell_id: str
    match: str
    content: str
    context_before: str | None = None
    context_after: str | None = None
    key: str | None = None


@wire_request("replace_regex")
@frozen
class ReplaceRegex:
    notebook_id: str
    cell_id: str
    pattern: str
    content: str
    key: str | None = None


@wire_request("execute")
@frozen
class ExecuteCell:
    """Queue a cell; answer when it finishes or after ``wait_secs``, whichever comes first."""

    notebook_id: str
    cell_id: str
    wait_secs: float = 0.0
    key: str | None = None
    preview: int | None = None
    """Cut each output text in the answer to about this many bytes (an agent's preview,
    applied before the reply is encoded); None: outputs whole."""


@wire_request("get_execution")
@frozen
class GetExecution:
    notebook_id: str
    execution_id: str
    wait_secs: float = 0.0
    preview: int | None = None
    """Cut each output text in the answer to about this many bytes (an agent's preview,
    applied before the reply is encoded); None: outputs whole."""


@wire_request("describe_room")
@frozen
class DescribeRoom:
    """One room in detail: peers, kernel, executions, latch and keep-alive state."""

    notebook_id: str


@wire_request("shutdown_kernel")
@frozen
class ShutdownKernelNow:
    """Stop the room's kernel now; the room stays, and a later execute starts a fresh one."""

    notebook_id: str


@wire_request("interrupt")
@frozen
class InterruptKernel:
    notebook_id: str
    key: str | None = None


@wire_request("manage_dependencies")
@frozen
class ManageDependencies:
    """Read, or edit and apply, the notebook's inline dependencies
    (actors/daemon/environment/dependencies.py)."""

    notebook_id: str
    add: list[str] = field(default_factory=list)
    remove: list[str] = field(default_factory=list)
    trust: bool = False
    dependency_fingerprint: str | None = None
    """Refuse the call unless the dependencies still have this fingerprint."""
    apply: ApplyDependencies = ApplyDependencies.NONE
    key: str | None = None


@wire_request("restart_kernel")
@frozen
class RestartKernel:
    notebook_id: str
    key: str | None = None
    """Idempotency key: a repeat answers the first restart's result and restarts nothing."""
