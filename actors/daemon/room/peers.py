"""Who is in a Room, and how its closing stands: plain state the Room keeps beside the
document (views.py reads it for the Daemon and for describe_room)."""

from __future__ import annotations

import time
import uuid
from typing import Any

from nbstage.protocol.common.errors import ErrorCode, NbstageError
from nbstage.protocol.daemon.replies import KeptRoom
from nbstage.protocol.daemon_actors.rooms import RoomClosed


class Peers:
    def __init__(self) -> None:
        self.labels: dict[str, str] = {}
        """peer id → its label."""
        self.conns: dict[str, int] = {}
        """peer id → the daemon connection it joined on (the answers' ``Origin.conn``)."""
        self.idle_since: float | None = time.monotonic()
        self.joins_seen = 0

    def __bool__(self) -> bool:
        return bool(self.labels)

    def saw(self, join_seq: int) -> None:
        self.joins_seen = max(self.joins_seen, join_seq)

    def join(self, label: str, conn: int) -> str:
        peer_id = uuid.uuid4().hex[:12]
        self.labels[peer_id] = label
        self.conns[peer_id] = conn
        self.idle_since = None
        return peer_id

    def leave(self, peer_id: str) -> tuple[str | None, int | None]:
        """(its label, its connection when no other peer is on it); no label: not a peer."""
        label = self.labels.pop(peer_id, None)
        conn = self.conns.pop(peer_id, None)
        if not self.labels:
            self.idle_since = time.monotonic()
        return label, None if conn in self.conns.values() else conn


class Closing:
    def __init__(self) -> None:
        self.by: Any = None
        """Who asked this room to close; from then on it acknowledges no mutation."""
        self.kept: KeptRoom | None = None
        """Why the reaper kept this room instead of removing it, shown while edits are unsaved."""
        self.report: RoomClosed | None = None
        """The close's outcome, held until the seat's kernels have stopped."""


def closing_error(outcome: str) -> NbstageError:
    return NbstageError(
        ErrorCode.SHUTTING_DOWN, f"This notebook is closing, so {outcome}; try again."
    )
