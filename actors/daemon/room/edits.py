"""The edits a client asks of a Room's document, by request type: each applies its
request to the document the Room hands it and returns the reply. Only the Room calls
them, inside its once-only and journal wrapper (keyed_requests.py ``mutation``). The changes
that come from elsewhere (outputs, a merge with the file) are here too, for the Room to
apply at its own call."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from nbstage.actors.daemon.notebook.document import Document
from nbstage.actors.daemon.room.actions import SetOutputs
from nbstage.protocol.common.errors import ErrorCode, NbstageError
from nbstage.protocol.daemon import replies, requests


def create_cell(doc: Document, req: requests.CreateCell) -> replies.CellCreated:
    cell, index = doc.create_cell(req.source, req.cell_type, req.index)
    return replies.CellCreated(cell.id, index)


def set_cell(doc: Document, req: requests.SetCell) -> replies.CellUpdated:
    return replies.CellUpdated(doc.set_cell(req.cell_id, req.source, req.cell_type).id)


def delete_cell(doc: Document, req: requests.DeleteCell) -> replies.CellDeleted:
    doc.delete_cell(req.cell_id)
    return replies.CellDeleted(req.cell_id)


def move_cell(doc: Document, req: requests.MoveCell) -> replies.CellMoved:
    return replies.CellMoved(req.cell_id, doc.move_cell(req.cell_id, req.after_cell_id))


def replace_match(doc: Document, req: requests.ReplaceMatch) -> replies.CellUpdated:
    cell = doc.replace_match(
        req.cell_id, req.match, req.content, req.context_before, req.context_after
    )
    return replies.CellUpdated(cell.id)


def replace_regex(doc: Document, req: requests.ReplaceRegex) -> replies.CellUpdated:
    return replies.CellUpdated(doc.replace_regex(req.cell_id, req.pattern, req.content).id)


def clear_outputs(doc: Document, req: requests.ClearOutputs) -> replies.OutputsCleared:
    return replies.OutputsCleared(doc.clear_outputs(req.cell_id))


def change_cell_tags(doc: Document, req: requests.ChangeCellTags) -> replies.CellTagsChanged:
    adding = req.change is requests.TagChange.ADD
    tags = check_tags(req.tags)
    cell = doc.change_tags(req.cell_id, tags if adding else [], [] if adding else tags)
    return replies.CellTagsChanged(cell.id, list(cell.metadata.get("tags") or []))


def check_tags(tags: list[str]) -> list[str]:
    """Tags are non-empty strings without commas or whitespace, as Jupyter's tag editor
    takes them."""
    for tag in tags:
        if not tag or any(ch.isspace() or ch == "," for ch in tag) or len(tag) > 200:
            raise NbstageError(
                ErrorCode.BAD_REQUEST,
                f"{tag!r} is not a tag: give up to 200 characters with no spaces or commas.",
            )
    return tags


EDITS: dict[type, Callable[[Document, Any], Any]] = {
    requests.CreateCell: create_cell,
    requests.SetCell: set_cell,
    requests.DeleteCell: delete_cell,
    requests.MoveCell: move_cell,
    requests.ReplaceMatch: replace_match,
    requests.ReplaceRegex: replace_regex,
    requests.ClearOutputs: clear_outputs,
    requests.ChangeCellTags: change_cell_tags,
}


def set_outputs(doc: Document, todo: SetOutputs) -> None:
    """A kernel's outputs; a cell deleted or retyped meanwhile takes none."""
    with contextlib.suppress(NbstageError):
        doc.set_outputs(todo.cell_id, todo.outputs, todo.count)


def take_notebook(doc: Document, notebook: dict[str, Any]) -> None:
    """The notebook a merge with the file produced, as one new revision."""
    doc.replace(Document.from_json(notebook))
