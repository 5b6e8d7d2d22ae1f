"""The Room's part for the people who watch it in JupyterLab: the shared Y document
(shared_doc.py), built on a worker thread when the first person joins (shared_build.py),
frozen when nobody has watched for ``shared_doc_idle_secs`` (on a worker thread too,
freezing.py) and made again, with the same history, on the next join, so a browser that
comes back continues it.

A plain class that returns actions (room/actions.py). After every message it handled
the Room asks whether the people are ``behind``; with nobody watching that is one
attribute test, so the agent pays nothing for the view (ADR 0004). When they are, the
``mirror`` runs once the answers of that message have gone out (``mirror_due``, an
``AfterMail``): an agent's call does not wait for the people's update. It also
holds the word to the sessions that subscribed to the notebook as an MCP resource
(change_beacon.py): both are the document's watchers.

While a build or a freeze is under way the Room goes on serving; the people's requests
(joins, messages) are held, in the order they came, and handed back to the Room once the
document has taken the Document's changes made meanwhile (``built``, ``frozen_back``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from nbstage.actors.daemon.notebook.document import Document
from nbstage.actors.daemon.room import freed_pages, person_edits, shared_build
from nbstage.actors.daemon.room.actions import Action, Answer, Edited, Fail, Offload, Send, Wake
from nbstage.actors.daemon.room.change_beacon import ChangeBeacon
from nbstage.actors.daemon.room.freezing import FreezeOutcome, Freezing, outcome
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
from nbstage.protocol.daemon.room_replies import SharedDocState, SharedDocView
from nbstage.protocol.daemon_actors.edge import Origin
from nbstage.protocol.daemon_actors.room_followups import (
    FreedPagesReleased,
    JournalAppended,
    SharedDocBuilt,
    SharedDocFrozen,
    SharedDocIdle,
)

log = logging.getLogger("nbstage.room")


@dataclass
class Said:
    """What one message of a person comes to."""

    answer: SharedDocAnswered
    records: list[dict[str, Any]]
    """The journal records of the person's edit, already applied to the Document."""
    pushes: list[Action]


@dataclass
class Building:
    """A build under way: what it started from, and the people's requests held for it."""

    generation: int
    start: shared_build.Start
    frozen: shared_build.Frozen | None
    """What a thaw started from, kept again if it fails."""
    held: list[tuple[Origin, JoinSharedDoc | PassSharedDocMessage]] = field(default_factory=list)


class Sharing:
    def __init__(self) -> None:
        self.shared: SharedDoc | None = None
        self.building: Building | None = None
        self.frozen: shared_build.Frozen | None = None
        self.freezing: Freezing | None = None
        self.idle_secs = 30.0
        self.generation = 0
        """Moves at every build, every freeze and every join: an idle timer, a build or a
        freeze of another generation is stale."""
        self.mirror_due = False
        """A ``SharedDocMirrorDue`` is on its way back to the Room."""
        self.stalled_at: int | None = None
        """The Document's revision at which a mirror failed: none is asked for again
        until it moves."""
        self.beacon = ChangeBeacon()
        """The word to the daemon's watchers (sessions subscribed to the notebook as an MCP
        resource) that the document changed (change_beacon.py)."""

    @property
    def watched(self) -> bool:
        return self.shared is not None and bool(self.shared.people)

    def behind(self, doc: Document | None, peers: Peers, running: frozenset[str]) -> bool:
        """Whether a person watches and ``mirror`` has something to do for them: what the
        Room changed, or a person or an agent gone."""
        shared = self.shared
        if shared is None or doc is None or not shared.people:
            return False
        marks = shared.marks.marks
        return (
            shared.behind(doc, running)
            or any(peer_id not in peers.labels for peer_id in (*shared.people, *marks))
            or any(peer_id in shared.people for peer_id in marks)
        )

    def view(self) -> SharedDocView:
        if self.building is not None:
            return SharedDocView(SharedDocState.BUILDING)
        if self.freezing is not None:
            return SharedDocView(SharedDocState.FREEZING)
        if self.shared is not None:
            return SharedDocView(SharedDocState.LIVE)
        if self.frozen is not None:
            return SharedDocView(SharedDocState.FROZEN, self.frozen.size)
        return SharedDocView(SharedDocState.NONE)

    def people(self) -> dict[str, int]:
        """The peers watching in JupyterLab (peer id → connection)."""
        return {} if self.shared is None else self.shared.people

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
        self.generation += 1
        hello = self.shared.join(req.peer_id, origin.conn)
        return [Answer(origin, SharedDocAnswered(to_text(hello), self.shared.session))]

    def holds(self, origin: Origin, req: PassSharedDocMessage) -> bool:
        """A person's message waits while a build or a freeze is under way."""
        waiting = self._waiting()
        if waiting is None:
            return False
        waiting.append((origin, req))
        return True

    def _waiting(self) -> list[tuple[Origin, Any]] | None:
        """Where the people's requests wait: a build's or a freeze's, if one is under way."""
        if self.building is not None:
            return self.building.held
        return None if self.freezing is None else self.freezing.held

    def refuse_held(self, error: NbstageError) -> list[Action]:
        """The room is closing: the people's requests held for a build or a freeze are
        refused now (the room may end before the work is back); the work goes on, and
        what it brings back is kept, should the close be called off."""
        waiting = self._waiting()
        if not waiting:
            return []
        refused = [Fail(origin, error) for origin, _ in waiting]
        waiting.clear()
        return refused

    def _hold(self, origin: Origin, req: JoinSharedDoc, doc: Document) -> list[Action]:
        waiting = self._waiting()
        if waiting is not None:
            waiting.append((origin, req))
            return []
        self.generation += 1
        frozen, self.frozen = self.frozen, None
        start = shared_build.start(doc) if frozen is None else shared_build.thaw(frozen, doc)
        self.building = Building(self.generation, start, frozen, [(origin, req)])
        return [Offload(SharedDocBuilt(self.generation), start.build)]

    def built(
        self, done: Any, doc: Document | None, running: frozenset[str] = frozenset()
    ) -> tuple[list[Action], list[tuple[Origin, Any]]]:
        """The build came back: the document is taken and brought to ``doc`` (what the
        Room changed during the build, in one transaction), and the held requests go
        back to the Room, in order; a failed build refuses them. The idle timer is
        armed, for a build nobody joins in the end, and a worker gives back the pages
        the build's temporaries held (freed_pages.py)."""
        building = self.building
        if building is None or done.token.generation != building.generation:
            return [], []
        self.building = None
        if doc is None:
            closed = NbstageError(ErrorCode.SHUTTING_DOWN, "The notebook closed; open it again.")
            return self._refuse(building, closed), []
        if done.error is not None:
            log.error("the shared document could not be built: %s", done.error)
            failed = NbstageError(ErrorCode.INTERNAL, "the shared document could not be built")
            return self._refuse(building, failed), []
        frozen = building.frozen
        session, marks = (None, None) if frozen is None else (frozen.session, frozen.marks)
        self.shared = SharedDoc(done.result, building.start, session, marks)
        self.shared.mirror(doc, running)
        released = Offload(FreedPagesReleased(), freed_pages.release)
        return [self._idle_timer(), released], building.held

    def _refuse(self, building: Building, error: NbstageError) -> list[Action]:
        """A build that came to nothing: its held requests are refused, and a frozen
        document it started from is kept, history and all, for the next join."""
        self.frozen = building.frozen
        return [Fail(origin, error) for origin, _ in building.held]

    def idle(self, due: SharedDocIdle, doc: Document | None) -> list[Action]:
        """Nobody has joined since the timer was armed: the document, brought to ``doc``,
        goes to a worker to be frozen; the Room does not touch it meanwhile."""
        shared = self.shared
        if due.generation != self.generation or shared is None or shared.people or doc is None:
            return []
        self.generation += 1
        work = shared.detach(doc)
        self.freezing, self.shared = Freezing(self.generation, shared, work), None
        return [Offload(SharedDocFrozen(self.generation), work.freeze)]

    def frozen_back(
        self, done: Any, doc: Document | None, running: frozenset[str] = frozenset()
    ) -> tuple[list[Action], list[tuple[Origin, Any]]]:
        """The freeze came back (freezing.py has what it comes to). Kept, the live
        document is let go, and a worker gives the pages it held back to the system
        (freed_pages.py). Taken back, the live document is brought to ``doc`` and the
        requests held for it go back to the Room, in order, as after a build."""
        freezing = self.freezing
        under_way = None if freezing is None else freezing.generation
        held = bool(freezing and freezing.held)
        failed = done.error is not None
        decided = outcome(under_way, done.token.generation, doc is not None, held, failed)
        if decided is FreezeOutcome.STALE or freezing is None:
            return [], []
        self.freezing = None
        if decided is FreezeOutcome.KEPT:
            self.frozen = done.result
            return [Offload(FreedPagesReleased(), freed_pages.release)], []
        if decided is FreezeOutcome.CLOSED or doc is None:
            closed = NbstageError(ErrorCode.SHUTTING_DOWN, "The notebook closed; open it again.")
            return [Fail(origin, closed) for origin, _ in freezing.held], []
        if failed:
            log.error("the shared document could not be frozen: %s", done.error)
        self.shared = freezing.shared
        self.shared.reopen()
        self.shared.mirror(doc, running)
        return [self._idle_timer()], freezing.held

    def _idle_timer(self) -> Wake:
        return Wake(self.idle_secs, SharedDocIdle(self.generation))

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
        pushed through ``edge`` as updates of the room ``notebook_id``. The last person
        gone arms the idle timer."""
        shared = self.shared
        if shared is None or doc is None:
            return []
        for peer_id in [p for p in shared.people if p not in peers.labels]:
            shared.leave(peer_id)
        shared.marks.keep({p: label for p, label in peers.labels.items() if p not in shared.people})
        pushes = _pushes(edge, notebook_id, shared.mirror(doc, running), shared.others(None))
        return pushes if shared.people else [*pushes, self._idle_timer()]

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
