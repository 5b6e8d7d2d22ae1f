"""One notebook cell as the document holds it, and how it is read from nbformat JSON.

Pure: no actors, no files, no clock. Failures are raised as :class:`NbstageError` with a
sentence that tells the caller what to do next.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, field
from typing import Any

from nbstage.actors.common.output_bounds import joined_text
from nbstage.protocol.common.errors import ErrorCode, NbstageError
from nbstage.protocol.common.mime_types import is_json_mime
from nbstage.protocol.daemon.replies import CellSummary, CellView

CELL_TYPES = ("code", "markdown", "raw")
PREVIEW_CHARS = 120

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

    def without_outputs(self) -> dict:
        """The nbformat dict with ``output_count`` in place of a code cell's outputs."""
        shown = self.to_json(include_outputs=False)
        if self.cell_type == "code":
            shown["output_count"] = len(self.outputs)
        return shown

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

    def retype(self, cell_type: str) -> bool:
        """Change the type and drop what the new type cannot hold; return whether it changed."""
        if self.cell_type == cell_type:
            return False
        self.cell_type = cell_type
        self.outputs = []
        self.execution_count = None
        if cell_type == "code":
            self.attachments = None
        return True


def source_preview(source: str, max_chars: int = PREVIEW_CHARS) -> str:
    """First non-blank line, at most ``max_chars`` long (a cut line ends with '…').

    Reads at most ``max_chars + 1`` characters past leading whitespace, whatever the size.
    """
    start = _LEADING_SPACE.match(source).end() if source[:1].isspace() else 0
    head = source[start : start + max_chars + 1].split("\n", 1)[0].rstrip()
    if len(head) <= max_chars:
        return head
    return head[: max_chars - 1] + "…"


def fresh_cell_id(taken: set[str] | frozenset[str] = frozenset()) -> str:
    """Eight lowercase hex characters not in ``taken``."""
    while True:
        cell_id = uuid.uuid4().hex[:8]
        if cell_id not in taken:
            return cell_id


def valid_cell_id(value: object) -> bool:
    """Whether ``value`` fits nbformat 4.5's cell id rule (1-64 of ``[a-zA-Z0-9_-]``)."""
    return isinstance(value, str) and _VALID_ID.fullmatch(value) is not None


def check_cell_type(cell_type: str) -> None:
    if cell_type not in CELL_TYPES:
        raise NbstageError(
            ErrorCode.BAD_CELL_TYPE,
            f"Unknown cell_type {clipped(cell_type)}. Use 'code', 'markdown' or 'raw'.",
        )


def clipped(text: object, limit: int = 64) -> str:
    """``text``'s repr, cut to ``limit`` characters, to quote a caller's value in a message."""
    shown = repr(text)
    return shown if len(shown) <= limit else shown[: limit - 4] + "...'"


def cells_from_json(raw_cells: object) -> list[Cell]:
    """Cells from a notebook's ``cells``; those without a valid id, or repeating an
    earlier cell's id, get a fresh one."""
    if not isinstance(raw_cells, list):
        raise NbstageError(ErrorCode.BAD_REQUEST, "The notebook's 'cells' is not a list.")
    cells = [_cell_from_json(raw, i) for i, raw in enumerate(raw_cells)]
    _dedupe_ids(cells)
    return cells


def checked_outputs(outputs: list[dict]) -> list[dict]:
    """Copies of ``outputs`` with multiline strings joined, once each is an nbformat output."""
    for out in outputs:
        if not isinstance(out, dict) or not isinstance(out.get("output_type"), str):
            raise NbstageError(
                ErrorCode.BAD_REQUEST,
                "Each output must be an nbformat output object with an 'output_type'.",
            )
    return [_joined_output(o) for o in outputs]


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


def _joined_output(out: dict) -> dict:
    """A copy of ``out`` whose multiline strings are single strings."""
    fixed = dict(out)
    if fixed.get("output_type") == "stream" and isinstance(fixed.get("text"), list):
        fixed["text"] = joined_text(fixed["text"])
    data = fixed.get("data")
    if isinstance(data, dict):
        fixed["data"] = {
            mime: joined_text(value)
            if isinstance(value, list) and not is_json_mime(mime)
            else value
            for mime, value in data.items()
        }
    return fixed
