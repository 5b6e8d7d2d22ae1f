"""The in-memory notebook a Room owns: cells, notebook metadata and a revision.

Everything here is pure: no actors, no files, no clock. Failures are raised as
:class:`NbstageError` with a sentence that tells the caller what to do next.

Sharing rule: what ``to_json``, ``cells_json`` and ``view`` hand out may share output,
metadata and attachment objects with the document, and the rows ``summaries`` hands out
are handed out again until the document changes. The document never mutates
such an object in place after storing it (it replaces it), so a handed-out dict stays
stable; callers must not mutate what they receive.
"""

from __future__ import annotations

import copy
import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import regex

from nbstage.actors.common.output_bounds import append_output, joined_text
from nbstage.actors.daemon.environment.dependencies import with_dependencies
from nbstage.actors.daemon.kernel.kernelspecs import PYTHON3
from nbstage.actors.daemon.notebook.pattern_bounds import pattern_problem
from nbstage.protocol.common.errors import ErrorCode, NbstageError
from nbstage.protocol.daemon.replies import CellSummary, CellView
from nbstage.protocol.daemon_actors.kernels import KernelspecInfo

CELL_TYPES = ("code", "markdown", "raw")
PREVIEW_CHARS = 120
PATTERN_TIMEOUT_SECS = 0.5
"""How long one replace_regex may search a cell: it runs in the Room's mailbox."""

_VALID_ID = re.compile(r"[a-zA-Z0-9_-]{1,64}")
_LEADING_SPACE = re.compile(r"\s*")


@dataclass
class Cell:
    id: str
    cell_type: str
    source: str
    metadata: dict = field(default_factory=dict)
    outputs: list[dict] = field(default_factory=list)
    execution_count: int | None = None
    attachments: dict | None = None

    def to_json(self, include_outputs: bool = True) -> dict:
        """Return an nbformat 4.5 cell dict; without outputs it is no longer schema-valid."""
        out: dict[str, Any] = {
            "id": self.id,
            "cell_type": self.cell_type,
            "metadata": dict(self.metadata),
            "source": self.source,
        }
        if self.cell_type == "code":
            out["execution_count"] = self.execution_count
            if include_outputs:
                out["outputs"] = list(self.outputs)
        elif self.attachments is not None:
            out["attachments"] = self.attachments
        return out

    def view(self) -> CellView:
        """The get_cell tool's shape."""
        return CellView(
            self.id, self.cell_type, self.source, self.execution_count, list(self.outputs)
        )

    def summary(self, index: int, max_chars: int = PREVIEW_CHARS) -> CellSummary:
        """The cell's summary row, without the counts it does not have."""
        row: CellSummary = {
            "cell_id": self.id,
            "index": index,
            "cell_type": self.cell_type,
            "source_preview": source_preview(self.source, max_chars),
        }
        if self.execution_count is not None:
            row["execution_count"] = self.execution_count
        if self.outputs:
            row["output_count"] = len(self.outputs)
        return row


def source_preview(source: str, max_chars: int = PREVIEW_CHARS) -> str:
    """First non-blank line, at most ``max_chars`` long (a cut line ends with '…').

    Reads at most ``max_chars + 1`` characters past leading whitespace, whatever the size.
    """
    start = _LEADING_SPACE.match(source).end() if source[:1].isspace() else 0
    head = source[start : start + max_chars + 1].split("\n", 1)[0].rstrip()
    if len(head) <= max_chars:
        return head
    return head[: max_chars - 1] + "…"


class Document:
    """An ordered list of cells plus notebook metadata.

    ``revision`` starts at 0 and goes up by one on every mutation that changes the
    document; a mutation that changes nothing (same source, same outputs, a move to
    where the cell already is) leaves it alone. It is the change marker for saves: a
    Room records the revision it last wrote and skips the write while it is unchanged.
    """

    def __init__(self, cells: list[Cell], metadata: dict) -> None:
        self.cells = cells
        self.metadata = metadata
        self.revision = 0
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
        raw_cells = nb.get("cells", [])
        if not isinstance(raw_cells, list):
            raise NbstageError(ErrorCode.BAD_REQUEST, "The notebook's 'cells' is not a list.")
        cells = [_cell_from_json(raw, i) for i, raw in enumerate(raw_cells)]
        _dedupe_ids(cells)
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

    # Reads

    def cell(self, cell_id: str) -> Cell:
        return self.cells[self.index_of(cell_id)]

    def index_of(self, cell_id: str) -> int:
        for i, c in enumerate(self.cells):
            if c.id == cell_id:
                return i
        raise NbstageError(
            ErrorCode.CELL_NOT_FOUND,
            f"There is no cell with id {_clip(cell_id)} in this notebook. "
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
        return [_without_outputs(c) for c in self.cells[lo:hi]]

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
        _check_type(cell_type)
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
        self._touch()
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
            _check_type(cell_type)
        cell = self.cell(cell_id)
        changed = cell_type is not None and _retype(cell, cell_type)
        if source is not None and source != cell.source:
            cell.source = source
            changed = True
        if changed:
            self._touch()
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
        if not match:
            raise NbstageError(
                ErrorCode.BAD_REQUEST,
                "match must not be empty. To replace a cell's whole source, use "
                f'set_cell(cell_id="{_clip(cell_id)}", source=...).',
            )
        cell = self.cell(cell_id)
        hits = _literal_hits(cell.source, match, context_before or "", context_after or "")
        what = "text with that context" if context_before or context_after else "text"
        _require_one(len(hits), cell_id, what, "Add context_before or context_after")
        at = hits[0]
        self._set_source(cell, cell.source[:at] + content + cell.source[at + len(match) :])
        return cell

    def replace_regex(self, cell_id: str, pattern: str, content: str) -> Cell:
        """Replace the one match of ``pattern`` (re.MULTILINE); ``content`` is a template."""
        compiled = _compile(pattern)
        cell = self.cell(cell_id)
        try:
            found = list(compiled.finditer(cell.source, timeout=PATTERN_TIMEOUT_SECS))
        except TimeoutError:
            raise NbstageError(
                ErrorCode.BAD_PATTERN,
                f"The pattern took longer than {PATTERN_TIMEOUT_SECS} s on cell "
                f"{_clip(cell_id)}, so nothing was replaced. Make it simpler (nested "
                "repeats such as (a+)+ backtrack without end) or use "
                f'replace_match(cell_id="{_clip(cell_id)}", match=..., content=...).',
            ) from None
        _require_one(len(found), cell_id, "pattern", "Make the pattern more specific")
        hit = found[0]
        replacement = _expand(hit, content)
        self._set_source(cell, cell.source[: hit.start()] + replacement + cell.source[hit.end() :])
        return cell

    # Outputs

    def set_dependencies(self, deps: Sequence[str]) -> None:
        """Set the inline dependencies (``metadata.runt.uv.dependencies``)."""
        self.metadata = with_dependencies(self.metadata, deps)
        self._touch()

    def set_outputs(self, cell_id: str, outputs: list[dict], execution_count: int | None) -> None:
        cell = self._code_cell(cell_id)
        fresh = _copy_outputs(outputs)
        if fresh == cell.outputs and execution_count == cell.execution_count:
            return
        cell.outputs = fresh
        cell.execution_count = execution_count
        self._touch()

    def append_outputs(self, cell_id: str, outputs: list[dict]) -> None:
        """Append outputs; a stream continuing the previous same-name stream is merged into it."""
        cell = self._code_cell(cell_id)
        fresh = _copy_outputs(outputs)
        if not fresh:
            return
        merged = list(cell.outputs)
        for out in fresh:
            append_output(merged, out)
        cell.outputs = merged
        self._touch()

    def clear_outputs(self, cell_id: str) -> None:
        """Drop outputs and execution count; a no-op on markdown and raw cells."""
        cell = self.cell(cell_id)
        if cell.outputs or cell.execution_count is not None:
            cell.outputs = []
            cell.execution_count = None
            self._touch()

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
            self._touch()

    def _fresh_id(self) -> str:
        return fresh_cell_id({c.id for c in self.cells})

    def _touch(self) -> None:
        self.revision += 1


def fresh_cell_id(taken: set[str] | frozenset[str] = frozenset()) -> str:
    """Eight lowercase hex characters not in ``taken``."""
    while True:
        cell_id = uuid.uuid4().hex[:8]
        if cell_id not in taken:
            return cell_id


def valid_cell_id(value: object) -> bool:
    """Whether ``value`` fits nbformat 4.5's cell id rule (1-64 of ``[a-zA-Z0-9_-]``)."""
    return isinstance(value, str) and _VALID_ID.fullmatch(value) is not None


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


def _check_type(cell_type: str) -> None:
    if cell_type not in CELL_TYPES:
        raise NbstageError(
            ErrorCode.BAD_CELL_TYPE,
            f"Unknown cell_type {_clip(cell_type)}. Use 'code', 'markdown' or 'raw'.",
        )


def _retype(cell: Cell, cell_type: str) -> bool:
    """Change the type and drop what the new type cannot hold; return whether it changed."""
    if cell.cell_type == cell_type:
        return False
    cell.cell_type = cell_type
    cell.outputs = []
    cell.execution_count = None
    if cell_type == "code":
        cell.attachments = None
    return True


def _clip(text: object, limit: int = 64) -> str:
    shown = repr(text)
    return shown if len(shown) <= limit else shown[: limit - 4] + "...'"


# Matching


def _literal_hits(source: str, match: str, before: str, after: str) -> list[int]:
    """Start offsets of every (possibly overlapping) occurrence that has the context."""
    hits = []
    at = source.find(match)
    while at != -1:
        if source.endswith(before, 0, at) and source.startswith(after, at + len(match)):
            hits.append(at)
        at = source.find(match, at + 1)
    return hits


def _require_one(count: int, cell_id: str, what: str, narrow: str) -> None:
    if count == 0:
        raise NbstageError(
            ErrorCode.NO_MATCH,
            f"The {what} was not found in cell {cell_id}. Call get_cell to see its current "
            "source and retry with text taken from it.",
        )
    if count > 1:
        raise NbstageError(
            ErrorCode.AMBIGUOUS_MATCH,
            f"The {what} matches {count} places in cell {cell_id}, and exactly one must "
            f"match. {narrow} so that only one place qualifies.",
        )


def _compile(pattern: str) -> regex.Pattern:
    """Compile ``pattern`` once it is known to be small enough (``pattern_bounds``); it is
    not kept in the module's cache, which would hold up to 500 of them."""
    problem = pattern_problem(pattern)
    if problem is not None:
        raise NbstageError(ErrorCode.BAD_PATTERN, f"{problem} Nothing was replaced.")
    try:
        return regex.compile(pattern, regex.MULTILINE, cache_pattern=False)
    except regex.error as exc:
        raise NbstageError(
            ErrorCode.BAD_PATTERN,
            f"The pattern is not a valid Python regular expression ({exc}). Fix it and retry.",
        ) from None


def _expand(hit: regex.Match, template: str) -> str:
    try:
        return hit.expand(template)
    except (regex.error, IndexError) as exc:
        raise NbstageError(
            ErrorCode.BAD_PATTERN,
            f"The replacement content is not a valid template ({exc}). Refer to groups as "
            r"\1 or \g<name> and write a literal backslash as \\.",
        ) from None


# Reading cells and outputs


def _cell_from_json(raw: object, index: int) -> Cell:
    if not isinstance(raw, dict) or raw.get("cell_type") not in CELL_TYPES:
        raise NbstageError(
            ErrorCode.BAD_REQUEST,
            f"Cell {index} of the notebook is not a code, markdown or raw cell.",
        )
    is_code = raw["cell_type"] == "code"
    cell_id = raw.get("id")
    return Cell(
        id=cell_id if isinstance(cell_id, str) else "",
        cell_type=raw["cell_type"],
        source=joined_text(raw.get("source", "")),
        metadata=raw.get("metadata") or {},
        outputs=[_joined_output(o) for o in raw.get("outputs", [])] if is_code else [],
        execution_count=raw.get("execution_count") if is_code else None,
        attachments=None if is_code else raw.get("attachments"),
    )


def _dedupe_ids(cells: list[Cell]) -> None:
    taken = {c.id for c in cells}
    seen: set[str] = set()
    for cell in cells:
        if cell.id in seen or not valid_cell_id(cell.id):
            cell.id = fresh_cell_id(taken)
            taken.add(cell.id)
        seen.add(cell.id)


def _is_json_mime(mime: str) -> bool:
    return mime == "application/json" or mime.endswith("+json")


def _joined_output(out: dict) -> dict:
    """A copy of ``out`` whose multiline strings are single strings."""
    fixed = dict(out)
    if fixed.get("output_type") == "stream" and isinstance(fixed.get("text"), list):
        fixed["text"] = joined_text(fixed["text"])
    data = fixed.get("data")
    if isinstance(data, dict):
        fixed["data"] = {
            mime: joined_text(value)
            if isinstance(value, list) and not _is_json_mime(mime)
            else value
            for mime, value in data.items()
        }
    return fixed


def _copy_outputs(outputs: list[dict]) -> list[dict]:
    for out in outputs:
        if not isinstance(out, dict) or not isinstance(out.get("output_type"), str):
            raise NbstageError(
                ErrorCode.BAD_REQUEST,
                "Each output must be an nbformat output object with an 'output_type'.",
            )
    return [_joined_output(o) for o in outputs]


def _without_outputs(cell: Cell) -> dict:
    shown = cell.to_json(include_outputs=False)
    if cell.cell_type == "code":
        shown["output_count"] = len(cell.outputs)
    return shown
