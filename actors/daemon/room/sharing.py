"""The Room's part for the people who watch it in JupyterLab: the shared Y document
(shared_doc.py), built on a worker thread when the first person joins (shared_build.py),
frozen when it has been idle for ``shared_doc_idle_secs`` (no sync message from a person,
nothing of the Room's to mirror; on a worker thread too, freezing.py), watched or not,
and made again, with the same history, on the next join, the next sync message of a
person still watching or the next change they must see, so a browser continues it. The
people watching a frozen document stay joined; their awareness is answered without it,
and a change of their awareness state (a cursor moved) thaws it ahead of their
keystroke (frozen_people.py).

A plain class that returns actions (room/actions.py). After every message it handled
the Room asks whether the people are ``behind``; with nobody watching that is one
attribute test, so the agent pays nothing for the view (ADR 0004). When they are, the
``mirror`` runs once the answers of that message have gone out (``mirror_due``, an
``AfterMail``): an agent's call does not wait for the people's update. It also
holds the word to the sessions that subscribed to the notebook as an MCP resource
(change_beacon.py): both are the document's watchers.

Where the document stands, and its builds, freezes and thaws, are shared_lifecycle.py's.
"""

from __future__ import annotations

from typing import Any

from pycrdt import create_awareness_message

from nbstage.actors.daemon.notebook.document import Document
from nbstage.actors.daemon.room import frozen_people, person_edits
from nbstage.actors.daemon.room.actions import Action, Answer
from nbstage.actors.daemon.room.agent_marks import AgentMarks
from nbstage.actors.daemon.room.change_beacon import ChangeBeacon
from nbstage.actors.daemon.room.peers import Peers
from nbstage.actors.daemon.room.person_said import Said
from nbstage.actors.daemon.room.shared_doc import SharedDoc, UnreadableMessage
from nbstage.actors.daemon.room.shared_lifecycle import SharedLifecycle, pushed_to
from nbstage.protocol.common.errors import ErrorCode, NbstageError
from nbstage.protocol.daemon.lab import (
    JoinSharedDoc,
    PassSharedDocMessage,
    SharedDocAnswered,
    from_text,
    to_text,
)
from nbstage.protocol.daemon_actors.edge import Origin


class Sharing(SharedLifecycle):
    def __init__(self) -> None:
        super().__init__()
        self.beacon = ChangeBeacon()
        """The word to the daemon's watchers (sessions subscribed to the notebook as an MCP
        resource) that the document changed (change_beacon.py)."""

    def join(self, origin: Origin, req: JoinSharedDoc, doc: Document, peers: Peers) -> list[Action]:
        """An attached peer on this connection becomes one of the people; the first
        starts a build, and every join waits while one is under way."""
        if peers.conns.get(req.peer_id) != origin.conn:
            raise NbstageError(
                ErrorCode.NOT_A_PEER,
                f"{req.peer_id} is not a peer of this room on this connection; attach first.",
            )
        if self.shared is None:
            return self._hold(origin, req, doc)
        self.touch()
        hello = self.shared.join(req.peer_id, origin.conn)
        return [Answer(origin, SharedDocAnswered(to_text(hello), self.shared.session))]

    def aside(
        self, origin: Origin, req: PassSharedDocMessage, doc: Document, edge: Any
    ) -> list[Action] | None:
        """A person's message while the document is frozen or being frozen: awareness
        is answered without it (frozen_people.py), and when their state changed the
        thaw starts after the answer; a sync message waits, for a freeze under way to
        come back, or for the thaw it starts. None: not this part's."""
        freezing, frozen = self.freezing, self.frozen if self.building is None else None
        if freezing is not None:
            shared = freezing.shared
            people, awareness, marks, session = (
                shared.people,
                shared.awareness,
                shared.marks,
                shared.session,
            )
        elif frozen is not None and frozen.awareness is not None:
            people, awareness, marks = frozen.people, frozen.awareness, frozen.marks
            session = frozen.session
        else:
            return None
        if req.peer_id not in people:
            return None
        message = from_text(req.data)
        try:
            if frozen_people.needs_document(message):
                return None if freezing is not None else self._make(doc, [(origin, req)])
            heard = frozen_people.heard(message, awareness, marks)
        except UnreadableMessage as exc:
            raise exc.refused() from None
        others = [(p, conn) for p, conn in people.items() if p != req.peer_id]
        pushes = pushed_to(edge, req.notebook_id, heard.relay, others)
        answer = Answer(origin, SharedDocAnswered(to_text(heard.replies), session))
        return [*pushes, answer, *self._ahead(heard.stirred, doc)]

    def _ahead(self, stirred: bool, doc: Document) -> list[Action]:
        """A person's awareness state changed while the document is frozen or being
        frozen: they are about to type, so the thaw starts now, not at their keystroke
        (frozen_people.py's ``stirs``). A freeze under way is taken back when it returns;
        a frozen document is thawed, with nothing held for it."""
        if not stirred:
            return []
        if self.freezing is not None:
            self.freezing.wanted = True
            return []
        return self._make(doc, [])

    def heard(self, req: PassSharedDocMessage, doc: Document, edge: Any) -> Said:
        """Apply a person's message; an edit is applied to ``doc`` as journal records.
        What goes on to the others is pushed through ``edge``, the room's socket edge.
        A sync message is activity: the idle timer waits; awareness is not."""
        shared = self.shared
        if shared is None or req.peer_id not in shared.people:
            raise NbstageError(ErrorCode.NOT_A_PEER, f"{req.peer_id} has not joined as a person.")
        message = from_text(req.data)
        try:
            heard = shared.receive(message)
        except UnreadableMessage as exc:
            raise exc.refused() from None
        if message[:1] == SYNC:
            self.touch()
        pushes = pushed_to(edge, req.notebook_id, heard.relay, shared.others(req.peer_id))
        records = _records(doc, shared) if heard.edited else []
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
        pushed through ``edge`` as updates of the room ``notebook_id``. While the
        document is being frozen, a change its people must see takes it back when the
        freeze returns; frozen, it is thawed, and the thaw brings it to them. A mirror
        with something to do, or a person gone, is activity for the idle timer; one
        with nothing is not (the Room asks for one before every message of a person's,
        their awareness renewals included, which would otherwise keep it live)."""
        if doc is None:
            return []
        shared = self.shared
        if shared is not None:
            watching = len(shared.people)
            _keep(shared.people, shared.marks, peers)
            if len(shared.people) != watching or shared.behind(doc, running):
                self.touch()
            return pushed_to(edge, notebook_id, shared.mirror(doc, running), shared.others(None))
        if self.freezing is not None:
            detached = self.freezing.shared
            _keep(detached.people, detached.marks, peers)
            if detached.people and detached.behind(doc, running):
                self.freezing.wanted = True
            return []
        frozen = self.frozen if self.building is None else None
        if frozen is None or not frozen.people or frozen.awareness is None:
            return []
        _keep(frozen.people, frozen.marks, peers)
        if not frozen.people:
            frozen.awareness = None
            return []
        if self._moved_since_frozen(doc, running):
            return self._make(doc, [])
        ends = frozen.marks.renewed(frozen.awareness)
        to = list(frozen.people.items())
        return (
            []
            if ends is None
            else pushed_to(edge, notebook_id, [create_awareness_message(ends)], to)
        )

    def worked_on(self, conn: int, cell_id: str | None, peers: Peers) -> None:
        """An agent on this connection edited or ran this cell: the people see it there."""
        watching = self._watching()
        if watching is None or not watching[0]:
            return
        people, marks = watching
        for peer_id, peer_conn in peers.conns.items():
            if peer_conn == conn and peer_id not in people:
                marks.worked_on(peer_id, peers.labels[peer_id], cell_id)
                return


SYNC = b"\x00"
"""A y-websocket sync message's first byte (its type, as a var uint)."""


def _keep(people: dict[str, int], marks: AgentMarks, peers: Peers) -> None:
    """Only the people and the agents still in the room stay."""
    for peer_id in [p for p in people if p not in peers.labels]:
        people.pop(peer_id)
    marks.keep({p: label for p, label in peers.labels.items() if p not in people})


def _records(doc: Document, shared: SharedDoc) -> list[dict[str, Any]]:
    """A person's update as journal records: from the cells it changed when it moved
    none, a keystroke's cost in a notebook of any size; else from every cell."""
    changed = shared.edited_in_place(doc)
    quick = None if changed is None else person_edits.records_in_place(doc, changed)
    return quick if quick is not None else person_edits.records(doc, shared.edited_content(doc))
