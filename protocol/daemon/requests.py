"""Requests a client may send to the daemon over its socket.

Each class is registered under its wire ``type`` with ``wire_request``
(``request_wire``), and ``decode_request`` turns a checked frame into one of these,
naming any bad field. Requests that carry ``notebook_id`` are answered by that
notebook's Room; the rest by the Daemon or by the socket edge itself.

The request classes live by topic (``daemon_requests``, ``room_requests``,
``cell_requests``, ``kernel_requests``); importing this module registers every one.
"""

from __future__ import annotations

from nbstage.protocol.daemon.cell_requests import (
    CellsFormat,
    ChangeCellTags,
    ClearOutputs,
    CreateCell,
    DeleteCell,
    GetCell,
    GetCells,
    MoveCell,
    ReplaceMatch,
    ReplaceRegex,
    SetCell,
    TagChange,
)
from nbstage.protocol.daemon.daemon_requests import (
    CollectEnvironments,
    EvictRoom,
    GetActorTree,
    GetIdentity,
    GetLog,
    GetStatus,
    ListClients,
    ListHosts,
    ListRooms,
    RunReaper,
    ShutdownDaemon,
    Watch,
)
from nbstage.protocol.daemon.dependency_modes import ApplyDependencies
from nbstage.protocol.daemon.kernel_requests import (
    ExecuteCell,
    GetExecution,
    InterruptKernel,
    ManageDependencies,
    RestartKernel,
    ShutdownKernelNow,
)
from nbstage.protocol.daemon.request_wire import (
    ENVELOPE,
    REQUEST_FIELDS,
    REQUEST_TYPES,
    WIRE_NAMES,
    decode_request,
    wire_request,
)
from nbstage.protocol.daemon.room_requests import (
    AttachNotebook,
    CreateNotebook,
    DescribeRoom,
    LeaveRoom,
    OpenNotebook,
    SaveNotebook,
)

__all__ = [
    "ENVELOPE",
    "REQUEST_FIELDS",
    "REQUEST_TYPES",
    "WIRE_NAMES",
    "ApplyDependencies",
    "AttachNotebook",
    "CellsFormat",
    "ChangeCellTags",
    "ClearOutputs",
    "CollectEnvironments",
    "CreateCell",
    "CreateNotebook",
    "DeleteCell",
    "DescribeRoom",
    "EvictRoom",
    "ExecuteCell",
    "GetActorTree",
    "GetCell",
    "GetCells",
    "GetExecution",
    "GetIdentity",
    "GetLog",
    "GetStatus",
    "InterruptKernel",
    "LeaveRoom",
    "ListClients",
    "ListHosts",
    "ListRooms",
    "ManageDependencies",
    "MoveCell",
    "OpenNotebook",
    "ReplaceMatch",
    "ReplaceRegex",
    "RestartKernel",
    "RunReaper",
    "SaveNotebook",
    "SetCell",
    "ShutdownDaemon",
    "ShutdownKernelNow",
    "TagChange",
    "Watch",
    "decode_request",
    "wire_request",
]
