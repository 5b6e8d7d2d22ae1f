"""A person's edit, as the Room takes it: the journal records that turn the Room's
Document into what the shared Y document now holds, matched by cell id.

Pure. Only what a person may change reaches the records: sources, cell types,
metadata, new cells, deletions and order. Outputs and execution counts are the
kernel's, so a record never carries them (``journal.apply_records`` keeps a cell's
outputs); the mirror that follows puts the Room's back in the Y document.
"""

from __future__ import annotations

from typing import Any

from nbstage.actors.daemon.notebook import journal
from nbstage.actors.daemon.notebook.cell_model import (
    CELL_TYPES,
    Cell,
    cells_from_json,
    valid_cell_id,
)
from nbstage.actors.daemon.notebook.document import Document
from nbstage.protocol.daemon.notices import Notice, NoticeKind

EDITABLE = ("cell_type", "source", "metadata", "attachments")


def records(doc: Document, shared: dict[str, Any]) -> list[dict[str, Any]]:
    """Deletes first, then puts (new and changed cells, at their index in ``shared``), then
    the moves that bring the order to ``shared``'s. A Y cell without a usable id, or
    repeating an earlier one, is not taken."""
    theirs = _usable(shared.get("cells"))
    ours = {cell.id: cell.to_json(include_outputs=False) for cell in doc.cells}
    out = [journal.delete(cell_id) for cell_id in ours if cell_id not in theirs]
    order = [cell_id for cell_id in ours if cell_id in theirs]
    for index, (cell_id, cell) in enumerate(theirs.items()):
        mine = ours.get(cell_id)
        if mine is None or _edited(mine, cell):
            out.append(journal.put(_kept(cell, mine), index))
        if mine is None:
            order.insert(min(index, len(order)), cell_id)
    for index, cell_id in enumerate(theirs):
        if order[index] != cell_id:
            order.remove(cell_id)
            order.insert(index, cell_id)
            out.append(journal.move(cell_id, index))
    return out


def take(doc: Document, records: list[dict[str, Any]]) -> None:
    """Apply a person's records to ``doc`` as the journal replays them. The cells they do
    not name stay the same objects, and a named cell keeps its outputs list, so the
    mirror that follows (which knows outputs by their list) writes only what changed.
    Only the named cells are copied and read again: the others go through the replay
    as their ids alone, so a keystroke in a big notebook copies one cell, not all."""
    named = {r["cell"]["id"] if r["op"] == "put" else r["cell_id"] for r in records}
    light = {"cells": [c.to_json() if c.id in named else {"id": c.id} for c in doc.cells]}
    old = {cell.id: cell for cell in doc.cells}
    cells: list[Cell] = []
    for data in journal.apply_records(light, records).notebook["cells"]:
        kept = old.get(data["id"])
        if kept is not None and data["id"] not in named:
            cells.append(kept)
            continue
        (cell,) = cells_from_json([data])
        if kept is not None and cell.outputs == kept.outputs:
            cell.outputs = kept.outputs
        cells.append(cell)
    doc.replace(Document(cells, doc.metadata), changed=named)


def records_in_place(
    doc: Document, changed: dict[int, dict[str, Any]]
) -> list[dict[str, Any]] | None:
    """What ``records`` makes of a person's update that added, deleted and moved no
    cell, from the cells it changed alone (``SharedDoc.edited_in_place``): a put for each
    whose content a person may change differs, in index order. None when a cell read
    back is not one a record can carry: ``records`` then decides, on every cell."""
    out = []
    for index in sorted(changed):
        cell = changed[index]
        if not _usable_cell(cell) or cell["id"] != doc.cells[index].id:
            return None
        mine = doc.cells[index].to_json(include_outputs=False)
        if _edited(mine, cell):
            out.append(journal.put(_kept(cell, mine), index))
    return out


def _usable(cells: object) -> dict[str, dict[str, Any]]:
    kept: dict[str, dict[str, Any]] = {}
    for cell in cells if isinstance(cells, list) else []:
        if _usable_cell(cell) and cell["id"] not in kept:
            kept[cell["id"]] = cell
    return kept


def _usable_cell(cell: object) -> bool:
    if not isinstance(cell, dict) or cell.get("cell_type") not in CELL_TYPES:
        return False
    cell_id = cell.get("id")
    valid = isinstance(cell_id, str) and valid_cell_id(cell_id)
    return valid and isinstance(cell.get("source"), str)


def _edited(mine: dict[str, Any], theirs: dict[str, Any]) -> bool:
    return any(mine.get(key) != theirs.get(key) for key in EDITABLE if key in theirs or key in mine)


def _kept(cell: dict[str, Any], mine: dict[str, Any] | None) -> dict[str, Any]:
    """The cell as a journal put carries it: its id, what a person may change, and the
    Room's execution count."""
    kept = {"id": cell["id"], "cell_type": cell["cell_type"], "source": cell["source"]}
    metadata = cell.get("metadata") if isinstance(cell.get("metadata"), dict) else {}
    kept["metadata"] = _as_before(metadata, (mine or {}).get("metadata"))
    if cell["cell_type"] == "code":
        kept["execution_count"] = (mine or {}).get("execution_count")
    elif isinstance(cell.get("attachments"), dict):
        kept["attachments"] = cell["attachments"]
    return kept


def _as_before(theirs: Any, mine: Any) -> Any:
    """``theirs`` with each whole number that ``mine`` holds as the same float, at the
    same place, kept a float: the Y document gives numbers back as floats, read as ints
    where whole (shared_cells.whole_numbers), so a key the person did not touch would
    otherwise turn from ``2.0`` to ``2`` when they type in the cell."""
    if isinstance(theirs, dict) and isinstance(mine, dict):
        return {k: _as_before(v, mine[k]) if k in mine else v for k, v in theirs.items()}
    if isinstance(theirs, list) and isinstance(mine, list) and len(theirs) == len(mine):
        return [_as_before(a, b) for a, b in zip(theirs, mine, strict=True)]
    if type(theirs) is int and type(mine) is float and theirs == mine:
        return mine
    return theirs


def notice(records: list[dict[str, Any]]) -> Notice:
    """The line the agents' next results carry: which cells the person changed."""
    ids = [r["cell"]["id"] if r["op"] == "put" else r["cell_id"] for r in records]
    named = ", ".join(dict.fromkeys(ids))
    return Notice(
        NoticeKind.PERSON_EDITED,
        f"A person changed cells in JupyterLab ({named}); read them again before editing them.",
    )
