"""The Room's part for the people who watch it in JupyterLab: the shared Y document
(shared_doc.py), made when the first person joins and kept while the room lives, so a
browser that comes back continues the same history.

A plain class that returns actions (room/actions.py). The Room calls ``mirror`` after
every message it handled: with nobody watching that is one attribute test, so the
agent pays nothing for the view (ADR 0004). It also holds the word to the sessions that
subscribed to the notebook as an MCP resource (change_beacon.py): both are the
document's watchers.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from nbstage.actors.daemon.notebook.document import Document
from nbstage.actors.daemon.room import person_edits
from nbstage.actors.daemon.room.actions import Action, Answer, Edited, Offload, Send
from nbstage.actors.daemon.room.change_beacon import ChangeBeacon
from nbstage.actors.daemon.room.journalling import Journalling
from nbstage.actors.daemon.room.peers import Peers
from nbstage.actors.daemon.room.shared_doc import SharedDoc, UnreadableMessage
from nbstage.protocol.common.errors import ErrorCode, NbstageError
from nbstage.protocol.daemon.lab import (
    JoinSharedDoc,
    PassSharedDocMessage,
    SharedDocAnswered,
    SharedDocPushed,
    from_text,
    to_text,
)
from nbstage.protocol.daemon_actors.edge import Origin
from nbstage.protocol.daemon_actors.room_followups import JournalAppended

log = logging.getLogger("nbstage.room")


@dataclass
class Said:
    """What one message of a person comes to."""

    answer: SharedDocAnswered
    records: list[dict[str, Any]]
    """The journal records of the person's edit, already applied to the Document."""
    pushes: list[Action]


class Sharing:
    def __init__(self) -> None:
        self.shared: SharedDoc | None = None
        self.beacon = ChangeBeacon()
        """The word to the daemon's watchers (sessions subscribed to the notebook as an MCP
        resource) that the document changed (change_beacon.py)."""

    @property
    def watched(self) -> bool:
        return self.shared is not None and bool(self.shared.people)

    def people(self) -> dict[str, int]:
        """The peers watching in JupyterLab (peer id → connection)."""
        return {} if self.shared is None else self.shared.people

    def join(self, origin: Origin, req: JoinSharedDoc, doc: Document, peers: Peers) -> Answer:
        """An attached peer on this connection becomes one of the people."""
        if peers.conns.get(req.peer_id) != origin.conn:
            raise NbstageError(
                ErrorCode.NOT_A_PEER,
                f"{req.peer_id} is not a peer of this room on this connection; attach first.",
            )
        if self.shared is None:
            self.shared = SharedDoc(doc)
        else:
            self.shared.mirror(doc)
        hello = self.shared.join(req.peer_id, origin.conn)
        return Answer(origin, SharedDocAnswered(to_text(hello), self.shared.session))

    def heard(self, req: PassSharedDocMessage, doc: Document, edge: Any) -> Said:
        """Apply a person's message; an edit is applied to ``doc`` as journal records.
        What goes on to the others is pushed through ``edge``, the room's socket edge."""
        shared = self.shared
        if shared is None or req.peer_id not in shared.people:
            raise NbstageError(ErrorCode.NOT_A_PEER, f"{req.peer_id} has not joined as a person.")
        try:
            heard = shared.receive(from_text(req.data))
        except UnreadableMessage as exc:
            refusal = f"Not a Y message this room takes: {exc}"
            raise NbstageError(ErrorCode.BAD_REQUEST, refusal) from None
        pushes = _pushes(edge, req.notebook_id, heard.relay, shared.others(req.peer_id))
        records = person_edits.records(doc, shared.edited_content(doc)) if heard.edited else []
        if records:
            person_edits.take(doc, records)
        answer = SharedDocAnswered(to_text(heard.replies), shared.session)
        return Said(answer, records, pushes)

    def mirror(
        self,
        doc: Document | None,
        peers: Peers,
        running: frozenset[str],
        edge: Any,
        notebook_id: str,
    ) -> list[Action]:
        """Everything the Room changed since the last call, to every person still here,
        pushed through ``edge`` as updates of the room ``notebook_id``."""
        shared = self.shared
        if shared is None or doc is None:
            return []
        for peer_id in [p for p in shared.people if p not in peers.labels]:
            shared.leave(peer_id)
        shared.marks.keep({p: label for p, label in peers.labels.items() if p not in shared.people})
        return _pushes(edge, notebook_id, shared.mirror(doc, running), shared.others(None))

    def worked_on(self, conn: int, cell_id: str | None, peers: Peers) -> None:
        """An agent on this connection edited or ran this cell: the people see it there."""
        shared = self.shared
        if shared is None or not shared.people:
            return
        for peer_id, peer_conn in peers.conns.items():
            if peer_conn == conn and peer_id not in shared.people:
                shared.marks.worked_on(peer_id, peers.labels[peer_id], cell_id)
                return


def _pushes(
    edge: Any, notebook_id: str, messages: list[bytes], to: list[tuple[str, int]]
) -> list[Action]:
    if not messages or not to:
        return []
    text = to_text(messages)
    return [Send(edge, SharedDocPushed(conn, notebook_id, peer_id, text)) for peer_id, conn in to]


def taken(said: Said, origin: Origin, keeper: Journalling, journals: bool) -> list[Action]:
    """What a person's message comes to: its relays, then the answer, which an edit holds
    back, in a journalled room, until its records are durable."""
    if not said.records:
        return [*said.pushes, Answer(origin, said.answer)]
    if not journals:
        return [*said.pushes, Edited(), Answer(origin, said.answer)]
    return [*said.pushes, Edited(), journalled(said.records, keeper, origin, said.answer)]


def journalled(
    records: list[dict[str, Any]], keeper: Journalling, origin: Origin, reply
) -> Offload:
    """One offload that appends a person's records in order; the answer goes once the
    last is durable."""
    numbered = [keeper.next_record(record) for record in records]
    store, notebook_id = keeper.store, keeper.notebook_id

    def append() -> None:
        for seq, data in numbered:
            store.append(notebook_id, seq, data)

    return keeper.work(JournalAppended(numbered[-1][0], origin, reply), append)
