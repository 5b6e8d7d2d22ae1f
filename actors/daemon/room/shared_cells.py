"""The cells of the Room's shared document: how the mirror knows what it last wrote
(a fingerprint per cell) and how a cell passes between nbformat and JupyterLab's Y
schema. Pure; shared_doc.py uses them.
"""

from __future__ import annotations

import sys
from typing import Any, NamedTuple, Protocol

import orjson
from pycrdt import Map, Text

from nbstage.actors.daemon.notebook.cell_model import Cell
from nbstage.actors.daemon.notebook.notebook_files import INT_RANGE


class CellContent(Protocol):
    """What the mirror writes of a cell: a Document's ``Cell`` or a ``CellCopy``."""

    @property
    def id(self) -> str: ...
    @property
    def cell_type(self) -> str: ...
    @property
    def source(self) -> str: ...
    @property
    def outputs(self) -> list[dict[str, Any]]: ...
    @property
    def execution_count(self) -> int | None: ...
    @property
    def metadata(self) -> dict[str, Any]: ...


class CellCopy(NamedTuple):
    """A cell's content when it was copied, by reference: the Document replaces a cell's
    outputs list and metadata dict when they change, never changes them in place, so
    a worker thread may read these while the Room goes on changing the Document."""

    id: str
    cell_type: str
    source: str
    outputs: list[dict[str, Any]]
    execution_count: int | None
    metadata: dict[str, Any]


def copies(cells: list[Cell]) -> tuple[CellCopy, ...]:
    """The cells' content as it is now; a reference each, no deep copy."""
    return tuple(
        CellCopy(c.id, c.cell_type, c.source, c.outputs, c.execution_count, c.metadata)
        for c in cells
    )


Fingerprint = tuple[str, str, int, int | None, str]
"""A cell as the mirror last wrote it: type, source, outputs (the list's identity and
length as one int), count, metadata (as sorted JSON, a str: orjson's bytes keep a buffer
of kilobytes each). The shared document keeps one a cell while anyone watches, so each
is kept small: the str and the source are shared, not copies (ADR 0004, "What the live
document weighs")."""


def fingerprint(cell: CellContent) -> Fingerprint:
    """What the mirror compares: the Document replaces a cell's outputs list whenever
    they change, so the list's identity stands for its content. Cells with the same
    metadata share one interned str of it."""
    metadata = sys.intern(orjson.dumps(cell.metadata, option=orjson.OPT_SORT_KEYS).decode())
    outputs = id(cell.outputs) << 32 | len(cell.outputs)
    return (cell.cell_type, cell.source, outputs, cell.execution_count, metadata)


def unknown(cell: Cell) -> Fingerprint:
    """A Y cell the mirror did not write (a person's new cell, taken): everything but its
    type and source, which the Room took from it, is written back."""
    return (cell.cell_type, cell.source, -1, -2, "")


def cell_of(ycell: Any) -> dict[str, Any]:
    """A Y cell as nbformat has it (Yjs numbers are floats)."""
    cell: dict[str, Any] = (ycell.to_py() if isinstance(ycell, Map) else None) or {}
    cell.pop("execution_state", None)
    whole_numbers(cell)
    return cell


def whole_numbers(value: list[Any] | dict[Any, Any]) -> None:
    """``value`` with each whole float an int, as nbformat's JSON would have it, except
    where no int can stand for it: infinities, NaN and numbers outside ``INT_RANGE``
    stay floats (jupyter_ydoc's ``cast_all`` raised on the first two and made the last
    an int that no journal record or save could hold, or that pycrdt panicked on when
    the mirror wrote it back). Changed in place."""
    items = enumerate(value) if isinstance(value, list) else value.items()
    for key, item in list(items):
        if type(item) is float and item.is_integer() and int(item) in INT_RANGE:
            value[key] = int(item)
        elif isinstance(item, list | dict):
            whole_numbers(item)


def id_of(ycell: Any) -> str | None:
    cell_id = ycell.get("id") if isinstance(ycell, Map) else None
    return cell_id if isinstance(cell_id, str) else None


def within_y(value: Any) -> Any:
    """A copy of a JSON value that a Y document can hold: an integer past 64 signed bits
    (which a kernel's message may carry, read by orjson) is a float, as the browser
    holds it anyway; pycrdt panicked on it."""
    if isinstance(value, dict):
        return {key: within_y(item) for key, item in value.items()}
    if isinstance(value, list):
        return [within_y(item) for item in value]
    if type(value) is int and value not in INT_RANGE:
        return float(value)
    return value


def youtput(output: dict[str, Any]) -> Map[Any]:
    """An output as JupyterLab's schema holds it: a stream's text is a Y text."""
    output = within_y(output)
    if output.get("output_type") == "stream":
        text = output.get("text", "")
        output["text"] = Text(text if isinstance(text, str) else "".join(text))
    return Map(output)
