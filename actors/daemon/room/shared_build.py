"""How the Room's shared document is made, kept idle and made again: the parts that run
on a worker thread, off the Room's (ADR 0004, "Building off the Room's thread" and
"Freezing and thawing off it").

Pure, no actors. ``start`` and ``thaw`` (on the Room's thread) take what a build needs
from the Document: the cells' content by reference (``shared_cells.copies``), and for a
build from the Document the notebook as bytes, so the Room may go on changing its
Document while a worker builds (``Start.build``). The Y document comes back to the Room,
which mirrors whatever changed meanwhile (shared_doc.py). An idle document is
``Frozen``: its encoded update, compressed, and a checksum per cell, made on a worker
from a ``ToFreeze`` (``ToFreeze.freeze``); ``thaw`` starts the next build from those,
and the worker compares the checksums.
"""

from __future__ import annotations

import hashlib
import zlib
from dataclasses import dataclass, field
from typing import Any

import orjson
from jupyter_ydoc import YNotebook
from pycrdt import Awareness, Doc

from nbstage.actors.daemon.notebook.document import Document
from nbstage.actors.daemon.room import shared_cells
from nbstage.actors.daemon.room.agent_marks import AgentMarks

STALE: shared_cells.Fingerprint = ("", "", -1, -2, "")
"""What the mirror takes a Y cell for when it cannot tell what it holds: unlike any
cell, so the cell is written again whole."""


@dataclass
class Built:
    """A Y document made on a worker thread, not yet touched by any other."""

    ydoc: Doc[Any]
    notebook: YNotebook
    ids: list[str | None]
    """The Y cells' ids, in order."""
    update: bytes
    """The whole document as one encoded update (what a new Y client is sent)."""
    seen: dict[str, shared_cells.Fingerprint]
    """What the mirror will take the built Y cells for."""


@dataclass
class Frozen:
    """An idle shared document, kept small: made again from this on the next join,
    with the same history (so a browser that held it goes on)."""

    update: bytes
    """The encoded update, zlib-compressed."""
    checksums: dict[str, int]
    """Cell id -> ``checksum`` of the cell the Y document holds."""
    metadata: dict[str, Any]
    session: str
    marks: AgentMarks
    revision: int = -1
    """The Document's revision the frozen form holds."""
    people: dict[str, int] = field(default_factory=dict)
    """The people still watching (peer id -> connection): a watched document frozen while
    idle keeps them joined, and their awareness (``awareness``) answered without it."""
    awareness: Awareness | None = None
    ids: list[str | None] | None = None
    """The Y cells' ids, in order, as the live document tracked them: a thaw need not
    read them back from the Y document (a call per cell, 15 ms for 1,000)."""

    @property
    def size(self) -> int:
        """Bytes it keeps, about: the update and 8 per checksum and per id."""
        return len(self.update) + 8 * (len(self.checksums) + len(self.ids or ()))


@dataclass
class Start:
    """What a build starts from, taken on the Room's thread."""

    revision: int
    metadata: dict[str, Any]
    cells: tuple[shared_cells.CellCopy, ...]
    """The Document's cells when the build started. The Room keeps this until it has
    mirrored the built document: an outputs list it names is not freed meanwhile, so
    no other list takes its identity (which the fingerprints hold)."""
    notebook: bytes = b""
    """The notebook as orjson bytes (a build from the Document)."""
    frozen: Frozen | None = None
    """A build from a frozen document."""

    def build(self) -> Built:
        """Make the Y document: the worker thread's part, which reads nothing but this."""
        if self.frozen is None:
            seen = {cell.id: shared_cells.fingerprint(cell) for cell in self.cells}
            return _made(orjson.loads(self.notebook), seen)
        update = zlib.decompress(self.frozen.update)
        if self.frozen.revision == self.revision:  # nothing changed since: no checksums
            seen = {cell.id: shared_cells.fingerprint(cell) for cell in self.cells}
        else:
            seen = _kept(self.frozen, self.cells)
        return _thawed(update, seen, self.frozen.ids)


def start(doc: Document) -> Start:
    whole = doc.to_json()
    metadata = orjson.loads(orjson.dumps(whole["metadata"]))
    return Start(doc.revision, metadata, shared_cells.copies(doc.cells), orjson.dumps(whole))


def thaw(frozen: Frozen, doc: Document) -> Start:
    """A build from ``frozen``, against the Document as it is now."""
    return Start(doc.revision, frozen.metadata, shared_cells.copies(doc.cells), frozen=frozen)


def _kept(
    frozen: Frozen, cells: tuple[shared_cells.CellCopy, ...]
) -> dict[str, shared_cells.Fingerprint]:
    """A cell whose checksum still matches the frozen one is taken as written; any other
    is written again by the mirror after the build."""
    checksums = frozen.checksums
    return {
        cell.id: shared_cells.fingerprint(cell)
        if checksums.get(cell.id) == checksum(cell)
        else STALE
        for cell in cells
    }


@dataclass
class ToFreeze:
    """A shared document let go by the Room, to be frozen on a worker: nothing else
    touches its Y document until ``freeze`` returns."""

    ydoc: Doc[Any]
    """Just mirrored to the Document whose cells are ``cells``."""
    cells: tuple[shared_cells.CellCopy, ...]
    metadata: dict[str, Any]
    """The notebook's metadata as the Y document holds it (a copy of the Room's own)."""
    session: str
    marks: AgentMarks
    revision: int = -1
    people: dict[str, int] = field(default_factory=dict)
    """The people watching, kept joined (the Room's dict: the worker does not read it)."""
    awareness: Awareness | None = None
    ids: list[str | None] | None = None
    """The Y cells' ids, in order (a copy of the live document's list)."""

    def freeze(self) -> Frozen:
        """The worker thread's part: encode, compress, and a checksum per cell."""
        update = self.ydoc.get_update()
        checksums = {cell.id: checksum(cell) for cell in self.cells}
        return Frozen(
            zlib.compress(update, 1),
            checksums,
            self.metadata,
            self.session,
            self.marks,
            self.revision,
            self.people,
            self.awareness,
            self.ids,
        )


def checksum(cell: shared_cells.CellContent) -> int:
    """The cell as the mirror writes it (type, source, outputs, count, metadata), by
    content: an outputs list's identity can be reused once it is freed."""
    data = orjson.dumps(
        (cell.cell_type, cell.source, cell.outputs, cell.execution_count, cell.metadata),
        option=orjson.OPT_SORT_KEYS,
    )
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "big")


UNTRACKED = "nbstage: no transaction of the room's is undone on the server"
"""The one origin the server side's undo manager tracks, which no transaction has."""


def notebook_of(ydoc: Doc[Any]) -> YNotebook:
    """``YNotebook`` over ``ydoc``, its undo manager tracking nothing. It tracks every
    transaction without an origin otherwise, the mirror's included: the stack grew by
    one item a mirror and kept every deleted output alive (343 kB more encoded, and a
    millisecond more a mirror, every 1,000 executions). Undo is the browser's own."""
    ynotebook = YNotebook(ydoc)
    ynotebook.undo_manager.include_origin(UNTRACKED)
    return ynotebook


def _made(notebook: dict[str, Any], seen: dict[str, shared_cells.Fingerprint]) -> Built:
    ydoc: Doc[Any] = Doc()
    ynotebook = notebook_of(ydoc)
    ynotebook.set(shared_cells.within_y(notebook))
    if not notebook["cells"]:
        ynotebook.ycells.clear()  # set() gives a notebook without cells an empty one
    named = {cell_id: cell_id for cell_id in seen}  # the Document's strs, not copies
    ids: list[str | None] = [named.get(cell["id"], cell["id"]) for cell in notebook["cells"]]
    return Built(ydoc, ynotebook, ids, ydoc.get_update(), seen)


def _thawed(
    update: bytes, seen: dict[str, shared_cells.Fingerprint], ids: list[str | None] | None
) -> Built:
    ydoc: Doc[Any] = Doc()
    ydoc.apply_update(update)
    ynotebook = notebook_of(ydoc)
    if ids is None:
        ids = [shared_cells.id_of(ycell) for ycell in ynotebook.ycells]
    return Built(ydoc, ynotebook, list(ids), update, seen)
