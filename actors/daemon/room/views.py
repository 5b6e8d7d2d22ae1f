"""Read-only views of a Room for others: the status the Daemon keeps, the facts an
agent's join and describe_room answer with, the cells get_cell(s) shows. Pure: they read
the Room and its parts."""

from __future__ import annotations

import os
from typing import Any

from nbstage.protocol.daemon.replies import (
    CellShown,
    CellsShown,
    CellsSummarized,
    ExecutionCounts,
    KeepAlive,
    Latch,
    PeerView,
    RoomDescribed,
)
from nbstage.protocol.daemon.requests import CellsFormat, GetCell, GetCells
from nbstage.protocol.daemon_actors.rooms import RoomStatus


def facts(room: Any) -> dict[str, Any]:
    """The NotebookFacts fields, shared by NotebookJoined and RoomDescribed."""
    return {
        "notebook_id": room.config.notebook_id,
        "path": room.file.path,
        "ephemeral": room.file.ephemeral,
        "runtime": room.env.kernel_name,
        "kernel_refused": room.env.kernel_refused,
        "cell_count": len(room.doc.cells),
        "kernel_status": room.seat.state,
        "environment": room.env.shown(room.doc.metadata),
    }


def status(room: Any) -> RoomStatus:
    seat, env = room.seat, room.env
    return RoomStatus(
        room.config.notebook_id,
        room.file.path,
        room.file.ephemeral,
        tuple(room.peers.labels.items()),
        seat.state,
        seat.pid,
        room.peers.idle_since,
        room.peers.joins_seen,
        seat.actor_pid,
        env.kernel_name,
        env.running,
    )


def described(room: Any) -> RoomDescribed:
    life, seat = room.seat.life, room.seat
    unsaved = room.doc.revision != room.file.saved_revision or room.file.disk.missing
    attached = life.kernel_attached
    return RoomDescribed(
        **facts(room),
        peers=[
            PeerView(p, label, "person" if p in room.sharing.people() else "agent")
            for p, label in room.peers.labels.items()
        ],
        kernel_pid=seat.pid,
        kernel_actor_pid=seat.actor_pid,
        executions=ExecutionCounts(seat.runs.book.live_ids(), seat.runs.finished_count),
        latch=Latch(attached, life.generation),
        keep_alive=KeepAlive(
            room.config.settings.keep_alive_secs,
            seat.teardown_armed if attached else None,
            seat.teardown_armed == life.generation and not room.peers and attached,
        ),
        unsaved=unsaved,
        room_pid=os.getpid(),
        kept=room.close.kept if unsaved else None,
        shared_doc=room.sharing.view(),
    )


def cell(room: Any, req: GetCell) -> CellShown:
    return CellShown(room.doc.cell(req.cell_id).view())


def cells(room: Any, req: GetCells) -> CellsSummarized | CellsShown:
    doc, total = room.doc, len(room.doc.cells)
    if req.format is CellsFormat.SUMMARY:
        return CellsSummarized(doc.summaries(req.start, req.count), total)
    metadata = doc.metadata if req.start == 0 else None
    return CellsShown(doc.cells_json(req.start, req.count, req.include_outputs), total, metadata)
