"""A room's journal records, pure: built from a mutation's result, applied to a notebook.

A record is the state a mutation produced, not the call (``create_cell`` picks a random
id, ``replace_regex`` depends on the text before), so applying records in order gives
the notebook the room had. Outputs are left out: they are not acknowledged edits.
The records live in ``journal.sqlite3`` (``journal_store.py``); docs/notes/journal.md
has the design and its numbers.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from nbstage.actors.daemon.environment.dependencies import read_dependencies, with_dependencies
from nbstage.actors.daemon.notebook.document import Document
from nbstage.protocol.common.words import plural
from nbstage.protocol.daemon.notices import Notice, NoticeKind
from nbstage.protocol.daemon.replies import CellCreated, CellDeleted, CellMoved, CellUpdated


def put(cell: dict[str, Any], index: int) -> dict[str, Any]:
    return {"op": "put", "cell": cell, "index": index}


def delete(cell_id: str) -> dict[str, Any]:
    return {"op": "delete", "cell_id": cell_id}


def move(cell_id: str, index: int) -> dict[str, Any]:
    return {"op": "move", "cell_id": cell_id, "index": index}


def dependencies(deps: list[str]) -> dict[str, Any]:
    return {"op": "dependencies", "dependencies": deps}


def mutation_record(doc: Document, result: object) -> dict[str, Any] | None:
    """The record of a mutation that answered ``result`` on ``doc`` (already applied)."""
    match result:
        case CellCreated(cell_id=cell_id) | CellUpdated(cell_id=cell_id):
            return put(doc.cell(cell_id).to_json(include_outputs=False), doc.index_of(cell_id))
        case CellDeleted(deleted=cell_id):
            return delete(cell_id)
        case CellMoved(cell_id=cell_id, index=index):
            return move(cell_id, index)
    return None


@dataclass(frozen=True)
class Replayed:
    notebook: dict[str, Any]
    applied: int
    """Records that changed the notebook; one whose state it already has (a save was
    durable before its truncation) does not count."""
    skipped: int
    """Records that no longer apply: their cell is gone (a file changed while the daemon
    was down), or their kind is unknown."""


def apply_records(notebook: dict[str, Any], records: list[dict[str, Any]]) -> Replayed:
    """Apply records in order to a copy of ``notebook``.

    A put of a cell the notebook has replaces it where it is, keeping its outputs; a put
    of a new cell inserts it at its index (or last). A delete or a move of a cell the
    notebook lacks is skipped.
    """
    notebook = copy.deepcopy(notebook)
    cells: list[dict[str, Any]] = notebook.setdefault("cells", [])
    applied = skipped = 0
    for record in records:
        if record.get("op") == "dependencies":
            outcome = _set_dependencies(notebook, record.get("dependencies"))
        else:
            outcome = _apply(cells, record)
        if outcome is None:
            skipped += 1
        elif outcome:
            applied += 1
    return Replayed(notebook, applied, skipped)


def _apply(cells: list[dict[str, Any]], record: dict[str, Any]) -> bool | None:
    """Whether the record changed ``cells``; None when it no longer applies."""
    match record:
        case {"op": "put", "cell": dict(cell), "index": int(index)}:
            at = _index(cells, cell.get("id"))
            old = cells[at] if at is not None else {}
            fresh = copy.deepcopy(cell)
            if fresh.get("cell_type") == "code":
                same_type = old.get("cell_type") == "code"
                fresh["outputs"] = copy.deepcopy(old.get("outputs", [])) if same_type else []
                if not same_type:
                    fresh["execution_count"] = None
            if at is None:
                cells.insert(min(max(index, 0), len(cells)), fresh)
                return True
            cells[at] = fresh
            return fresh != old
        case {"op": "delete", "cell_id": str(cell_id)}:
            at = _index(cells, cell_id)
            if at is None:
                return None
            del cells[at]
            return True
        case {"op": "move", "cell_id": str(cell_id), "index": int(index)}:
            at = _index(cells, cell_id)
            if at is None:
                return None
            cell = cells.pop(at)
            to = min(max(index, 0), len(cells))
            cells.insert(to, cell)
            return to != at
    return None


def _set_dependencies(notebook: dict[str, Any], deps: object) -> bool | None:
    if not isinstance(deps, list) or not all(isinstance(d, str) for d in deps):
        return None
    metadata = notebook.get("metadata")
    metadata = metadata if isinstance(metadata, dict) else {}
    if list(read_dependencies(metadata)) == deps:
        return False
    notebook["metadata"] = with_dependencies(metadata, deps)
    return True


def _index(cells: list[dict[str, Any]], cell_id: object) -> int | None:
    for i, cell in enumerate(cells):
        if cell.get("id") == cell_id:
            return i
    return None


def restored_notice(where: str, count: int, file_backed: bool) -> Notice:
    edits = plural(count, "edit")
    tail = " and are not saved yet" if file_backed else ""
    return Notice(
        NoticeKind.JOURNAL_RESTORED,
        f"{where}: {edits} made before the daemon stopped were restored from the journal{tail}",
        "save_notebook()" if file_backed else None,
    )
