"""What the daemon answers to each request of ``protocol/daemon/requests.py``.

A request is answered by exactly one reply type (``reply_type``), or refused with
:class:`DaemonRefused`. The daemon's actors and its socket edge build these and
encode them with ``to_wire``; every client (the session child, the CLI, the admin
console, the harness) decodes each result frame with ``decode_reply``, through
``conversation.py``, into the type its request expects, so a malformed answer fails
there, once, with the field named. The wire shapes are plain JSON objects, which
tests may also read as such.

The reply classes live by topic (``daemon_replies``, ``room_replies``, ``cell_replies``,
``kernel_replies``); this module gathers them, so a reader of the conversation imports
them from here.
"""

from __future__ import annotations

from typing import Any, TypeVar

from nbstage.protocol.common.codec import from_wire
from nbstage.protocol.common.errors import ErrorCode, NbstageError
from nbstage.protocol.common.frozen import frozen
from nbstage.protocol.daemon.cell_replies import (
    CellCreated,
    CellDeleted,
    CellMoved,
    CellShown,
    CellsShown,
    CellsSummarized,
    CellSummary,
    CellTagsChanged,
    CellUpdated,
    CellView,
    OutputsCleared,
)
from nbstage.protocol.daemon.daemon_replies import (
    ActorRole,
    ActorTree,
    ClientsListed,
    DaemonIdentity,
    DaemonStatus,
    DaemonStopping,
    EnvironmentsCollected,
    Heartbeat,
    HostsListed,
    HostView,
    KeptRoom,
    KernelNode,
    LogTail,
    PeerView,
    RoomCounts,
    RoomEvicted,
    RoomNode,
    RoomsListed,
    RoomsReaped,
    RoomView,
)
from nbstage.protocol.daemon.frames import FrameKind
from nbstage.protocol.daemon.kernel_replies import (
    DependenciesApplied,
    DependenciesManaged,
    DependencyRemoval,
    DependencySide,
    DependencyTrust,
    ExecutionReported,
    ExecutionView,
    InterruptSent,
    KernelShutDown,
    RestartCompleted,
)
from nbstage.protocol.daemon.requests import (
    AttachNotebook,
    CellsFormat,
    ChangeCellTags,
    ClearOutputs,
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
    ListHosts,
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
from nbstage.protocol.daemon.room_replies import (
    ExecutionCounts,
    KeepAlive,
    Latch,
    NotebookFacts,
    NotebookJoined,
    NotebookSaved,
    RoomDescribed,
    RoomLeft,
)

__all__ = [
    "REPLY_TYPES",
    "ActorRole",
    "ActorTree",
    "CellCreated",
    "CellDeleted",
    "CellMoved",
    "CellShown",
    "CellSummary",
    "CellTagsChanged",
    "CellUpdated",
    "CellView",
    "CellsShown",
    "CellsSummarized",
    "ClientsListed",
    "DaemonIdentity",
    "DaemonRefused",
    "DaemonStatus",
    "DaemonStopping",
    "DependenciesApplied",
    "DependenciesManaged",
    "DependencyRemoval",
    "DependencySide",
    "DependencyTrust",
    "EnvironmentsCollected",
    "ExecutionCounts",
    "ExecutionReported",
    "ExecutionView",
    "Heartbeat",
    "HostView",
    "HostsListed",
    "InterruptSent",
    "KeepAlive",
    "KeptRoom",
    "KernelNode",
    "KernelShutDown",
    "Latch",
    "LogTail",
    "NotebookFacts",
    "NotebookJoined",
    "NotebookSaved",
    "OutputsCleared",
    "PeerView",
    "RestartCompleted",
    "RoomCounts",
    "RoomDescribed",
    "RoomEvicted",
    "RoomLeft",
    "RoomNode",
    "RoomView",
    "RoomsListed",
    "RoomsReaped",
    "decode_reply",
    "reply_type",
]


@frozen
class DaemonRefused:
    """Any request can be refused: the error object of an error frame."""

    code: ErrorCode
    message: str
    """A sentence for people that says what to do next."""


REPLY_TYPES: dict[type, type] = {
    GetIdentity: DaemonIdentity,
    GetStatus: DaemonStatus,
    Watch: Heartbeat,
    ListClients: ClientsListed,
    ShutdownDaemon: DaemonStopping,
    GetLog: LogTail,
    ListHosts: HostsListed,
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
    ClearOutputs: OutputsCleared,
    ChangeCellTags: CellTagsChanged,
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
