"""Who is in a Room: plain state the Room keeps beside the document (views.py reads it
for the Daemon and for describe_room), the notices each connection follows, and the
events a join or a leave sends to the edge."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable
from typing import Any

from nbstage.actors.daemon.room.actions import Action, Answer, Fail, ReportStatus, Send
from nbstage.actors.daemon.room.notices import NoticeBoard
from nbstage.protocol.common.errors import ErrorCode, NbstageError
from nbstage.protocol.daemon.replies import NotebookJoined, RoomLeft
from nbstage.protocol.daemon.requests import LeaveRoom
from nbstage.protocol.daemon_actors.edge import EventKind, Origin, RoomEventOccurred
from nbstage.protocol.daemon_actors.rooms import JoinRoom, StartRoom


class Peers:
    def __init__(self, notices: NoticeBoard) -> None:
        self.notices = notices
        self.config: StartRoom | None = None
        self.labels: dict[str, str] = {}
        """peer id → its label."""
        self.conns: dict[str, int] = {}
        """peer id → the daemon connection it joined on (the answers' ``Origin.conn``)."""
        self.idle_since: float | None = time.monotonic()
        self.joins_seen = 0

    def start(self, config: StartRoom) -> None:
        self.config = config

    def __bool__(self) -> bool:
        return bool(self.labels)

    def saw(self, join_seq: int) -> None:
        self.joins_seen = max(self.joins_seen, join_seq)

    def refuse_held(self, joins: Iterable[JoinRoom], error: NbstageError) -> list[Action]:
        """Joins held back for the start, refused: each counts as seen."""
        refused = []
        for join in joins:
            self.saw(join.join_seq)
            refused.append(Fail(join.origin, error))
        return refused

    def join(self, label: str, conn: int) -> str:
        """A new peer: its id; its connection follows the room's notices from now on."""
        peer_id = uuid.uuid4().hex[:12]
        self.labels[peer_id] = label
        self.conns[peer_id] = conn
        self.idle_since = None
        self.notices.follow(conn)
        return peer_id

    def welcomed(self, msg: JoinRoom, peer_id: str, facts: dict[str, Any]) -> list[Action]:
        """A join's answer, then the event the other peers see and a status report."""
        joined = NotebookJoined(**facts, peer_id=peer_id, created=msg.created)
        event = {"peer_id": peer_id, "label": msg.peer_label}
        return [
            Answer(msg.origin, joined),
            self.event(EventKind.PEER_JOINED, event),
            ReportStatus(),
        ]

    def leave(self, origin: Origin, req: LeaveRoom, seat: Any) -> list[Action]:
        """leave_room: the seat hears the room may be empty; the answer and event follow."""
        if req.peer_id not in self.labels:
            raise NbstageError(ErrorCode.NOT_A_PEER, f"{req.peer_id} is not in this room.")
        label = self.labels.pop(req.peer_id)
        conn = self.conns.pop(req.peer_id)
        if not self.labels:
            self.idle_since = time.monotonic()
        if conn not in self.conns.values():
            self.notices.unfollow(conn)
        left = self.event(EventKind.PEER_LEFT, {"peer_id": req.peer_id, "label": label})
        return [*seat.peer_left(), Answer(origin, RoomLeft()), left, ReportStatus()]

    def event(self, kind: EventKind, detail: dict[str, Any]) -> Send:
        return Send(self.config.edge, RoomEventOccurred(kind, self.config.notebook_id, detail))
