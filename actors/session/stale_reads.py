"""What the session shows while the daemon link is down (SPEC §6: ``projection_read``
from the last snapshot, marked stale).

The snapshot is made of the daemon's own answers to the reads this session already
made, so keeping it costs no extra request: the newest ``GetCell`` answer per cell, the
newest ``GetCells`` answer per window and format, and the newest ``ListRooms``. Cells of
a json ``GetCells`` answer with outputs count as ``GetCell`` answers too. A stale answer
replays the tool's own handler against the snapshot, so it is rendered as a live one.

The session's own active and parked notebooks are not the daemon's to tell: a listing
always names them, with what only the daemon knows (peers, kernel status) left unknown
when the snapshot has nothing newer.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import field, replace
from datetime import datetime
from typing import Any

from nbstage.protocol.common.errors import ErrorCode
from nbstage.protocol.common.frozen import frozen
from nbstage.protocol.daemon.notices import PREFIX, Notice, NoticeKind, with_notices
from nbstage.protocol.daemon.replies import (
    CellShown,
    CellsShown,
    CellsSummarized,
    CellView,
    RoomsListed,
    RoomView,
)
from nbstage.protocol.daemon.requests import (
    CreateCell,
    DeleteCell,
    ExecuteCell,
    GetCell,
    GetCells,
    ListRooms,
    MoveCell,
    ReplaceMatch,
    ReplaceRegex,
    SetCell,
)
from nbstage.protocol.daemon_actors.kernel_facts import KernelState
from nbstage.protocol.mcp.tool_results import tool_error

MAX_LISTINGS = 16
"""GetCells answers kept, over all notebooks; the oldest goes first."""

CHANGES = (CreateCell, SetCell, DeleteCell, MoveCell, ReplaceMatch, ReplaceRegex, ExecuteCell)
"""Requests whose success makes the snapshot of their notebook older than the notebook."""


@frozen
class Seen:
    at: float
    """Wall-clock time the daemon's answer arrived."""
    reply: Any


@frozen
class Snapshot:
    cells: Mapping[tuple[str, str], Seen] = field(default_factory=dict)
    """(notebook_id, cell_id) → CellShown."""
    listings: Mapping[GetCells, Seen] = field(default_factory=dict)
    """The GetCells request → CellsSummarized or CellsShown."""
    rooms: Seen | None = None
    changed: Mapping[str, float] = field(default_factory=dict)
    """notebook_id → when this session last changed it."""
    own: Mapping[str, str | None] = field(default_factory=dict)
    """notebook_id → path of this session's active and parked notebooks."""


def record(snapshot: Snapshot, request: object, reply: object, at: float) -> Snapshot:
    """The snapshot after the daemon answered ``request`` with ``reply`` at ``at``."""
    match request, reply:
        case GetCell(notebook_id, cell_id), CellShown():
            cells = {**snapshot.cells, (notebook_id, cell_id): Seen(at, reply)}
            return replace(snapshot, cells=cells)
        case GetCells(), CellsSummarized() | CellsShown():
            listings = {k: v for k, v in snapshot.listings.items() if k != request}
            listings[request] = Seen(at, reply)
            while len(listings) > MAX_LISTINGS:
                del listings[min(listings, key=lambda k: listings[k].at)]
            return replace(snapshot, listings=listings)
        case ListRooms(), RoomsListed():
            return replace(snapshot, rooms=Seen(at, reply))
    if isinstance(request, CHANGES):
        return replace(snapshot, changed={**snapshot.changed, request.notebook_id: at})
    return snapshot


def _shown(cell: Mapping[str, Any]) -> CellShown:
    source = cell.get("source", "")
    view = CellView(
        cell_id=cell["id"],
        cell_type=cell.get("cell_type", "code"),
        source=source if isinstance(source, str) else "".join(source),
        execution_count=cell.get("execution_count"),
        outputs=list(cell.get("outputs") or []),
    )
    return CellShown(view)


def keep_only(snapshot: Snapshot, held: Mapping[str, str | None]) -> Snapshot:
    """Forget the notebooks this session no longer holds (neither active nor parked), and
    remember the ones it holds: ``held`` maps each notebook id to its path."""
    return Snapshot(
        cells={k: v for k, v in snapshot.cells.items() if k[0] in held},
        listings={k: v for k, v in snapshot.listings.items() if k.notebook_id in held},
        rooms=snapshot.rooms,
        changed={k: v for k, v in snapshot.changed.items() if k in held},
        own=dict(held),
    )


def _with_own(snapshot: Snapshot, now: float) -> Seen | None:
    """The newest listing with every notebook of the session's own in it."""
    listed = snapshot.rooms.reply.rooms if snapshot.rooms else []
    known = {room.notebook_id for room in listed}
    missing = [
        RoomView(notebook_id, path, False, False, None, None, KernelState.UNKNOWN, None)
        for notebook_id, path in snapshot.own.items()
        if notebook_id not in known
    ]
    if snapshot.rooms is None and not missing:
        return None
    at = snapshot.rooms.at if snapshot.rooms else now
    return Seen(at, RoomsListed([*listed, *missing]))


def lookup(snapshot: Snapshot, request: object, now: float | None = None) -> Seen | None:
    """The snapshot's answer to ``request``, or None when it has none.

    A GetCells window is answered by the same request, else by the whole notebook's
    answer in the same format, cut to the window; a preview also by whole outputs."""
    match request:
        case GetCell(notebook_id, cell_id):
            found = [snapshot.cells.get((notebook_id, cell_id))]
            found += [
                Seen(seen.at, _shown(cell))
                for asked, seen in snapshot.listings.items()
                if asked.notebook_id == notebook_id
                and asked.include_outputs
                and isinstance(seen.reply, CellsShown)
                for cell in seen.reply.cells
                if cell.get("id") == cell_id
            ]
            return max(filter(None, found), key=lambda seen: seen.at, default=None)
        case GetCells():
            return _listing(snapshot, request) or _listing(snapshot, replace(request, preview=None))
        case ListRooms():
            return _with_own(snapshot, time.time() if now is None else now)
    return None


def _listing(snapshot: Snapshot, request: GetCells) -> Seen | None:
    if request in snapshot.listings:
        return snapshot.listings[request]
    seen = snapshot.listings.get(replace(request, start=0, count=None))
    if seen is None:
        return None
    end = None if request.count is None else request.start + request.count
    return Seen(seen.at, replace(seen.reply, cells=seen.reply.cells[request.start : end]))


NOTHING_KNOWN = {
    GetCell: "this session has not read cell {cell_id} yet",
    GetCells: "this session has not read this notebook's cells in that format yet",
    ListRooms: "this session has not listed the notebooks yet",
}


def stale_answer(snapshot: Snapshot, handler: Any) -> dict[str, Any]:
    """Drive a read tool's handler with the snapshot's answers; the result is marked
    stale, or is a tool error that says nothing is known."""
    seen: list[Seen] = []
    try:
        request = handler.send(None)
        while True:
            found = lookup(snapshot, request)
            if found is None:
                handler.close()
                return tool_error(_nothing_known(request), {"code": ErrorCode.DAEMON_UNREACHABLE})
            seen.append(found)
            request = handler.send(found.reply)
    except StopIteration as done:
        result = done.value
    at = min(s.at for s in seen)
    notebook_id = getattr(request, "notebook_id", None)
    changed_after = notebook_id is not None and snapshot.changed.get(notebook_id, 0.0) > at
    return mark_stale(result, at, changed_after)


def _nothing_known(request: object) -> str:
    unknown = NOTHING_KNOWN[type(request)].format(cell_id=getattr(request, "cell_id", ""))
    return (
        f"The notebook daemon is unreachable and {unknown}, so there is nothing to show. "
        "nbstage is reconnecting and will rejoin this notebook; try again shortly."
    )


def stale_line(at: float) -> str:
    clock = time.strftime("%H:%M:%S", time.localtime(at))
    return f"{PREFIX}daemon unreachable: showing the notebook as of {clock}"


def mark_stale(result: dict[str, Any], at: float, changed_after: bool) -> dict[str, Any]:
    """``result`` with the stale first line, and ``stale`` and ``as_of`` in its data."""
    line = stale_line(at)
    if changed_after:
        line += "\nChanges this session made after that time are not shown."
    as_of = datetime.fromtimestamp(at).astimezone().isoformat(timespec="seconds")
    structured = {**result.get("structuredContent", {}), "stale": True, "as_of": as_of}
    notice = Notice(NoticeKind.STALE, line.removeprefix(PREFIX))
    return with_notices({**result, "structuredContent": structured}, [notice])
