"""Read-only views of a Room for others: the status the Daemon keeps, the facts an
agent's join and describe_room answer with. Pure: they read the Room and its parts."""

from __future__ import annotations

import os
from typing import Any

from nbstage.protocol.daemon.replies import (
    ExecutionCounts,
    KeepAlive,
    Latch,
    PeerView,
    RoomDescribed,
)
from nbstage.protocol.daemon_actors.rooms import RoomStatus


def facts(room: Any) -> dict[str, Any]:
    """The NotebookFacts fields, shared by NotebookJoined and RoomDescribed."""
    return {
        "notebook_id": room.notebook_id,
        "path": room.path,
        "ephemeral": room.ephemeral,
        "runtime": room.env.kernel_name,
        "kernel_refused": room.env.kernel_refused,
        "cell_count": len(room.doc.cells),
        "kernel_status": room.seat.state,
        "environment": room.env.shown(room.doc.metadata),
    }


def status(room: Any) -> RoomStatus:
    seat, env = room.seat, room.env
    return RoomStatus(
        room.notebook_id,
        room.path,
        room.ephemeral,
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
    unsaved = room.doc.revision != room.file.saved_revision or room.file.missing
    attached = life.kernel_attached
    return RoomDescribed(
        **facts(room),
        peers=[PeerView(p, label) for p, label in room.peers.labels.items()],
        kernel_pid=seat.pid,
        kernel_actor_pid=seat.actor_pid,
        executions=ExecutionCounts(seat.book.live_ids(), seat.finished_count),
        latch=Latch(attached, life.generation),
        keep_alive=KeepAlive(
            room.config.settings.keep_alive_secs,
            seat.teardown_armed if attached else None,
            seat.teardown_armed == life.generation and not room.peers and attached,
        ),
        unsaved=unsaved,
        room_pid=os.getpid(),
        kept=room.close.kept if unsaved else None,
    )
