"""Where the Room's shared document stands, and its passage from one state to the next
(ADR 0004, items 14 and 19): none; building on a worker (from the Document, or thawed
from its frozen form); live; being frozen on a worker; frozen. The sharing part
(sharing.py) is this and the people's side.

While a build or a freeze is under way the Room goes on serving; the people's requests
(joins, messages that need the document) are held, in the order they came, and handed
back to the Room once the document has taken the Document's changes made meanwhile
(``built``, ``frozen_back``), and what the people watching lacked is pushed to them
first. The idle timer is one chain a live document (freezing.py's ``idle_step``);
activity only moves ``quiet_since``. Plain, returns actions (room/actions.py).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from nbstage.actors.daemon.notebook.document import Document
from nbstage.actors.daemon.room import freed_pages, shared_build
from nbstage.actors.daemon.room.actions import Action, Fail, Offload, Send, Wake
from nbstage.actors.daemon.room.agent_marks import AgentMarks
from nbstage.actors.daemon.room.freezing import (
    FreezeOutcome,
    Freezing,
    IdleStep,
    idle_step,
    outcome,
)
from nbstage.actors.daemon.room.peers import Peers
from nbstage.actors.daemon.room.shared_doc import SharedDoc
from nbstage.protocol.common.errors import ErrorCode, NbstageError, a_failure
from nbstage.protocol.daemon.lab import (
    JoinSharedDoc,
    PassSharedDocMessage,
    SharedDocPushed,
    to_text,
)
from nbstage.protocol.daemon.room_replies import SharedDocState, SharedDocView
from nbstage.protocol.daemon_actors.edge import Origin
from nbstage.protocol.daemon_actors.room_followups import (
    FreedPagesReleased,
    SharedDocBuilt,
    SharedDocFrozen,
    SharedDocIdle,
)

log = logging.getLogger("nbstage.room")


@dataclass
class Building:
    """A build under way: what it started from, and the people's requests held for it."""

    generation: int
    start: shared_build.Start
    frozen: shared_build.Frozen | None
    """What a thaw started from, kept again if it fails."""
    held: list[tuple[Origin, JoinSharedDoc | PassSharedDocMessage]] = field(default_factory=list)


class SharedLifecycle:
    def __init__(self) -> None:
        self.shared: SharedDoc | None = None
        self.building: Building | None = None
        self.frozen: shared_build.Frozen | None = None
        self.freezing: Freezing | None = None
        self.idle_secs = 30.0
        self.generation = 0
        """Moves at every build and every freeze: an idle timer, a build or a freeze of
        another generation is stale."""
        self.clock: Callable[[], float] = time.monotonic
        self.quiet_since = 0.0
        """When the live document last had a person's sync message, a join, a leave or a
        mirror with something to do: the idle timer reads it, so activity costs no timer
        of its own."""
        self.stalled_at: int | None = None
        """The Document's revision at which a mirror failed: none is asked for again
        until it moves."""
        self.mirror_due = False
        """A ``SharedDocMirrorDue`` is on its way back to the Room."""

    def _watching(self) -> tuple[dict[str, int], AgentMarks] | None:
        """The people and the agents' marks, wherever the document is: live, being frozen,
        frozen, or being made again."""
        if self.shared is not None:
            return self.shared.people, self.shared.marks
        if self.freezing is not None:
            return self.freezing.shared.people, self.freezing.shared.marks
        frozen = self.frozen if self.building is None else self.building.frozen
        return None if frozen is None else (frozen.people, frozen.marks)

    @property
    def watched(self) -> bool:
        return bool(self.people())

    def touch(self) -> None:
        self.quiet_since = self.clock()

    def behind(self, doc: Document | None, peers: Peers, running: frozenset[str]) -> bool:
        """Whether a person watches and ``mirror`` has something to do for them: what the
        Room changed, or a person or an agent gone. A document being made again is
        brought to the Document when it is back, so it is never behind."""
        watching = self._watching()
        if watching is None or doc is None or not watching[0] or self.building is not None:
            return False
        people, marks = watching
        gone = any(peer_id not in peers.labels for peer_id in (*people, *marks.marks)) or any(
            peer_id in people for peer_id in marks.marks
        )
        if self.shared is not None:
            return self.shared.behind(doc, running) or gone
        if self.freezing is not None:
            return self.freezing.shared.behind(doc, running) or gone
        return gone or self._moved_since_frozen(doc, running)

    def _moved_since_frozen(self, doc: Document, running: frozenset[str]) -> bool:
        """What a frozen document's people must see, which only a thaw can give them."""
        frozen = self.frozen
        assert frozen is not None
        return doc.revision != frozen.revision or bool(running) or frozen.marks.dirty

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
        watching = self._watching()
        return {} if watching is None else watching[0]

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

    def _hold(self, origin: Origin, req: Any, doc: Document) -> list[Action]:
        waiting = self._waiting()
        if waiting is not None:
            waiting.append((origin, req))
            return []
        return self._make(doc, [(origin, req)])

    def _make(self, doc: Document, held: list[tuple[Origin, Any]]) -> list[Action]:
        """Build the document, or thaw the frozen one, on a worker; ``held`` waits for it."""
        self.generation += 1
        frozen, self.frozen = self.frozen, None
        start = shared_build.start(doc) if frozen is None else shared_build.thaw(frozen, doc)
        self.building = Building(self.generation, start, frozen, held)
        return [Offload(SharedDocBuilt(self.generation), start.build)]

    def built(
        self,
        done: Any,
        doc: Document | None,
        running: frozenset[str] = frozenset(),
        edge: Any = None,
        notebook_id: str = "",
    ) -> tuple[list[Action], list[tuple[Origin, Any]]]:
        """The build came back: the document is taken and brought to ``doc`` (what the
        Room changed during the build, in one transaction; the people who stayed joined
        through a freeze get it through ``edge``), and the held requests go back to the
        Room, in order; a failed build refuses them. The idle timer is armed, and a
        worker gives back the pages the build's temporaries held (freed_pages.py)."""
        building = self.building
        if building is None or done.token.generation != building.generation:
            return [], []
        self.building = None
        if doc is None:
            closed = NbstageError(ErrorCode.SHUTTING_DOWN, "The notebook closed; open it again.")
            return self._refuse(building, closed), []
        if done.error is not None:
            log.error("the shared document could not be built: %s", done.error)
            if building.frozen is not None:
                # the frozen document stays behind: the Room's next message (this one's own
                # end first) would start the same thaw again, and again
                self.stalled_at = doc.revision
            failed = NbstageError(ErrorCode.INTERNAL, "the shared document could not be built")
            return self._refuse(building, failed), []
        frozen = building.frozen
        if frozen is None:
            self.shared = SharedDoc(done.result, building.start)
        else:
            kept = (frozen.session, frozen.marks, frozen.people, frozen.awareness)
            self.shared = SharedDoc(done.result, building.start, *kept)
        released = Offload(FreedPagesReleased(), freed_pages.release)
        return [*self._taken_live(doc, running, edge, notebook_id), released], building.held

    def _taken_live(
        self, doc: Document, running: frozenset[str], edge: Any, notebook_id: str
    ) -> list[Action]:
        """The live document, just taken (a build or a thaw back, a freeze taken back),
        brought to ``doc``: what changed goes to the people already joined, and the idle
        timer starts again. A mirror that fails is logged and stalls the next ones until
        the Document moves, as the Room's own do; the requests held for the document are
        served all the same."""
        shared = self.shared
        assert shared is not None
        self.touch()
        try:
            mirrored = shared.mirror(doc, running)
        except BaseException as exc:
            if not a_failure(exc):
                raise
            log.exception("the people's document did not take the changes")
            self.stalled_at, mirrored = doc.revision, []
        return [*pushed_to(edge, notebook_id, mirrored, shared.others(None)), self._idle_timer()]

    def _refuse(self, building: Building, error: NbstageError) -> list[Action]:
        """A build that came to nothing: its held requests are refused, and a frozen
        document it started from is kept, history and all, for the next join."""
        self.frozen = building.frozen
        return [Fail(origin, error) for origin, _ in building.held]

    def idle(
        self,
        due: SharedDocIdle,
        doc: Document | None,
        peers: Peers,
        running: frozenset[str] = frozenset(),
    ) -> list[Action]:
        """The idle timer (freezing.py's ``idle_step``): armed again while there was
        activity, or the document, brought to ``doc``, goes to a worker to be frozen;
        the Room does not touch it meanwhile. Its people stay joined."""
        shared = self.shared
        live = shared is not None and doc is not None
        watched = live and bool(shared and shared.people)
        busy = watched and (self.mirror_due or bool(running) or self.behind(doc, peers, running))
        quiet_for = self.clock() - self.quiet_since
        decided = idle_step(
            self.generation, due.generation, live, quiet_for, self.idle_secs, watched, busy
        )
        if decided.step is IdleStep.STALE or shared is None or doc is None:
            return []
        if decided.step is IdleStep.WAIT:
            return [Wake(decided.after, SharedDocIdle(self.generation))]
        self.generation += 1
        work = shared.detach(doc)
        self.freezing, self.shared = Freezing(self.generation, shared, work), None
        return [Offload(SharedDocFrozen(self.generation), work.freeze)]

    def frozen_back(
        self,
        done: Any,
        doc: Document | None,
        running: frozenset[str] = frozenset(),
        edge: Any = None,
        notebook_id: str = "",
    ) -> tuple[list[Action], list[tuple[Origin, Any]]]:
        """The freeze came back (freezing.py has what it comes to). Kept, the live
        document is let go, and a worker gives the pages it held back to the system
        (freed_pages.py). Taken back, the live document is brought to ``doc``, the people
        watching get what changed, and the requests held for it go back to the Room, in
        order, as after a build."""
        freezing = self.freezing
        under_way = None if freezing is None else freezing.generation
        held = bool(freezing and freezing.held)
        wanted = bool(freezing and freezing.wanted)
        failed = done.error is not None
        decided = outcome(under_way, done.token.generation, doc is not None, held, failed, wanted)
        if decided is FreezeOutcome.STALE or freezing is None:
            return [], []
        self.freezing = None
        if decided is FreezeOutcome.KEPT:
            self.frozen = done.result
            if not self.frozen.people:  # the last left while the worker froze it
                self.frozen.awareness = None
            return [Offload(FreedPagesReleased(), freed_pages.release)], []
        if decided is FreezeOutcome.CLOSED or doc is None:
            closed = NbstageError(ErrorCode.SHUTTING_DOWN, "The notebook closed; open it again.")
            return [Fail(origin, closed) for origin, _ in freezing.held], []
        if failed:
            log.error("the shared document could not be frozen: %s", done.error)
        self.shared = freezing.shared
        self.shared.reopen()
        return self._taken_live(doc, running, edge, notebook_id), freezing.held

    def _idle_timer(self) -> Wake:
        return Wake(self.idle_secs, SharedDocIdle(self.generation))


def pushed_to(
    edge: Any, notebook_id: str, messages: list[bytes], to: list[tuple[str, int]]
) -> list[Action]:
    if not messages or not to:
        return []
    text = to_text(messages)
    return [Send(edge, SharedDocPushed(conn, notebook_id, peer_id, text)) for peer_id, conn in to]
