"""The Room's shared document: its notebook as a Y document in JupyterLab's schema
(``jupyter_ydoc.YNotebook`` on ``pycrdt``), and the people who watch it.

A plain part, no actors: the Room hands it its Document after every change
(``mirror``) and every y-websocket message a person sent (``receive``); it returns
the messages to send, as bytes, and who gets them. The Document stays the truth: a
person's edit reaches it as journal records (``person_edits.py``), and the mirror
that follows writes back anything the Room did not take (outputs, say). The Y
document it takes was built by shared_build.py, on a worker thread when the Room asks.
ADR 0004 has the design.
"""

from __future__ import annotations

import copy
import uuid
from dataclasses import dataclass, field
from typing import Any

from pycrdt import (
    Awareness,
    Decoder,
    Doc,
    YMessageType,
    YSyncMessageType,
    create_awareness_message,
    create_sync_message,
    create_update_message,
    write_message,
)

from nbstage.actors.daemon.notebook.document import CELL_ID, Document
from nbstage.actors.daemon.room import shared_build, shared_cells
from nbstage.actors.daemon.room.agent_marks import AgentMarks
from nbstage.actors.daemon.room.cell_mirror import CellMirror
from nbstage.protocol.common.errors import ErrorCode, NbstageError, a_failure

QUERY_AWARENESS = 3
"""y-websocket's request for every awareness state (y-protocols' messageQueryAwareness)."""
EMPTY_UPDATE = b"\x00\x00"
EMPTY_STATE = b"\x00"
"""The state vector of a Y client that holds nothing yet."""
STEP2 = bytes((YMessageType.SYNC, YSyncMessageType.SYNC_STEP2))
KEEPALIVE = create_update_message(EMPTY_UPDATE)
"""The answer to a person's awareness renewal (every 15 s) that has none of the agents'
states to carry: y-websocket's provider closes and reconnects a connection that heard
nothing for 30 s, and a room where nothing changes says nothing otherwise (a reconnect
is a join, which a frozen document thaws for). An empty update changes nothing."""


class UnreadableMessage(ValueError):
    """A person's message is not a y-websocket message this room can apply."""

    def refused(self) -> NbstageError:
        """What the person's edge is told."""
        return NbstageError(ErrorCode.BAD_REQUEST, f"Not a Y message this room takes: {self}")


@dataclass
class Heard:
    """What one person's message asks of the Room."""

    replies: list[bytes] = field(default_factory=list)
    """For the sender alone."""
    relay: list[bytes] = field(default_factory=list)
    """For every other person in the room."""
    edited: bool = False
    """The notebook's content may have changed: read ``person_edits`` next."""
    stirred: bool = False
    """A person's awareness state changed: a frozen document thaws ahead of their
    keystroke (frozen_people.py's ``stirs``)."""


class SharedDoc:
    def __init__(
        self,
        built: shared_build.Built,
        start: shared_build.Start,
        session: str | None = None,
        marks: AgentMarks | None = None,
        people: dict[str, int] | None = None,
        awareness: Awareness | None = None,
    ) -> None:
        """Take a Y document built from ``start`` (shared_build.py); the Room's
        ``mirror`` then brings it to the Document as it is now. A document thawed while
        people watch keeps their ``people`` and ``awareness`` (Awareness reads nothing of
        its Doc but the client id, once)."""
        self.ydoc: Doc[Any] = built.ydoc
        self.notebook = built.notebook
        self.awareness = Awareness(self.ydoc) if awareness is None else awareness
        self.people: dict[str, int] = {} if people is None else people
        """peer id -> the daemon connection its messages go to."""
        self.session = session or uuid.uuid4().hex
        """This Y document's history: a browser that holds another must reload, never merge."""
        self.mirrored = CellMirror(self.notebook, built, start)
        """The Y cells as the Room last wrote them (cell_mirror.py)."""
        self._heard = start.frozen is not None
        """A person's update was applied since the last mirror (or the document was made
        from a frozen one, whose cells the mirror must look at)."""
        self._heard_cells: set[str] | None = None if self._heard else set()
        """The ids of the cells the people's updates since the last mirror changed inside
        or put in: with the Room's own changes, what the mirror compares. None: not known
        (a thawed document), every cell is compared."""
        self._touched: set[str] = set()
        """The ids of the cells the last person's update changed inside."""
        self._updates: list[bytes] = []
        self._whole: bytes | None = STEP2 + write_message(built.update)
        """The whole document as the worker encoded it: the answer to the first Y client's
        sync step 1 if it holds nothing yet, so the Room's thread does not encode it.
        Let go at the first sync step 1 or the next change, whichever comes first: kept
        while anyone watched, it was a copy of the document 1.2 times the notebook's JSON
        (ADR 0004, "What the live document weighs")."""
        self.marks = marks or AgentMarks()
        """The agents, as Lab's collaborators (agent_marks.py)."""
        self.marks.resend()
        self._watches: list[tuple[Any, Any]] = []
        self.reopen()

    @classmethod
    def of(cls, doc: Document) -> SharedDoc:
        """Built here, on the caller's thread (tests, benches)."""
        start = shared_build.start(doc)
        return cls(start.build(), start)

    def close(self) -> None:
        """Let the Y document go: its observers hold this object, and pycrdt holds them."""
        for target, subscription in self._watches:
            target.unobserve(subscription)
        self._watches = []

    def reopen(self) -> None:
        """Watch the Y document (again, after ``detach``: a freeze that was not kept)."""
        if self._watches:
            return
        ycells = self.notebook.ycells
        self._watches = [
            (self.ydoc, self.ydoc.observe(self._updated)),
            (ycells, ycells.observe(self.mirrored.track)),
        ]

    def detach(self, doc: Document) -> shared_build.ToFreeze:
        """Brought to ``doc``, every cell idle (the document made again from it starts
        with no cell running, as a built one does), and closed: what a worker freezes.
        Nothing may touch this document until the worker is done; ``reopen`` takes it
        back if the frozen form is not kept. The people watching, if any, and their
        awareness go with it and stay joined (a watched document is detached only when
        nothing is left to mirror to them)."""
        self.mirror(doc)
        self.close()
        cells = shared_cells.copies(doc.cells)
        metadata = copy.deepcopy(self.mirrored.metadata)
        awareness = self.awareness if self.people else None
        return shared_build.ToFreeze(
            self.ydoc,
            cells,
            metadata,
            self.session,
            self.marks,
            doc.revision,
            self.people,
            awareness,
            list(self.mirrored.ids),
        )

    def freeze(self, doc: Document) -> shared_build.Frozen:
        """``detach`` and the worker's part, both on the caller's thread (benches)."""
        return self.detach(doc).freeze()

    def _updated(self, event: Any) -> None:
        self._updates.append(event.update)
        self._whole = None

    # --- the Room's side --------------------------------------------------------------

    def behind(self, doc: Document, running: frozenset[str]) -> bool:
        """Whether ``mirror`` would write anything: the document, the running cells, a
        person's edit to settle, or an agent's mark moved since the last one."""
        return self._moved(doc, running) or self.marks.dirty or bool(self.marks.gone)

    def _moved(self, doc: Document, running: frozenset[str]) -> bool:
        """The document, the running cells or a person's edit moved since the last mirror."""
        return self.mirrored.moved(doc, running) or self._heard

    def mirror(self, doc: Document, running: frozenset[str] = frozenset()) -> list[bytes]:
        """Bring the Y document to ``doc`` in one transaction, cell by cell id; the
        update messages every person needs (none when nothing changed).

        Only what differs is written (cell_mirror.py). ``running``: the cells queued or
        running, whose ``execution_state`` is "running" (Lab's ``[*]``)."""
        if not self._moved(doc, running):
            return self._marked(False)
        rewritten = self.mirrored.write(doc, running, self._heard_cells)
        self._heard, self._heard_cells = False, set()
        updates = [create_update_message(u) for u in self._take()]
        marked = {mark.cell_id for mark in self.marks.marks.values()}
        return updates + self._marked(not rewritten.isdisjoint(marked))

    def _marked(self, changed: bool, renew: bool = False) -> list[bytes]:
        """The agents' awareness states that moved (``changed``: a cell they mark was
        written again, its source or the cell itself, which moves the cursor's anchor),
        after the update that moved them."""
        marks = self.marks
        if not (marks.marks or marks.gone) or not (changed or renew or marks.dirty or marks.gone):
            return []
        update = self.marks.states(self.notebook, self.awareness, renew, self.mirrored.ids)
        return [] if update is None else [create_awareness_message(update)]

    def _touch(self, events: list[Any]) -> None:
        """Note the cells a person's update changed inside (a path starts at the cell's
        index) or put in. Subscribed only while a person's update is applied: pycrdt
        builds the events of every transaction a deep observer sees, and the mirror's
        own (three to an execution) would pay for it."""
        for event in events:
            if event.path:
                ycells = [self.notebook.ycells[event.path[0]]]
            else:  # cells put in: new ones, moved ones, or one replaced under its id
                ycells = [y for part in event.delta for y in part.get("insert", ())]
            self._touched.update(i for i in map(shared_cells.id_of, ycells) if i is not None)

    def content(self) -> dict[str, Any]:
        """The notebook as the Y document holds it (nbformat, cells with their ids)."""
        return self.notebook.get()

    def edited_content(self, doc: Document) -> dict[str, Any]:
        """The cells as the Y document holds them after a person's update, for
        person_edits: the cells it changed or added read from the Y document, the others
        (whose Y content is what the mirror wrote) as ``doc`` has them, so a keystroke in
        a big notebook reads one cell back, not all of them. An id that repeats an
        earlier one is read as it is, and person_edits leaves it out."""
        ours = {cell.id: cell for cell in doc.cells}
        touched = self._touched
        cells, seen = [], set()
        for index, cell_id in enumerate(self.mirrored.ids):
            cell = ours.get(cell_id) if cell_id is not None else None
            if cell is None or cell_id in touched or cell_id in seen:
                cells.append(shared_cells.cell_of(self.notebook.ycells[index]))
            else:
                cells.append(cell.to_json(include_outputs=False))
            seen.add(cell_id)
        return {"cells": cells}

    def edited_in_place(self, doc: Document) -> dict[int, dict[str, Any]] | None:
        """After a person's update that added, deleted and moved no cell (the Y cells'
        ids are the Document's, in its order): the cells it changed inside, read back
        from the Y document, by index. None otherwise: ``edited_content`` then."""
        ids = self.mirrored.ids
        if ids != list(map(CELL_ID, doc.cells)):
            return None
        where = [(ids.index(cell_id), cell_id) for cell_id in self._touched]
        return {index: shared_cells.cell_of(self.notebook.ycells[index]) for index, _ in where}

    # --- the people's side ------------------------------------------------------------

    def join(self, peer_id: str, conn: int) -> list[bytes]:
        """A person arrives: the room's state vector (they answer with what it lacks)
        and the awareness states known so far."""
        self.people[peer_id] = conn
        hello = [create_sync_message(self.ydoc)]
        known = [c for c in self.awareness.states if c != self.awareness.client_id]
        if known:
            hello.append(create_awareness_message(self.awareness.encode_awareness_update(known)))
        return hello

    def leave(self, peer_id: str) -> None:
        self.people.pop(peer_id, None)

    def others(self, peer_id: str | None) -> list[tuple[str, int]]:
        return [(p, conn) for p, conn in self.people.items() if p != peer_id]

    def receive(self, message: bytes) -> Heard:
        """Apply one y-websocket message from a person; UnreadableMessage if it is not one."""
        try:
            return self._receive(message)
        except UnreadableMessage:
            raise
        except BaseException as exc:  # pycrdt raises several kinds on a bad update
            if not a_failure(exc):
                raise
            raise UnreadableMessage(f"the message could not be applied: {exc}") from None

    def _receive(self, message: bytes) -> Heard:
        if not message:
            raise UnreadableMessage("the message is empty")
        decoder = Decoder(message)
        kind = decoder.read_var_uint()
        if kind == YMessageType.SYNC:
            return self._sync(decoder.read_var_uint(), _payload(decoder))
        if kind == YMessageType.AWARENESS:
            update = _payload(decoder)
            self.awareness.apply_awareness_update(update, "person")
            renewed = self._marked(False, renew=True)
            relay = [create_awareness_message(update), *renewed]
            return Heard(replies=renewed or [KEEPALIVE], relay=relay)
        if kind == QUERY_AWARENESS:
            states = list(self.awareness.states)
            update = self.awareness.encode_awareness_update(states)
            return Heard(replies=[create_awareness_message(update)])
        raise UnreadableMessage(f"message type {kind} is not a y-websocket sync or awareness type")

    def _sync(self, step: int, payload: bytes) -> Heard:
        if step == YSyncMessageType.SYNC_STEP1:
            whole, self._whole = self._whole, None
            if whole is not None and payload == EMPTY_STATE:
                return Heard(replies=[whole])
            return Heard(replies=[STEP2 + write_message(self.ydoc.get_update(payload))])
        if step not in (YSyncMessageType.SYNC_STEP2, YSyncMessageType.SYNC_UPDATE):
            raise UnreadableMessage(f"sync step {step} is not 0, 1 or 2")
        if payload == EMPTY_UPDATE:
            return Heard()
        self._touched.clear()
        ycells = self.notebook.ycells
        listening = ycells.observe_deep(self._touch)
        try:
            self.ydoc.apply_update(payload)
        finally:
            ycells.unobserve(listening)
        self._heard = True
        if self._heard_cells is not None:
            self._heard_cells |= self._touched
        relay = [create_update_message(u) for u in self._take()]
        return Heard(relay=relay, edited=bool(relay))

    def _take(self) -> list[bytes]:
        taken, self._updates = self._updates, []
        return taken


def _payload(decoder: Decoder) -> bytes:
    payload = decoder.read_message()
    if payload is None:
        raise UnreadableMessage("the message ends before its payload")
    return payload
