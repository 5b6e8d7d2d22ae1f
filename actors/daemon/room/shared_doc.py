"""The Room's shared document: its notebook as a Y document in JupyterLab's schema
(``jupyter_ydoc.YNotebook`` on ``pycrdt``), and the people who watch it.

A plain part, no actors: the Room hands it its Document after every change
(``mirror``) and every y-websocket message a person sent (``receive``); it returns
the messages to send, as bytes, and who gets them. The Document stays the truth: a
person's edit reaches it as journal records (``person_edits.py``), and the mirror
that follows writes back anything the Room did not take (outputs, say).
ADR 0004 has the design.
"""

from __future__ import annotations

import contextlib
import copy
import uuid
from dataclasses import dataclass, field
from typing import Any

import orjson
from jupyter_ydoc import YNotebook
from pycrdt import (
    Awareness,
    Decoder,
    Doc,
    Map,
    Text,
    YMessageType,
    YSyncMessageType,
    create_awareness_message,
    create_sync_message,
    create_update_message,
    write_message,
)

from nbstage.actors.daemon.notebook.cell_model import Cell
from nbstage.actors.daemon.notebook.document import Document
from nbstage.actors.daemon.room.agent_marks import AgentMarks
from nbstage.protocol.common.errors import NbstageError

QUERY_AWARENESS = 3
"""y-websocket's request for every awareness state (y-protocols' messageQueryAwareness)."""
EMPTY_UPDATE = b"\x00\x00"


Fingerprint = tuple[str, str, tuple[int, int], int | None, bytes]
"""A cell as the mirror last wrote it: type, source, outputs (identity, length), count,
metadata (as sorted JSON)."""


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
    def __init__(self, doc: Document) -> None:
        self.ydoc: Doc[Any] = Doc()
        self.notebook = YNotebook(self.ydoc)
        self.awareness = Awareness(self.ydoc)
        self.people: dict[str, int] = {}
        """peer id -> the daemon connection its messages go to."""
        self.session = uuid.uuid4().hex
        """This Y document's history: a browser that holds another must reload, never merge."""
        self.revision = -1
        """The Document revision the Y document holds."""
        self._seen: dict[str, Fingerprint] = {}
        self._order: list[str] = []
        self._metadata: dict[str, Any] = {}
        self._running: frozenset[str] = frozenset()
        self._updates: list[bytes] = []
        self.marks = AgentMarks()
        """The agents, as Lab's collaborators (agent_marks.py)."""
        self.ydoc.observe(lambda event: self._updates.append(event.update))
        self.mirror(doc)

    # --- the Room's side --------------------------------------------------------------

    def mirror(self, doc: Document, running: frozenset[str] = frozenset()) -> list[bytes]:
        """Bring the Y document to ``doc`` in one transaction, cell by cell id; the
        update messages every person needs (none when nothing changed).

        When the cells and their order are the same, only the cells whose content
        changed are touched (an edit or an output costs one cell, not the notebook);
        otherwise YNotebook.set merges the whole notebook by cell id. ``running``: the
        cells queued or running, whose ``execution_state`` is "running" (Lab's ``[*]``)."""
        if doc.revision == self.revision and running == self._running:
            return self._marked(False)
        self.revision = doc.revision
        seen = {cell.id: _fingerprint(cell) for cell in doc.cells}
        order = list(seen)
        with self.ydoc.transaction():
            changed = running ^ self._running
            if order != self._order or doc.metadata != self._metadata:
                self.notebook.set(doc.to_json())
                changed = running | self._running
            else:
                for index, cell in enumerate(doc.cells):
                    if self._seen[cell.id] != seen[cell.id]:
                        self._update(index, cell, self._seen[cell.id])
            self._mark_running(doc, running, changed)
        self._seen, self._order, self._metadata = seen, order, dict(doc.metadata)
        updates = [create_update_message(u) for u in self._take()]
        return updates + self._marked(bool(updates))

    def _marked(self, changed: bool, renew: bool = False) -> list[bytes]:
        """The agents' awareness states that moved (a cell they mark may have been
        rewritten by ``changed``), after the update that moved them."""
        marks = self.marks
        if not (marks.marks or marks.gone) or not (changed or renew or marks.dirty):
            return []
        update = self.marks.states(self.notebook, self.awareness, renew, self._order)
        return [] if update is None else [create_awareness_message(update)]

    def _mark_running(self, doc: Document, running: frozenset[str], cells: frozenset[str]) -> None:
        for cell_id in cells:
            with contextlib.suppress(NbstageError):
                index = doc.index_of(cell_id)
                if doc.cells[index].cell_type == "code":
                    state = "running" if cell_id in running else "idle"
                    self.notebook.ycells[index]["execution_state"] = state
        self._running = running

    def _update(self, index: int, cell: Cell, before: Fingerprint) -> None:
        ycell = self.notebook.ycells[index]
        cell_type, source, outputs, count, metadata = _fingerprint(cell)
        if cell_type != before[0]:
            self.notebook.set_cell(index, cell.to_json())
            return
        if source != before[1]:
            self.notebook.set_cell(index, source=source)
        if metadata != before[4]:
            ycell["metadata"] = Map(copy.deepcopy(cell.metadata))
        if cell_type != "code":
            return
        if count != before[3]:
            ycell["execution_count"] = count
        if outputs != before[2]:
            youtputs = ycell["outputs"]
            youtputs.clear()
            youtputs.extend([_youtput(output) for output in cell.outputs])

    def content(self) -> dict[str, Any]:
        """The notebook as the Y document holds it (nbformat, cells with their ids)."""
        return self.notebook.get()

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
            return Heard(replies=renewed, relay=[create_awareness_message(update), *renewed])
        if kind == QUERY_AWARENESS:
            states = list(self.awareness.states)
            update = self.awareness.encode_awareness_update(states)
            return Heard(replies=[create_awareness_message(update)])
        raise UnreadableMessage(f"message type {kind} is not a y-websocket sync or awareness type")

    def _sync(self, step: int, payload: bytes) -> Heard:
        if step == YSyncMessageType.SYNC_STEP1:
            step2 = bytes((YMessageType.SYNC, YSyncMessageType.SYNC_STEP2))
            return Heard(replies=[step2 + write_message(self.ydoc.get_update(payload))])
        if step not in (YSyncMessageType.SYNC_STEP2, YSyncMessageType.SYNC_UPDATE):
            raise UnreadableMessage(f"sync step {step} is not 0, 1 or 2")
        if payload == EMPTY_UPDATE:
            return Heard()
        self.ydoc.apply_update(payload)
        relay = [create_update_message(u) for u in self._take()]
        return Heard(relay=relay, edited=bool(relay))

    def _take(self) -> list[bytes]:
        taken, self._updates = self._updates, []
        return taken


def _fingerprint(cell: Cell) -> Fingerprint:
    """What the mirror compares: the Document replaces a cell's outputs list whenever
    they change, so the list's identity stands for its content."""
    metadata = orjson.dumps(cell.metadata, option=orjson.OPT_SORT_KEYS)
    return (
        cell.cell_type,
        cell.source,
        (id(cell.outputs), len(cell.outputs)),
        cell.execution_count,
        metadata,
    )


def _youtput(output: dict[str, Any]) -> Map[Any]:
    """An output as JupyterLab's schema holds it: a stream's text is a Y text."""
    output = copy.deepcopy(output)
    if output.get("output_type") == "stream":
        text = output.get("text", "")
        output["text"] = Text(text if isinstance(text, str) else "".join(text))
    return Map(output)


def _payload(decoder: Decoder) -> bytes:
    payload = decoder.read_message()
    if payload is None:
        raise UnreadableMessage("the message ends before its payload")
    return payload
