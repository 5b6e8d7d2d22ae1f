"""A Room's answers about the notebook's cells: one cell, a window of them, and each edit."""

from __future__ import annotations

from typing import Any, TypedDict

from nbstage.protocol.common.frozen import frozen


@frozen
class CellView:
    """One cell in the get_cell tool's shape."""

    cell_id: str
    cell_type: str
    source: str
    execution_count: int | None
    outputs: list[dict[str, Any]]
    """nbformat outputs."""


@frozen
class CellShown:
    cell: CellView


class _CellSummaryKeys(TypedDict):
    cell_id: str
    index: int
    cell_type: str
    source_preview: str


class CellSummary(_CellSummaryKeys, total=False):
    """One row of a summary: a plain dict, because a 1,000-cell answer has 1,000 of them
    (the codec checks each row's keys and types and keeps the dict it was given).

    The counts are left out at their defaults (never run, no outputs), so the row of a
    cell never run has four keys: each key of a 1,000-row answer costs every reader,
    down to the MCP client, about 0.3 ms to parse. A ``None`` count, which older daemons
    send, is still read. ``NotRequired`` would say all this more briefly, but Python 3.11
    ignores it under postponed annotations."""

    execution_count: int | None
    output_count: int


@frozen
class CellsSummarized:
    """The answer to get_cells in the summary format."""

    cells: list[CellSummary]
    total: int
    """Cells in the notebook, whatever the window asked for."""


@frozen
class CellsShown:
    """The answer to get_cells in the json format."""

    cells: list[dict[str, Any]]
    """nbformat 4.5 cells; without outputs when they were not asked for."""
    total: int
    metadata: dict[str, Any] | None = None
    """The notebook's metadata, with a window that starts at the first cell."""


@frozen
class CellCreated:
    cell_id: str
    index: int


@frozen
class CellUpdated:
    """The answer to set_cell, replace_match and replace_regex."""

    cell_id: str


@frozen
class CellDeleted:
    deleted: str


@frozen
class CellMoved:
    cell_id: str
    index: int


@frozen
class OutputsCleared:
    cleared: list[str]
    """The ids of the code cells that had outputs or a count, in notebook order."""


@frozen
class CellTagsChanged:
    cell_id: str
    tags: list[str]
    """The cell's tags after the change."""
