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

import contextlib
import copy
import uuid
from dataclasses import dataclass, field
from typing import Any

from jupyter_ydoc.utils import cast_all
from pycrdt import (
    Awareness,
    Decoder,
    Doc,
    Map,
    YMessageType,
    YSyncMessageType,
    create_awareness_message,
    create_sync_message,
    create_update_message,
    write_message,
)

from nbstage.actors.daemon.notebook.cell_model import Cell
from nbstage.actors.daemon.notebook.document import CELL_ID, Document
from nbstage.actors.daemon.room import shared_build, shared_cells
from nbstage.actors.daemon.room.agent_marks import AgentMarks
from nbstage.actors.daemon.room.order_steps import Delete, steps
from nbstage.protocol.common.errors import NbstageError

QUERY_AWARENESS = 3
"""y-websocket's request for every awareness state (y-protocols' messageQueryAwareness)."""
EMPTY_UPDATE = b"\x00\x00"
EMPTY_STATE = b"\x00"
"""The state vector of a Y client that holds nothing yet."""
FEW_CELLS = 64
"""Up to this many changed cells the mirror finds each by its id; more, it walks them all."""
STEP2 = bytes((YMessageType.SYNC, YSyncMessageType.SYNC_STEP2))
KEEPALIVE = create_update_message(EMPTY_UPDATE)
"""The answer to a person's awareness renewal (every 15 s) that has none of the agents'
states to carry: y-websocket's provider closes and reconnects a connection that heard
nothing for 30 s, and a room where nothing changes says nothing otherwise (a reconnect
is a join, which a frozen document thaws for). An empty update changes nothing."""


class UnreadableMessage(ValueError):
    """A person's message is not a y-websocket message this room can apply."""


@dataclass
class Heard:
    """What one person's message asks of the Room."""

    replies: list[bytes] = field(default_factory=list)
    """For the sender alone."""
    relay: list[bytes] = field(default_factory=list)
    """For every other person in the room."""
    edited: bool = False
    """The notebook's content may have changed: read ``person_edits`` next."""


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
        self.revision = start.revision
        """The Document revision the Y document holds."""
        self._seen = built.seen
        self._pinned = {cell.id: cell.outputs for cell in start.cells}
        """The outputs lists whose identities ``_seen`` holds, kept alive until the cell is
        compared again: a list the Document let go and freed could otherwise lend its
        identity to a later one, and a cell changed twice between two mirrors would look
        unchanged."""
        self._source: Document | None = None
        """The Document the last mirror followed: the next one, if it follows the same,
        looks only at the cells it says changed since (``Document.changed_since``)."""
        self._ids = built.ids
        """The ids of the Y cells, in order, kept by watching the array (reading them
        back from the Y document costs a call per cell)."""
        self._metadata = start.metadata
        self._running: frozenset[str] = frozenset()
        self._heard = start.frozen is not None
        """A person's update was applied since the last mirror (or the document was made
        from a frozen one, whose cells the mirror must look at)."""
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
            (ycells, ycells.observe(self._track)),
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
        metadata = copy.deepcopy(self._metadata)
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
            list(self._ids),
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
        return doc.revision != self.revision or running != self._running or self._heard

    def mirror(self, doc: Document, running: frozenset[str] = frozenset()) -> list[bytes]:
        """Bring the Y document to ``doc`` in one transaction, cell by cell id; the
        update messages every person needs (none when nothing changed).

        Only what differs is written: cells created, deleted or moved are Y inserts and
        deletes (order_steps.py), and of the others only the cells whose content changed
        are touched, so an edit, an output or a new cell costs a cell, not the notebook.
        ``running``: the cells queued or running, whose ``execution_state`` is "running"
        (Lab's ``[*]``)."""
        if not self._moved(doc, running):
            return self._marked(False)
        order = list(map(CELL_ID, doc.cells))
        with self.ydoc.transaction():
            if doc.metadata != self._metadata:
                self._set_metadata(doc.metadata)
            inserted, deleted = self._restructure(doc, order)
            rewritten = set(inserted)
            compared = self._compared(doc, order, inserted)
            seen = {cell.id: shared_cells.fingerprint(cell) for _, cell in compared}
            for index, cell in compared:
                before = self._seen.get(cell.id) or shared_cells.unknown(cell)
                now = seen[cell.id]
                if (
                    cell.id not in inserted
                    and before != now
                    and self._update(index, cell, now, before)
                ):
                    rewritten.add(cell.id)
            self._mark_running(doc, running, (running ^ self._running) | (running & inserted))
        self._settle(doc, running, compared, seen, order, deleted)
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
        update = self.marks.states(self.notebook, self.awareness, renew, self._ids)
        return [] if update is None else [create_awareness_message(update)]

    def _compared(
        self, doc: Document, order: list[str], inserted: frozenset[str]
    ) -> list[tuple[int, Cell]]:
        """The cells the mirror must compare, with their indexes: the ones the Document
        says changed since the last mirror and the ones just inserted, or every cell
        when that is not known (another Document, or a person's update applied) or when
        many changed."""
        following = doc is self._source and not self._heard
        changed = doc.changed_since(self.revision) if following else None
        if changed is None or len(changed) + len(inserted) > FEW_CELLS:
            return list(enumerate(doc.cells))
        compared = []
        for cell_id in changed | inserted:
            with contextlib.suppress(ValueError):  # changed, then deleted
                index = order.index(cell_id)
                compared.append((index, doc.cells[index]))
        return sorted(compared, key=lambda pair: pair[0])

    def _settle(
        self,
        doc: Document,
        running: frozenset[str],
        compared: list[tuple[int, Cell]],
        seen: dict[str, shared_cells.Fingerprint],
        order: list[str],
        deleted: list[str],
    ) -> None:
        self.revision, self._running, self._heard, self._source = doc.revision, running, False, doc
        pinned = {cell.id: cell.outputs for _, cell in compared}
        if len(compared) == len(order):
            self._seen, self._pinned = seen, pinned
        else:
            for cell_id in deleted:
                self._seen.pop(cell_id, None)
                self._pinned.pop(cell_id, None)
            self._seen.update(seen)
            self._pinned.update(pinned)
            if len(self._seen) != len(order):
                self._seen = {cell_id: self._seen[cell_id] for cell_id in order}
                self._pinned = {cell_id: self._pinned[cell_id] for cell_id in order}
        if doc.metadata != self._metadata:
            self._metadata = copy.deepcopy(doc.metadata)

    def _restructure(self, doc: Document, order: list[str]) -> tuple[frozenset[str], list[str]]:
        """Insert, delete and move Y cells until their ids are the Document's; the ids
        of the cells inserted (with the Document's content), and of those deleted (a
        moved cell is both). A Y cell without an id, or repeating one before it, is
        deleted: nothing doubles."""
        if self._ids == order:
            return frozenset(), []
        ids = self._usable_ids()
        ycells, inserted, deleted = self.notebook.ycells, set(), []
        for step in steps(ids, order):
            if isinstance(step, Delete):  # from the last down: an index of ``ids``
                del ycells[step.index]
                deleted.append(ids[step.index])
            else:  # an insert's index is the cell's place in the Document
                ycells.insert(
                    step.index, self.notebook.create_ycell(doc.cells[step.index].to_json())
                )
                inserted.add(step.cell_id)
        return frozenset(inserted), deleted

    def _usable_ids(self) -> list[str]:
        """The Y cells' ids, a missing or repeated one made unlike any cell's."""
        ids = self._ids
        distinct = set(ids)
        if len(distinct) == len(ids) and None not in distinct:
            return ids  # type: ignore[return-value]
        seen: set[str | None] = set()
        usable: list[str] = []
        for index, cell_id in enumerate(ids):
            usable.append(f"\0{index}" if cell_id is None or cell_id in seen else cell_id)
            seen.add(cell_id)
        return usable

    def _set_metadata(self, metadata: dict[str, Any]) -> None:
        """The notebook's metadata, as YNotebook.set writes it."""
        metadata = copy.deepcopy(metadata)
        cast_all(metadata, int, float)
        metadata.setdefault("language_info", {"name": ""})
        metadata.setdefault("kernelspec", {"name": "", "display_name": ""})
        self.ydoc.get("meta", type=Map)["metadata"] = Map(metadata)

    def _track(self, event: Any) -> None:
        """Follow the Y cells' ids through every change of the array, ours or a person's."""
        at = 0
        for part in event.delta:
            if "retain" in part:
                at += part["retain"]
            elif "delete" in part:
                del self._ids[at : at + part["delete"]]
            elif "insert" in part:
                added = [shared_cells.id_of(ycell) for ycell in part["insert"]]
                self._ids[at:at] = added
                at += len(added)

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

    def _mark_running(self, doc: Document, running: frozenset[str], cells: frozenset[str]) -> None:
        for cell_id in cells:
            with contextlib.suppress(NbstageError):
                index = doc.index_of(cell_id)
                if doc.cells[index].cell_type == "code":
                    state = "running" if cell_id in running else "idle"
                    self.notebook.ycells[index]["execution_state"] = state
        self._running = running

    def _update(
        self,
        index: int,
        cell: Cell,
        now: shared_cells.Fingerprint,
        before: shared_cells.Fingerprint,
    ) -> bool:
        """Write what changed in one cell; whether its source was written again."""
        ycell = self.notebook.ycells[index]
        cell_type, source, outputs, count, metadata = now
        if cell_type != before[0]:
            self.notebook.set_cell(index, cell.to_json())
            return True
        if source != before[1]:
            self.notebook.set_cell(index, source=source)
        if metadata != before[4]:
            ycell["metadata"] = Map(copy.deepcopy(cell.metadata))
        if cell_type == "code":
            if count != before[3]:
                ycell["execution_count"] = count
            if outputs != before[2]:
                youtputs = ycell["outputs"]
                youtputs.clear()
                youtputs.extend([shared_cells.youtput(output) for output in cell.outputs])
        return source != before[1]

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
        for index, cell_id in enumerate(self._ids):
            cell = ours.get(cell_id) if cell_id is not None else None
            if cell is None or cell_id in touched or cell_id in seen:
                cells.append(shared_cells.cell_of(self.notebook.ycells[index]))
            else:
                cells.append(cell.to_json(include_outputs=False))
            seen.add(cell_id)
        return {"cells": cells}

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
        except Exception as exc:  # pycrdt raises several kinds on a bad update
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
