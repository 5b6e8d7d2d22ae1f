"""Requests a notebook's Room answers about its cells: reading them and editing them."""

from __future__ import annotations

from enum import StrEnum

from nbstage.protocol.common.frozen import frozen
from nbstage.protocol.daemon.request_wire import wire_request


@wire_request("get_cell")
@frozen
class GetCell:
    notebook_id: str
    cell_id: str
    preview: int | None = None
    """Cut each output text in the answer to about this many bytes (an agent's preview,
    applied before the reply is encoded); None: outputs whole."""


class CellsFormat(StrEnum):
    SUMMARY = "summary"
    """One short line per cell: CellsSummarized."""
    JSON = "json"
    """Whole nbformat cells: CellsShown."""


@wire_request("get_cells")
@frozen
class GetCells:
    notebook_id: str
    format: CellsFormat = CellsFormat.SUMMARY
    start: int = 0
    count: int | None = None
    include_outputs: bool = False
    preview: int | None = None
    """As GetCell's, for each cell's outputs."""


@wire_request("create_cell")
@frozen
class CreateCell:
    notebook_id: str
    source: str = ""
    cell_type: str = "code"
    index: int | None = None
    key: str | None = None
    """Idempotency key: a repeat returns the first result and changes nothing."""


@wire_request("set_cell")
@frozen
class SetCell:
    notebook_id: str
    cell_id: str
    source: str | None = None
    cell_type: str | None = None
    key: str | None = None


@wire_request("delete_cell")
@frozen
class DeleteCell:
    notebook_id: str
    cell_id: str
    key: str | None = None


@wire_request("move_cell")
@frozen
class MoveCell:
    notebook_id: str
    cell_id: str
    after_cell_id: str | None = None
    key: str | None = None


@wire_request("replace_match")
@frozen
class ReplaceMatch:
    notebook_id: str
    cell_id: str
    match: str
    content: str
    context_before: str | None = None
    context_after: str | None = None
    key: str | None = None


@wire_request("replace_regex")
@frozen
class ReplaceRegex:
    notebook_id: str
    cell_id: str
    pattern: str
    content: str
    key: str | None = None


@wire_request("clear_outputs")
@frozen
class ClearOutputs:
    """Empty one code cell's outputs and execution count, or every code cell's."""

    notebook_id: str
    cell_id: str | None = None
    key: str | None = None


class TagChange(StrEnum):
    ADD = "add"
    REMOVE = "remove"


@wire_request("change_cell_tags")
@frozen
class ChangeCellTags:
    """Add tags to, or remove them from, a cell's ``metadata.tags``."""

    notebook_id: str
    cell_id: str
    change: TagChange
    tags: list[str]
    key: str | None = None
