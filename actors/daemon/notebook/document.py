"""The in-memory notebook a Room owns: cells, notebook metadata and a revision.

Everything here is pure: no actors, no files, no clock. Failures are raised as
:class:`NbstageError` with a sentence that tells the caller what to do next. A cell is
a :class:`Cell` (``cell_model``); the search-and-replace edits are ``text_edits``.

Sharing rule: what ``to_json``, ``cells_json`` and ``view`` hand out may share output,
metadata and attachment objects with the document, and the rows ``summaries`` hands out
are handed out again until the document changes. The document never mutates
such an object in place after storing it (it replaces it), so a handed-out dict stays
stable; callers must not mutate what they receive.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Sequence
from operator import attrgetter

from nbstage.actors.daemon.environment.dependencies import with_dependencies
from nbstage.actors.daemon.kernel.kernelspecs import PYTHON3
from nbstage.actors.daemon.notebook.cell_model import (
    Cell,
    cells_from_json,
    check_cell_type,
    checked_outputs,
    clipped,
    fresh_cell_id,
)
from nbstage.actors.daemon.notebook.text_edits import (
    compile_pattern,
    match_replaced,
    pattern_replaced,
    require_match,
)
from nbstage.protocol.common.errors import ErrorCode, NbstageError
from nbstage.protocol.daemon.replies import CellSummary
from nbstage.protocol.daemon_actors.kernels import KernelspecInfo

CELL_ID = attrgetter("id")
CHANGES_KEPT = 4096
"""Cell changes remembered for ``changed_since``; a reader further behind looks at every
cell."""


class Document:
    """An ordered list of cells plus notebook metadata.

    ``revision`` starts at 0 and goes up by one on every mutation that changes the
    document; a mutation that changes nothing (same source, same outputs, a move to
    where the cell already is) leaves it alone. It is the change marker for saves: a
    Room records the revision it last wrote and skips the write while it is unchanged.

    It also keeps which cells each revision changed (``changed_since``), so a reader
    that follows the document (the people's shared document) looks at those cells
    alone, not at every cell of a big notebook.
    """

    def __init__(self, cells: list[Cell], metadata: dict) -> None:
        self.cells = cells
        self.metadata = metadata
        self.revision = 0
        self._changes: list[tuple[int, str]] = []
        """(revision, cell id) of each cell a revision changed, oldest first."""
        self._changes_from = 0
        """``_changes`` holds every cell change made after this revision."""
        self._summarized: tuple[int, list[CellSummary]] = (-1, [])
        """The whole notebook's summary rows and the revision they describe."""

    @classmethod
    def empty(cls, kernelspec: KernelspecInfo | None = PYTHON3) -> Document:
        return cls([], _kernel_metadata(kernelspec))

    @classmethod
    def from_json(cls, nb: dict) -> Document:
        """Build from a v4 notebook dict; takes its own copy of everything.

        Cells without a valid id, or repeating an earlier cell's id, get a fresh one.
        """
        nb = copy.deepcopy(nb)
        cells = cells_from_json(nb.get("cells", []))
        metadata = nb.get("metadata", {})
        return cls(cells, metadata if isinstance(metadata, dict) else {})

    def to_json(self) -> dict:
        return {
            "cells": [c.to_json() for c in self.cells],
            "metadata": dict(self.metadata),
            "nbformat": 4,
            "nbformat_minor": 5,
        }

    def __len__(self) -> int:
        return len(self.cells)

    def replace(self, other: Document, changed: Iterable[str] | None = None) -> None:
        """Take ``other``'s cells and metadata as one new revision: a merge with the
        file, a journal replay, a person's edit. ``changed``: the cells whose content it
        changed, every other cell being the same object as before (a person's edit);
        None: not known, and ``changed_since`` knows nothing before it."""
        self.cells, self.metadata = other.cells, other.metadata
        if changed is not None:
            self._touch(*changed)
            return
        self._touch()
        self._changes.clear()
        self._changes_from = self.revision

    def changed_since(self, revision: int) -> set[str] | None:
        """The ids of the cells whose content changed after ``revision``, created ones
        included (a deleted or moved cell shows in the order of ``cells``); None when that
        is not known, because the cells were replaced whole or the record was trimmed."""
        if revision < self._changes_from or revision > self.revision:
            return None
        changed: set[str] = set()
        for at, cell_id in reversed(self._changes):
            if at <= revision:
                break
            changed.add(cell_id)
        return changed

    # Reads

    def cell(self, cell_id: str) -> Cell:
        return self.cells[self.index_of(cell_id)]

    def index_of(self, cell_id: str) -> int:
        for i, c in enumerate(self.cells):
            if c.id == cell_id:
                return i
        raise NbstageError(
            ErrorCode.CELL_NOT_FOUND,
            f"There is no cell with id {clipped(cell_id)} in this notebook. "
            "Call get_all_cells to see the cell ids.",
        )

    def summaries(self, start: int = 0, count: int | None = None) -> list[CellSummary]:
        """The rows of a window of cells. The whole notebook's rows are kept until it
        changes, so a notebook read again and again is summarized once."""
        lo, hi = self._window(start, count)
        revision, rows = self._summarized
        if revision == self.revision:
            return rows[lo:hi]
        cells = self.cells
        window = [cells[i].summary(i) for i in range(lo, hi)]
        if hi - lo == len(cells):
            self._summarized = (self.revision, window)
        return window

    def cells_json(
        self, start: int = 0, count: int | None = None, include_outputs: bool = True
    ) -> list[dict]:
        """nbformat cell dicts; with include_outputs=False code cells have ``output_count``
        in place of ``outputs``."""
        lo, hi = self._window(start, count)
        if include_outputs:
            return [c.to_json() for c in self.cells[lo:hi]]
        return [c.without_outputs() for c in self.cells[lo:hi]]

    def _window(self, start: int, count: int | None) -> tuple[int, int]:
        if start < 0 or (count is not None and count < 0):
            raise NbstageError(
                ErrorCode.BAD_REQUEST,
                "start and count must not be negative. Use start=0 and leave count out "
                "to get every cell.",
            )
        n = len(self.cells)
        lo = min(start, n)
        return lo, n if count is None else min(n, lo + count)

    # Structural mutations

    def create_cell(
        self, source: str = "", cell_type: str = "code", index: int | None = None
    ) -> tuple[Cell, int]:
        """Insert a new cell at ``index`` (0..len; None appends); return it and its index."""
        check_cell_type(cell_type)
        n = len(self.cells)
        if index is None:
            index = n
        elif not 0 <= index <= n:
            raise NbstageError(
                ErrorCode.BAD_INDEX,
                f"Index {index} is out of range: this notebook has {n} cells, so use an "
                f"index from 0 to {n}, or leave index out to append.",
            )
        cell = Cell(id=self._fresh_id(), cell_type=cell_type, source=source)
        self.cells.insert(index, cell)
        self._touch(cell.id)
        return cell, index

    def set_cell(
        self, cell_id: str, source: str | None = None, cell_type: str | None = None
    ) -> Cell:
        """Change source and/or type; a code cell keeps its outputs unless its type changes."""
        if source is None and cell_type is None:
            raise NbstageError(
                ErrorCode.BAD_REQUEST, "Nothing to change: pass source, cell_type or both."
            )
        if cell_type is not None:
            check_cell_type(cell_type)
        cell = self.cell(cell_id)
        changed = cell_type is not None and cell.retype(cell_type)
        if source is not None and source != cell.source:
            cell.source = source
            changed = True
        if changed:
            self._touch(cell.id)
        return cell

    def delete_cell(self, cell_id: str) -> None:
        del self.cells[self.index_of(cell_id)]
        self._touch()

    def move_cell(self, cell_id: str, after_cell_id: str | None) -> int:
        """Put the cell right after ``after_cell_id`` (None: first); return its new index."""
        old = self.index_of(cell_id)
        if after_cell_id == cell_id:
            raise NbstageError(
                ErrorCode.BAD_INDEX,
                "A cell cannot be moved after itself. Pass another cell's id as "
                "after_cell_id, or null to move the cell to the front.",
            )
        if after_cell_id is not None:
            self.index_of(after_cell_id)
        cell = self.cells.pop(old)
        new = 0 if after_cell_id is None else self.index_of(after_cell_id) + 1
        self.cells.insert(new, cell)
        if new != old:
            self._touch()
        return new

    # Text edits

    def replace_match(
        self,
        cell_id: str,
        match: str,
        content: str,
        context_before: str | None = None,
        context_after: str | None = None,
    ) -> Cell:
        """Replace the one literal occurrence of ``match`` that has the given context."""
        require_match(match, cell_id)
        cell = self.cell(cell_id)
        source = match_replaced(cell.source, cell_id, match, content, context_before, context_after)
        self._set_source(cell, source)
        return cell

    def replace_regex(self, cell_id: str, pattern: str, content: str) -> Cell:
        """Replace the one match of ``pattern`` (re.MULTILINE); ``content`` is a template."""
        compiled = compile_pattern(pattern)
        cell = self.cell(cell_id)
        self._set_source(cell, pattern_replaced(cell.source, cell_id, compiled, content))
        return cell

    # Outputs

    def set_dependencies(self, deps: Sequence[str]) -> None:
        """Set the inline dependencies (``metadata.runt.uv.dependencies``)."""
        self.metadata = with_dependencies(self.metadata, deps)
        self._touch()

    def set_outputs(self, cell_id: str, outputs: list[dict], execution_count: int | None) -> None:
        cell = self._code_cell(cell_id)
        fresh = checked_outputs(outputs)
        if fresh == cell.outputs and execution_count == cell.execution_count:
            return
        cell.outputs = fresh
        cell.execution_count = execution_count
        self._touch(cell.id)

    def clear_outputs(self, cell_id: str | None = None) -> list[str]:
        """Empty the outputs and count of one code cell, or of every code cell; return the
        ids of the cells that had any."""
        cells = [self._code_cell(cell_id)] if cell_id is not None else self.cells
        cleared = []
        for cell in cells:
            if cell.cell_type == "code" and (cell.outputs or cell.execution_count is not None):
                cell.outputs, cell.execution_count = [], None
                cleared.append(cell.id)
        if cleared:
            self._touch(*cleared)
        return cleared

    def change_tags(self, cell_id: str, add: Sequence[str], remove: Sequence[str]) -> Cell:
        """Add and remove ``metadata.tags`` (kept in order, each once); no tags left
        removes the key."""
        cell = self.cell(cell_id)
        before = cell.metadata.get("tags")
        tags = list(before) if isinstance(before, list) else []
        tags = [t for t in tags if t not in remove]
        tags += [t for t in dict.fromkeys(add) if t not in tags]
        if tags != before and (tags or before is not None):
            metadata = {k: v for k, v in cell.metadata.items() if k != "tags"}
            cell.metadata = {**metadata, "tags": tags} if tags else metadata
            self._touch(cell.id)
        return cell

    # Helpers

    def _code_cell(self, cell_id: str) -> Cell:
        cell = self.cell(cell_id)
        if cell.cell_type != "code":
            raise NbstageError(
                ErrorCode.BAD_CELL_TYPE,
                f"Cell {cell_id} is a {cell.cell_type} cell; only code cells have outputs.",
            )
        return cell

    def _set_source(self, cell: Cell, source: str) -> None:
        if source != cell.source:
            cell.source = source
            self._touch(cell.id)

    def _fresh_id(self) -> str:
        return fresh_cell_id(set(map(CELL_ID, self.cells)))

    def _touch(self, *cell_ids: str) -> None:
        """A new revision, which changed the content of ``cell_ids``."""
        self.revision += 1
        changes = self._changes
        changes.extend((self.revision, cell_id) for cell_id in cell_ids)
        if len(changes) > CHANGES_KEPT:
            half = len(changes) // 2
            self._changes_from = changes[half - 1][0]
            del changes[:half]


def _kernel_metadata(spec: KernelspecInfo | None) -> dict:
    if spec is None:
        return {}
    return {
        "kernelspec": {
            "name": spec.name,
            "display_name": spec.display_name,
            "language": spec.language,
        },
        "language_info": {"name": spec.language},
    }
