"""The three-way merge of a notebook's cells by id, when its file changed on disk.

``base`` is what the Room last read from or wrote to the file, ``ours`` what the Room
holds now, ``theirs`` what the file holds now. Cells are nbformat cell dicts as
``Document.to_json`` gives them, so equal content compares equal. Pure: no actor, no
file, no clock.

The rules, per cell id:

- changed only on disk: the file's version; changed only in the room: the room's;
- changed on both sides (to different content): the room's version, with the file's
  right after it as a new cell marked as a conflict copy (``metadata.nbstage``, and a
  first line saying so);
- added on either side: kept;
- deleted on disk and untouched in the room: deleted; deleted on disk but changed in
  the room: the room's version stays;
- deleted in the room and untouched on disk: stays deleted; deleted in the room but
  changed on disk: the file's version comes back (counted as added). An edit always
  wins over a deletion, so no one's text is lost; a deletion is easy to redo.

Order: the side that reordered the cells they share with ``base`` sets the order (the
room's if both did, or neither). A cell only the other side has goes right after the
cell it follows on that side, or first when it follows none.
"""

from __future__ import annotations

from collections.abc import Sequence
from difflib import SequenceMatcher
from typing import Any

from nbstage.actors.daemon.notebook.document import fresh_cell_id
from nbstage.protocol.common.frozen import frozen
from nbstage.protocol.common.words import plural
from nbstage.protocol.daemon.notices import Notice, NoticeKind

CONFLICT_MARK = "nbstage: conflict copy from disk"
CONFLICT_FIRST_LINES = {
    "code": f"# {CONFLICT_MARK}",
    "markdown": f"<!-- {CONFLICT_MARK} -->",
    "raw": CONFLICT_MARK,
}
CONFLICT_METADATA = {"conflict_copy": True}
"""A conflict copy's ``metadata["nbstage"]``."""

Cell = dict[str, Any]


@frozen
class MergeSummary:
    updated: int = 0
    """Cells that took the file's version."""
    added: int = 0
    """Cells that came from the file: new there, or changed there after the room deleted them."""
    deleted: int = 0
    """Cells the file deleted and the room had not touched."""
    conflicts: int = 0
    """Conflict copies inserted."""

    @property
    def changed(self) -> bool:
        return bool(self.updated or self.added or self.deleted or self.conflicts)


@frozen
class Merged:
    cells: list[Cell]
    summary: MergeSummary


def merge_cells(base: Sequence[Cell], ours: Sequence[Cell], theirs: Sequence[Cell]) -> Merged:
    by_base = {c["id"]: c for c in base}
    by_ours = {c["id"]: c for c in ours}
    by_theirs = {c["id"]: c for c in theirs}
    taken = {*by_base, *by_ours, *by_theirs}
    kept: dict[str, list[Cell]] = {}
    updated = added = deleted = conflicts = 0
    for cell_id, mine in by_ours.items():
        old, disk = by_base.get(cell_id), by_theirs.get(cell_id)
        if disk is None:
            if old is not None and mine == old:
                deleted += 1
            else:
                kept[cell_id] = [mine]
        elif disk in (mine, old):
            kept[cell_id] = [mine]
        elif mine == old:
            kept[cell_id] = [disk]
            updated += 1
        else:
            copy = conflict_copy(disk, taken)
            taken.add(copy["id"])
            kept[cell_id] = [mine, copy]
            conflicts += 1
    for cell_id, disk in by_theirs.items():
        if cell_id not in by_ours and disk != by_base.get(cell_id):
            kept[cell_id] = [disk]
            added += 1
    order = _order([c["id"] for c in base], list(by_ours), list(by_theirs), kept)
    cells = [cell for cell_id in order for cell in kept[cell_id]]
    return Merged(cells, MergeSummary(updated, added, deleted, conflicts))


def merge_metadata(base: dict, ours: dict, theirs: dict) -> dict:
    """Notebook metadata as a whole: the file's when only the file changed it."""
    return theirs if ours == base else ours


def conflict_copy(cell: Cell, taken: set[str]) -> Cell:
    """The file's version of a cell both sides changed, as a new cell marked as a copy."""
    first = CONFLICT_FIRST_LINES.get(cell.get("cell_type"), CONFLICT_MARK)
    metadata = {**cell.get("metadata", {}), "nbstage": dict(CONFLICT_METADATA)}
    source = cell.get("source", "")
    return {
        **cell,
        "id": fresh_cell_id(taken),
        "metadata": metadata,
        "source": f"{first}\n{source}" if source else first,
    }


def is_conflict_copy(cell: Cell) -> bool:
    marker = cell.get("metadata", {}).get("nbstage")
    return isinstance(marker, dict) and marker.get("conflict_copy") is True


def recover_ids(
    base: Sequence[Cell],
    theirs: Sequence[Cell],
    missing: set[int],
    taken: frozenset[str] = frozenset(),
) -> list[Cell]:
    """Give the cells at ``missing`` (which came from the file without an id) the id of the
    base cell they stand for, or a fresh one (not in ``taken`` either).

    A file an editor wrote as nbformat 4.4 has no ids, so its cells are matched to the
    base by content and position: cells that line up unchanged keep their base id, a
    run of changed cells between them takes the ids of the base cells it replaces, one
    for one, and anything beyond is new.
    """
    if not missing:
        return list(theirs)
    claimed = {c["id"] for i, c in enumerate(theirs) if i not in missing}
    spare = [c for c in base if c["id"] not in claimed]
    at = sorted(missing)
    matcher = SequenceMatcher(
        None, [_content(c) for c in spare], [_content(theirs[i]) for i in at], autojunk=False
    )
    ids: dict[int, str] = {}
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag in ("equal", "replace"):
            for k in range(min(i2 - i1, j2 - j1)):
                ids[at[j1 + k]] = spare[i1 + k]["id"]
    taken = {c["id"] for c in base} | claimed | set(ids.values()) | taken
    out = []
    for i, cell in enumerate(theirs):
        if i in missing:
            cell_id = ids.get(i)
            if cell_id is None:
                cell_id = fresh_cell_id(taken)
                taken.add(cell_id)
            cell = {**cell, "id": cell_id}
        out.append(cell)
    return out


def notice_line(path: str, summary: MergeSummary) -> Notice:
    line = (
        f"{path} changed on disk: {plural(summary.updated, 'cell')} updated, "
        f"{summary.added} added, {plural(summary.conflicts, 'conflict')}"
    )
    if summary.deleted:
        line += f", {summary.deleted} deleted"
    return Notice(NoticeKind.CHANGED_ON_DISK, line, "get_all_cells()")


def _content(cell: Cell) -> tuple[str, str]:
    return cell.get("cell_type", ""), cell.get("source", "")


def _order(
    base: list[str], ours: list[str], theirs: list[str], kept: dict[str, list[Cell]]
) -> list[str]:
    if _reordered(base, theirs) and not _reordered(base, ours):
        primary, secondary = theirs, ours
    else:
        primary, secondary = ours, theirs
    order = [cell_id for cell_id in primary if cell_id in kept]
    placed = set(order)
    for k, cell_id in enumerate(secondary):
        if cell_id not in kept or cell_id in placed:
            continue
        after = next((prev for prev in reversed(secondary[:k]) if prev in placed), None)
        order.insert(0 if after is None else order.index(after) + 1, cell_id)
        placed.add(cell_id)
    return order


def _reordered(base: list[str], side: list[str]) -> bool:
    """Whether ``side`` put the cells it shares with ``base`` in another order."""
    shared = set(base) & set(side)
    return [i for i in side if i in shared] != [i for i in base if i in shared]
