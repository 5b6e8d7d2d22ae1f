"""The Y cells as the Room last wrote them, and the writing of what changed since: the
Room's side of the shared document (shared_doc.py holds the rest, and the people's side).

It keeps a fingerprint of each cell as it wrote it, the cells' ids in the order of the Y
array (followed through every change, a person's too), and the Document it last
followed. A mirror of that same Document looks only at the cells the Document says
changed since (``Document.changed_since``) and at those people changed in the Y
document; when either is not known, it compares every cell. Only what differs is
written: cells created, deleted or moved are Y inserts and deletes (order_steps.py), and
of the others only the cells whose content changed are touched, so an edit, an output or
a new cell costs a cell, not the notebook.
"""

from __future__ import annotations

import contextlib
import copy
from typing import Any

from jupyter_ydoc import YNotebook
from jupyter_ydoc.utils import cast_all
from pycrdt import Map

from nbstage.actors.daemon.notebook.cell_model import Cell
from nbstage.actors.daemon.notebook.document import CELL_ID, Document
from nbstage.actors.daemon.room import shared_build, shared_cells
from nbstage.actors.daemon.room.order_steps import Delete, steps
from nbstage.protocol.common.errors import NbstageError

FEW_CELLS = 64
"""Up to this many changed cells the mirror finds each by its id; more, it walks them all."""


class CellMirror:
    def __init__(
        self, notebook: YNotebook, built: shared_build.Built, start: shared_build.Start
    ) -> None:
        self.notebook = notebook
        self.revision = start.revision
        """The Document revision the Y cells hold."""
        self.ids = built.ids
        """The ids of the Y cells, in order, kept by ``track`` (reading them back from
        the Y document costs a call per cell); None for a cell without one."""
        self.metadata = start.metadata
        self.running: frozenset[str] = frozenset()
        self._seen = built.seen
        self._pinned = {cell.id: cell.outputs for cell in start.cells}
        """The outputs lists whose identities ``_seen`` holds, kept alive until the cell is
        compared again: a list the Document let go and freed could otherwise lend its
        identity to a later one, and a cell changed twice between two mirrors would look
        unchanged."""
        self._source: Document | None = None
        """The Document the last mirror followed: the next one, if it follows the same,
        looks only at the cells it says changed since (``Document.changed_since``)."""

    def moved(self, doc: Document, running: frozenset[str]) -> bool:
        """The Document or the running cells moved since the last ``write``."""
        return doc.revision != self.revision or running != self.running

    def write(self, doc: Document, running: frozenset[str], heard: set[str] | None) -> set[str]:
        """Bring the Y cells to ``doc`` in one transaction; the ids of the cells whose
        source or whole cell was written again (which moves a cursor anchored there).
        ``running``: the cells queued or running, whose ``execution_state`` is "running"
        (Lab's ``[*]``); ``heard``: the cells people's updates changed since the last write
        (None: not known, so every cell is compared)."""
        order = list(map(CELL_ID, doc.cells))
        with self.notebook.ydoc.transaction():
            if doc.metadata != self.metadata:
                self._set_metadata(doc.metadata)
            inserted, deleted = self._restructure(doc, order)
            rewritten = set(inserted)
            compared = self._compared(doc, order, inserted, heard)
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
            self._mark_running(doc, running, (running ^ self.running) | (running & inserted))
        self._settle(doc, running, compared, seen, order, deleted)
        return rewritten

    def track(self, event: Any) -> None:
        """Follow the Y cells' ids through every change of the array, ours or a person's."""
        at = 0
        for part in event.delta:
            if "retain" in part:
                at += part["retain"]
            elif "delete" in part:
                del self.ids[at : at + part["delete"]]
            elif "insert" in part:
                added = [shared_cells.id_of(ycell) for ycell in part["insert"]]
                self.ids[at:at] = added
                at += len(added)

    def _compared(
        self, doc: Document, order: list[str], inserted: frozenset[str], heard: set[str] | None
    ) -> list[tuple[int, Cell]]:
        """The cells the mirror must compare, with their indexes: the ones the Document
        says changed since the last mirror, the ones people changed in the Y document, and
        the ones just inserted; or every cell when that is not known (another Document, a
        thawed document, a Document replaced whole) or when many changed."""
        following = doc is self._source and heard is not None
        changed = doc.changed_since(self.revision) if following else None
        if changed is None or heard is None:
            return list(enumerate(doc.cells))
        wanted = changed | inserted | heard
        if len(wanted) > FEW_CELLS:
            return list(enumerate(doc.cells))
        compared = []
        for cell_id in wanted:
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
        self.revision, self.running, self._source = doc.revision, running, doc
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
        if doc.metadata != self.metadata:
            self.metadata = copy.deepcopy(doc.metadata)

    def _restructure(self, doc: Document, order: list[str]) -> tuple[frozenset[str], list[str]]:
        """Insert, delete and move Y cells until their ids are the Document's; the ids
        of the cells inserted (with the Document's content), and of those deleted (a
        moved cell is both). A Y cell without an id, or repeating one before it, is
        deleted: nothing doubles."""
        if self.ids == order:
            return frozenset(), []
        ids = self._usable_ids()
        ycells, inserted, deleted = self.notebook.ycells, set(), []
        for step in steps(ids, order):
            if isinstance(step, Delete):  # from the last down: an index of ``ids``
                del ycells[step.index]
                deleted.append(ids[step.index])
            else:  # an insert's index is the cell's place in the Document
                ycells.insert(
                    step.index,
                    self.notebook.create_ycell(
                        shared_cells.within_y(doc.cells[step.index].to_json())
                    ),
                )
                inserted.add(step.cell_id)
        return frozenset(inserted), deleted

    def _usable_ids(self) -> list[str]:
        """The Y cells' ids, a missing or repeated one made unlike any cell's."""
        ids = self.ids
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
        self.notebook.ydoc.get("meta", type=Map)["metadata"] = Map(metadata)

    def _mark_running(self, doc: Document, running: frozenset[str], cells: frozenset[str]) -> None:
        for cell_id in cells:
            with contextlib.suppress(NbstageError):
                index = doc.index_of(cell_id)
                if doc.cells[index].cell_type == "code":
                    state = "running" if cell_id in running else "idle"
                    self.notebook.ycells[index]["execution_state"] = state
        self.running = running

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
            self.notebook.set_cell(index, shared_cells.within_y(cell.to_json()))
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
