"""What the daemon answers to each request of ``protocol/daemon/requests.py``.

A request is answered by exactly one reply type (``reply_type``), or refused with
:class:`DaemonRefused`. The daemon's actors and its socket edge build these and
encode them with ``to_wire``; every client (the session child, the CLI, the admin
console, the harness) decodes each result frame with ``decode_reply``, through
``conversation.py``, into the type its request expects, so a malformed answer fails
there, once, with the field named. The wire shapes are plain JSON objects, which
tests may also read as such.
"""

from __future__ import annotations

from dataclasses import field
from enum import StrEnum
from typing import Any, TypedDict, TypeVar

from nbstage.protocol.common.codec import OMIT_WHEN_NONE, from_wire
from nbstage.protocol.common.errors import ErrorCode, NbstageError
from nbstage.protocol.common.frozen import frozen
from nbstage.protocol.daemon.dependency_modes import ApplyDependencies
from nbstage.protocol.daemon.frames import FrameKind
from nbstage.protocol.daemon.requests import (
    AttachNotebook,
    CellsFormat,
    CollectEnvironments,
    CreateCell,
    CreateNotebook,
    DeleteCell,
    DescribeRoom,
    EvictRoom,
    ExecuteCell,
    GetActorTree,
    GetCell,
    GetCells,
    GetExecution,
    GetIdentity,
    GetLog,
    GetStatus,
    InterruptKernel,
    LeaveRoom,
    ListClients,
    ListRooms,
    ManageDependencies,
    MoveCell,
    OpenNotebook,
    ReplaceMatch,
    ReplaceRegex,
    RestartKernel,
    RunReaper,
    SaveNotebook,
    SetCell,
    ShutdownDaemon,
    ShutdownKernelNow,
    Watch,
)
from nbstage.protocol.daemon_actors.kernels import EnvironmentView, ExecutionStatus, KernelState


@frozen
class DaemonRefused:
    """Any request can be refused: the error object of an error frame."""

    code: ErrorCode
    message: str
    """A sentence for people that says what to do next."""


# --- the daemon itself ----------------------------------------------------------------------


@frozen
class DaemonIdentity:
    """Who the daemon is, stable for its process's life."""

    pid: int
    started_at: float
    version: str
    incarnation: tuple[int, float]
    """(pid, started_at): a restarted daemon is a new incarnation even at the same version."""


@frozen
class DaemonStatus(DaemonIdentity):
    socket: str
    state_dir: str
    envs_dir: str
    """Where the daemon keeps kernel environments (``NBSTAGE_ENVS_DIR`` as the daemon
    read it), so that the admin console lists the daemon's and not its own."""
    rooms: int
    kernels: int
    """Kernels that are up (neither absent nor dead)."""


@frozen
class RoomCounts:
    """The Daemon actor's part of a status; the socket edge adds identity and paths."""

    rooms: int
    kernels: int


@frozen
class Heartbeat:
    """A watch subscription's first frame, then one every heartbeat period."""

    identity: DaemonIdentity


@frozen
class ClientsListed:
    clients: list[dict[str, Any]]
    """What each watching client reported about itself, as it reported it."""


@frozen
class DaemonStopping:
    stopping: bool = True


@frozen
class LogTail:
    lines: list[dict[str, Any]]
    """Log records (JSON lines of the daemon's logs), oldest first."""


# --- rooms, as the Daemon sees them ---------------------------------------------------------


@frozen
class PeerView:
    peer_id: str
    label: str


@frozen
class RoomView:
    notebook_id: str
    path: str | None
    ephemeral: bool
    starting: bool
    room_pid: int | None
    peers: list[PeerView] | None
    """None when not known: a session lists its own notebooks so while the daemon is away."""
    kernel_status: KernelState
    kernel_pid: int | None
    kernelspec: str | None = None
    environment: EnvironmentView | None = None


@frozen
class RoomsListed:
    rooms: list[RoomView]


@frozen
class KeptRoom:
    """A room the reaper chose but kept, because its final save or flush failed."""

    notebook_id: str
    reason: str
    """Why it was being closed (a CloseReason's value)."""
    problem: str
    """Why the save or flush failed."""
    at: float
    """Wall-clock time of the failure."""


@frozen
class EnvironmentsCollected:
    removed: list[str]
    """The folders removed."""
    kept: list[str]
    """The fingerprints kept because an open room's kernel runs there."""


@frozen
class RoomsReaped:
    reaped: list[str]
    """The notebook ids the reaper chose whose rooms are gone, saved first."""
    kept: list[KeptRoom] = field(default_factory=list)
    """The rooms it chose but kept with their unsaved edits, because saving them failed."""


@frozen
class RoomEvicted:
    evicted: str
    saved: bool
    """Whether the final save or flush succeeded."""


class ActorRole(StrEnum):
    DAEMON = "Daemon"
    ROOM = "Room"


@frozen
class KernelNode:
    actor_pid: int
    kernel_pid: int | None


@frozen
class RoomNode:
    actor: ActorRole
    notebook_id: str
    address: str
    pid: int | None
    kernel: KernelNode | None


@frozen
class ActorTree:
    actor: ActorRole
    address: str
    pid: int
    rooms: list[RoomNode]


# --- joining and leaving a room -------------------------------------------------------------


@frozen
class NotebookFacts:
    """What a Room says about itself in a join and in a description."""

    notebook_id: str
    path: str | None
    ephemeral: bool
    runtime: str | None
    """The kernelspec name, or None for a room without a kernel."""
    cell_count: int
    kernel_status: KernelState
    kernel_refused: str | None = field(default=None, kw_only=True, metadata=OMIT_WHEN_NONE)
    """Why no installed kernelspec fits the notebook; the notebook can still be edited."""
    environment: EnvironmentView | None = field(default=None, kw_only=True, metadata=OMIT_WHEN_NONE)
    """The running kernel's environment; None while no kernel runs."""


@frozen
class NotebookJoined(NotebookFacts):
    """The answer to open, create and attach: the room, and the new peer in it."""

    peer_id: str
    created: bool
    """True when this join made the notebook."""


@frozen
class RoomLeft:
    left: bool = True


@frozen
class ExecutionCounts:
    live: list[str]
    finished: int


@frozen
class Latch:
    kernel_attached: bool
    generation: int


@frozen
class KeepAlive:
    secs: float
    armed_generation: int | None
    pending: bool
    """A teardown is armed for the current generation and the room has no peers."""


@frozen
class RoomDescribed(NotebookFacts):
    peers: list[PeerView]
    kernel_pid: int | None
    kernel_actor_pid: int | None
    executions: ExecutionCounts
    latch: Latch
    keep_alive: KeepAlive
    unsaved: bool
    room_pid: int
    kept: KeptRoom | None = None
    """Set while the room holds edits the reaper could not save before removing it."""


# --- the document ---------------------------------------------------------------------------


@frozen
class NotebookSaved:
    notebook_id: str
    path: str


@frozen
class CellView:
    """One cell in the get_cell tool's shape."""

    cell_id: str
    cell_type: str
    source: str
    execution_count: int | None
    outputs: list[dict[str, Any]]
    """nbformat outputs."""


@frozen
class CellShown:
    cell: CellView


class _CellSummaryKeys(TypedDict):
    cell_id: str
    index: int
    cell_type: str
    source_preview: str


class CellSummary(_CellSummaryKeys, total=False):
    """One row of a summary: a plain dict, because a 1,000-cell answer has 1,000 of them
    (the codec checks each row's keys and types and keeps the dict it was given).

    The counts are left out at their defaults (never run, no outputs), so the row of a
    cell never run has four keys: each key of a 1,000-row answer costs every reader,
    down to the MCP client, about 0.3 ms to parse. A ``None`` count, which older daemons
    send, is still read. ``NotRequired`` would say all this more briefly, but Python 3.11
    ignores it under postponed annotations."""

    execution_count: int | None
    output_count: int


@frozen
class CellsSummarized:
    """The answer to get_cells in the summary format."""

    cells: list[CellSummary]
    total: int
    """Cells in the notebook, whatever the window asked for."""


@frozen
class CellsShown:
    """The answer to get_cells in the json format."""

    cells: list[dict[str, Any]]
    """nbformat 4.5 cells; without outputs when they were not asked for."""
    total: int


@frozen
class CellCreated:
    cell_id: str
    index: int


@frozen
class CellUpdated:
    """The answer to set_cell, replace_match and replace_regex."""

    cell_id: str


@frozen
class CellDeleted:
    deleted: str


@frozen
class CellMoved:
    cell_id: str
    index: int


# --- executions and the kernel --------------------------------------------------------------


@frozen
class ExecutionView:
    execution_id: str
    cell_id: str
    status: ExecutionStatus
    execution_count: int | None
    outputs: list[dict[str, Any]]
    """nbformat outputs, in the order they arrived."""
    error: str | None = field(default=None, metadata=OMIT_WHEN_NONE)
    """Why an execution ended in error or was cancelled, when the kernel did not say; on the
    wire only when there is one."""


@frozen
class ExecutionReported:
    """The answer to execute and get_execution: finished, or as far as it got in the wait."""

    execution: ExecutionView


@frozen
class InterruptSent:
    interrupted: bool = True


@frozen
class RestartCompleted:
    kernel_pid: int | None
    restarted: bool = True


@frozen
class DependencyRemoval:
    requested: list[str]
    removed: list[str]
    not_found: list[str]


@frozen
class DependencyTrust:
    status: str
    """"none" (no dependencies), "trusted" or "untrusted"."""
    needs_approval: bool


@frozen
class DependenciesApplied:
    mode: ApplyDependencies
    ok: bool
    seconds: float
    error: str | None = None
    """uv's words when the build or install failed; the kernel was left as it was."""


@frozen
class DependencySide:
    dependencies: list[str]
    fingerprint: str


@frozen
class DependenciesManaged:
    """manage_dependencies' answer. ``before`` and ``after`` are equal for a plain read."""

    before: DependencySide
    after: DependencySide
    added: list[str]
    removed: DependencyRemoval
    trust: DependencyTrust
    environment: EnvironmentView | None = None
    apply: DependenciesApplied | None = None


@frozen
class KernelShutDown:
    kernel_pid: int | None
    """The pid of the kernel that was stopped."""
    shutdown: bool = True


REPLY_TYPES: dict[type, type] = {
    GetIdentity: DaemonIdentity,
    GetStatus: DaemonStatus,
    Watch: Heartbeat,
    ListClients: ClientsListed,
    ShutdownDaemon: DaemonStopping,
    GetLog: LogTail,
    ListRooms: RoomsListed,
    RunReaper: RoomsReaped,
    CollectEnvironments: EnvironmentsCollected,
    EvictRoom: RoomEvicted,
    GetActorTree: ActorTree,
    OpenNotebook: NotebookJoined,
    CreateNotebook: NotebookJoined,
    AttachNotebook: NotebookJoined,
    LeaveRoom: RoomLeft,
    DescribeRoom: RoomDescribed,
    SaveNotebook: NotebookSaved,
    GetCell: CellShown,
    GetCells: CellsSummarized,
    CreateCell: CellCreated,
    SetCell: CellUpdated,
    ReplaceMatch: CellUpdated,
    ReplaceRegex: CellUpdated,
    DeleteCell: CellDeleted,
    MoveCell: CellMoved,
    ExecuteCell: ExecutionReported,
    GetExecution: ExecutionReported,
    InterruptKernel: InterruptSent,
    RestartKernel: RestartCompleted,
    ManageDependencies: DependenciesManaged,
    ShutdownKernelNow: KernelShutDown,
}
"""The reply each request type gets; get_cells in the json format is the one exception."""


def reply_type(request: object) -> type:
    """The reply type ``request`` is answered with."""
    if isinstance(request, GetCells) and request.format is CellsFormat.JSON:
        return CellsShown
    return REPLY_TYPES[type(request)]


_T = TypeVar("_T")


def decode_reply(frame: dict[str, Any], expected: type[_T]) -> _T | DaemonRefused:
    """The reply (or refusal) in a result or error frame, checked against ``expected``.

    Raises NbstageError(BAD_REPLY) naming what is wrong when the frame is neither.
    """
    kind = frame["type"]
    try:
        if kind == FrameKind.ERROR:
            return from_wire(DaemonRefused, frame.get("error"))
        if kind == FrameKind.RESULT:
            return from_wire(expected, frame.get("result"))
    except NbstageError as exc:
        what = "refusal" if kind == FrameKind.ERROR else expected.__name__
        raise NbstageError(
            ErrorCode.BAD_REPLY, f"the daemon sent a malformed {what}: {exc.message}"
        ) from None
    raise NbstageError(
        ErrorCode.BAD_REPLY, f"the daemon sent a {kind!r} frame where {expected.__name__} was due"
    )
