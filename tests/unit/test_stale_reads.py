"""Reads while the daemon link is down (SPEC §6): the snapshot's rules as tables, then the
SessionManager carrying them out against a FakeDaemon whose link closes."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest

from nbstage.actors.session import stale_reads
from nbstage.actors.session.stale_reads import Seen, Snapshot, lookup, record, stale_answer
from nbstage.actors.session.tool_handlers import (
    ToolContext,
    get_all_cells,
    get_cell,
    list_active_notebooks,
)
from nbstage.protocol.daemon.replies import (
    CellShown,
    CellsShown,
    CellsSummarized,
    CellUpdated,
    CellView,
    PeerView,
    RoomsListed,
    RoomView,
)
from nbstage.protocol.daemon.requests import CellsFormat, GetCell, GetCells, ListRooms, SetCell
from nbstage.protocol.mcp import tools
from tests.unit.test_session_races import I1, SessionChild, notebook, texts

T0 = 1_700_000_000.0
CTX = ToolContext("N", "key", "/", active_id="N")
CELL = CellView("c1", "code", "1+1", 1, [{"output_type": "stream", "name": "stdout", "text": "2"}])
ROWS = [
    {
        "cell_id": f"c{i}",
        "index": i,
        "cell_type": "code",
        "source_preview": f"x = {i}",
        "execution_count": None,
        "output_count": 0,
    }
    for i in range(4)
]
RAW = [
    {
        "id": "c2",
        "cell_type": "code",
        "source": ["a = ", "2"],
        "metadata": {},
        "execution_count": 3,
        "outputs": [],
    },
    {"id": "m1", "cell_type": "markdown", "source": "# hi", "metadata": {}},
]
ROOMS = RoomsListed(
    [RoomView("N", "/n.ipynb", False, False, 7, [PeerView("p", "ada")], "idle", 8, "python3")]
)
SUMMARY = GetCells("N")
JSON_OUT = GetCells("N", CellsFormat.JSON, include_outputs=True)


def snapshot(*answers: tuple[object, object, float]) -> Snapshot:
    snap = Snapshot()
    for request, reply, at in answers:
        snap = record(snap, request, reply, at)
    return snap


# --- what the snapshot answers ---------------------------------------------------------------

LOOKUPS = [
    pytest.param((), GetCell("N", "c1"), None, id="nothing read: no answer"),
    pytest.param(
        ((GetCell("N", "c1"), CellShown(CELL), T0),),
        GetCell("N", "c1"),
        (T0, CellShown(CELL)),
        id="a cell read before",
    ),
    pytest.param(
        ((GetCell("N", "c1"), CellShown(CELL), T0),),
        GetCell("M", "c1"),
        None,
        id="the same cell id in another notebook",
    ),
    pytest.param(
        ((JSON_OUT, CellsShown(RAW, 2), T0),),
        GetCell("N", "c2"),
        (T0, CellShown(CellView("c2", "code", "a = 2", 3, []))),
        id="a cell from a json listing with outputs",
    ),
    pytest.param(
        ((GetCells("N", CellsFormat.JSON), CellsShown(RAW, 2), T0),),
        GetCell("N", "c2"),
        None,
        id="a json listing without outputs is no get_cell answer",
    ),
    pytest.param(
        ((GetCell("N", "c2"), CellShown(CELL), T0), (JSON_OUT, CellsShown(RAW, 2), T0 + 5)),
        GetCell("N", "c2"),
        (T0 + 5, CellShown(CellView("c2", "code", "a = 2", 3, []))),
        id="the newest answer wins",
    ),
    pytest.param(
        ((SUMMARY, CellsSummarized(ROWS, 4), T0),),
        SUMMARY,
        (T0, CellsSummarized(ROWS, 4)),
        id="the same listing",
    ),
    pytest.param(
        ((SUMMARY, CellsSummarized(ROWS, 4), T0),),
        GetCells("N", start=1, count=2),
        (T0, CellsSummarized(ROWS[1:3], 4)),
        id="a window cut from the whole listing",
    ),
    pytest.param(
        ((GetCells("N", start=1, count=2), CellsSummarized(ROWS[1:3], 4), T0),),
        SUMMARY,
        None,
        id="a window does not answer the whole",
    ),
    pytest.param(
        ((SUMMARY, CellsSummarized(ROWS, 4), T0),),
        GetCells("N", CellsFormat.JSON),
        None,
        id="a summary does not answer json",
    ),
    pytest.param(((ListRooms(), ROOMS, T0),), ListRooms(), (T0, ROOMS), id="the notebook list"),
    pytest.param(
        ((GetCell("N", "c1"), CellShown(CELL), T0),),
        SetCell("N", "c1", "2+2"),
        None,
        id="a mutation is never answered",
    ),
]


@pytest.mark.parametrize(("answers", "request_", "expected"), LOOKUPS)
def test_lookup(answers: tuple, request_: object, expected: tuple | None) -> None:
    found = lookup(snapshot(*answers), request_)
    assert found == (None if expected is None else Seen(*expected))


def test_listings_are_bounded_and_the_oldest_goes_first() -> None:
    answers = [
        (GetCells("N", start=i, count=1), CellsSummarized(ROWS[i : i + 1], 4), T0 + i)
        for i in range(stale_reads.MAX_LISTINGS + 2)
    ]
    snap = snapshot(*answers)
    assert len(snap.listings) == stale_reads.MAX_LISTINGS
    assert GetCells("N", start=0, count=1) not in snap.listings
    assert GetCells("N", start=stale_reads.MAX_LISTINGS + 1, count=1) in snap.listings


def test_keep_only_forgets_notebooks_no_longer_held_but_keeps_the_list() -> None:
    snap = snapshot(
        (GetCell("N", "c1"), CellShown(CELL), T0),
        (GetCell("M", "c1"), CellShown(CELL), T0),
        (GetCells("M"), CellsSummarized(ROWS, 4), T0),
        (ListRooms(), ROOMS, T0),
    )
    kept = stale_reads.keep_only(snap, {"N": "/n.ipynb"})
    assert set(kept.cells) == {("N", "c1")}
    assert kept.listings == {}
    assert kept.rooms == Seen(T0, ROOMS)
    assert kept.own == {"N": "/n.ipynb"}


OWN = {"N": "/n.ipynb", "P": None}
UNKNOWN_P = RoomView("P", None, False, False, None, None, "unknown", None)
LISTED = [
    pytest.param(Snapshot(), None, id="nothing known, nothing held"),
    pytest.param(
        Snapshot(own=OWN),
        Seen(
            T0 + 9,
            RoomsListed(
                [RoomView("N", "/n.ipynb", False, False, None, None, "unknown", None), UNKNOWN_P]
            ),
        ),
        id="held, never listed: the session's own, as of now",
    ),
    pytest.param(
        Snapshot(rooms=Seen(T0, ROOMS), own=OWN),
        Seen(T0, RoomsListed([*ROOMS.rooms, UNKNOWN_P])),
        id="listed before: that listing, and what it lacks of the session's own",
    ),
    pytest.param(Snapshot(rooms=Seen(T0, ROOMS)), Seen(T0, ROOMS), id="listed, nothing held"),
]


@pytest.mark.parametrize(("snap", "seen"), LISTED)
def test_a_listing_always_names_the_sessions_own_notebooks(snap: Snapshot, seen: Any) -> None:
    assert lookup(snap, ListRooms(), now=T0 + 9) == seen


# --- the stale answers -------------------------------------------------------------------------

LINE = stale_reads.stale_line(T0)
AS_OF = stale_reads.mark_stale({"content": []}, T0, False)["structuredContent"]["as_of"]
CHANGED = "Changes this session made after that time are not shown."

ANSWERS = [
    pytest.param(
        ((GetCell("N", "c1"), CellShown(CELL), T0),),
        get_cell,
        tools.GetCellArgs("c1"),
        LINE,
        {"cell": {"cell_id": "c1", "source": "1+1", "execution_count": 1}},
        id="get_cell",
    ),
    pytest.param(
        (
            (GetCell("N", "c1"), CellShown(CELL), T0),
            (SetCell("N", "c1"), CellUpdated("c1"), T0 + 1),
        ),
        get_cell,
        tools.GetCellArgs("c1"),
        f"{LINE}\n{CHANGED}",
        {"cell": {"cell_id": "c1", "source": "1+1"}},
        id="get_cell after an edit of the session's",
    ),
    pytest.param(
        (
            (SetCell("N", "c1"), CellUpdated("c1"), T0),
            (GetCell("N", "c1"), CellShown(CELL), T0 + 1),
        ),
        get_cell,
        tools.GetCellArgs("c1"),
        stale_reads.stale_line(T0 + 1),
        {"cell": {"cell_id": "c1"}},
        id="get_cell read after the edit",
    ),
    pytest.param(
        ((SUMMARY, CellsSummarized(ROWS, 4), T0),),
        get_all_cells,
        tools.GetAllCellsArgs(start=2),
        LINE,
        {"cells": ROWS[2:], "total": 4},
        id="get_all_cells summary window",
    ),
    pytest.param(
        ((JSON_OUT, CellsShown(RAW, 2), T0),),
        get_all_cells,
        tools.GetAllCellsArgs(format=tools.AllCellsFormat.RICH, include_outputs=True),
        LINE,
        {"total": 2},
        id="get_all_cells rich from the json listing",
    ),
    pytest.param(
        ((ListRooms(), ROOMS, T0),),
        list_active_notebooks,
        tools.NoArgs(),
        LINE,
        {"notebooks": [{"notebook_id": "N", "peers": ["ada"], "active": True}]},
        id="list_active_notebooks",
    ),
]


def _contains(actual: Any, expected: Any) -> bool:
    if isinstance(expected, dict):
        return all(k in actual and _contains(actual[k], v) for k, v in expected.items())
    if isinstance(expected, list):
        return len(actual) == len(expected) and all(map(_contains, actual, expected))
    return actual == expected


@pytest.mark.parametrize(("answers", "tool", "args", "first", "structured"), ANSWERS)
def test_stale_answer(
    answers: tuple, tool: Any, args: Any, first: str, structured: dict[str, Any]
) -> None:
    result = stale_answer(snapshot(*answers), tool(CTX, args))
    assert result["isError"] is False
    assert result["content"][0] == {"type": "text", "text": first}
    assert len(result["content"]) > 1, "the live answer's content follows the stale line"
    assert result["structuredContent"]["stale"] is True
    as_of = stale_reads.mark_stale({"content": []}, _seen_at(answers), False)
    assert result["structuredContent"]["as_of"] == as_of["structuredContent"]["as_of"]
    assert _contains(result["structuredContent"], structured)


def _seen_at(answers: tuple) -> float:
    return max(at for request, _reply, at in answers if not isinstance(request, SetCell))


NOTHING = [
    pytest.param(get_cell, tools.GetCellArgs("c9"), "has not read cell c9 yet", id="get_cell"),
    pytest.param(
        get_all_cells,
        tools.GetAllCellsArgs(format=tools.AllCellsFormat.JSON),
        "has not read this notebook's cells in that format yet",
        id="get_all_cells",
    ),
    pytest.param(
        list_active_notebooks,
        tools.NoArgs(),
        "has not listed the notebooks yet",
        id="list_active_notebooks",
    ),
]


@pytest.mark.parametrize(("tool", "args", "words"), NOTHING)
def test_nothing_known_is_an_error_that_says_so(tool: Any, args: Any, words: str) -> None:
    known = snapshot((SUMMARY, CellsSummarized(ROWS, 4), T0))
    result = stale_answer(known, tool(CTX, args))
    assert result["isError"] is True
    (text,) = texts(result)
    assert text.startswith("The notebook daemon is unreachable and this session ")
    assert words in text
    assert "nothing to show" in text
    assert result["structuredContent"] == {"error": text, "code": "daemon_unreachable"}


def test_the_stale_line_is_local_wall_clock_time() -> None:
    clock = time.strftime("%H:%M:%S", time.localtime(T0))
    assert f"[nbstage] daemon unreachable: showing the notebook as of {clock}" == LINE
    assert AS_OF.startswith(time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(T0)))


# --- the SessionManager, its link closed ------------------------------------------------------

STALE = re.compile(r"^\[nbstage\] daemon unreachable: showing the notebook as of \d\d:\d\d:\d\d$")

CELL_WIRE = {
    "cell": {
        "cell_id": "c1",
        "cell_type": "code",
        "source": "1+1",
        "execution_count": 1,
        "outputs": [],
    }
}


def connected(bench: Any, tmp_path: Path) -> SessionChild:
    child = SessionChild(bench)
    child.start(tmp_path)
    child.daemon_up(I1)
    child.connect("c0", notebook(tmp_path, "N"), "n1")
    return child


def test_reads_are_served_from_the_snapshot_once_the_link_is_down(bench: Any, tmp_path: Path):
    child = connected(bench, tmp_path)
    child.call("r1", "get_cell", cell_id="c1")
    child.daemon.answer(child.daemon.only("get_cell"), CELL_WIRE)
    live = child.result("r1")
    child.daemon.close(child.manager_link)

    child.call("r2", "get_cell", cell_id="c1")
    stale = child.result("r2")
    assert STALE.match(texts(stale)[0])
    assert stale["content"][1:] == live["content"]
    assert stale["structuredContent"]["cell"] == live["structuredContent"]["cell"]
    assert stale["structuredContent"]["stale"] is True

    child.call("r3", "list_active_notebooks")
    own = child.result("r3")
    assert STALE.match(texts(own)[0])
    assert own["structuredContent"]["notebooks"] == [
        {
            "notebook_id": "N",
            "path": notebook(tmp_path, "N").path,
            "peers": None,
            "kernel_status": "unknown",
            "kernelspec": None,
            "env_source": None,
            "fingerprint": None,
            "active": True,
            "parked": False,
        }
    ]
    assert "peers: unknown" in texts(own)[1]


def test_a_read_waiting_when_the_link_drops_is_answered_from_the_snapshot(
    bench: Any, tmp_path: Path
):
    child = connected(bench, tmp_path)
    child.call("r1", "get_all_cells")
    child.daemon.answer(child.daemon.only("get_cells"), {"cells": ROWS, "total": 4})
    child.call("r2", "get_all_cells", start=3)
    assert len(child.daemon.unanswered("get_cells")) == 1
    child.daemon.close(child.manager_link)
    stale = child.result("r2")
    assert STALE.match(texts(stale)[0])
    assert stale["structuredContent"]["cells"] == ROWS[3:]


DEGRADED = [
    pytest.param("set_cell", {"cell_id": "c1", "source": "2"}, "the notebook cannot be changed"),
    pytest.param("create_cell", {"source": "2"}, "the notebook cannot be changed"),
    pytest.param("save_notebook", {}, "the notebook cannot be changed"),
    pytest.param("execute_cell", {"cell_id": "c1"}, "cells cannot run"),
    pytest.param("run_all_cells", {}, "cells cannot run"),
    pytest.param("get_results", {"execution_id": "e1"}, "execution results cannot be read"),
    pytest.param("restart_kernel", {}, "the kernel cannot be controlled"),
]


@pytest.mark.parametrize(("name", "arguments", "unavailable"), DEGRADED)
def test_mutations_and_executions_keep_their_distinct_errors(
    bench: Any, tmp_path: Path, name: str, arguments: dict[str, Any], unavailable: str
):
    child = connected(bench, tmp_path)
    child.call("r1", "get_cell", cell_id="c1")
    child.daemon.answer(child.daemon.only("get_cell"), CELL_WIRE)
    child.daemon.close(child.manager_link)
    child.call("m1", name, **arguments)
    result = child.result("m1")
    assert result["isError"] is True
    assert texts(result) == [
        f"The notebook daemon is unreachable, so {unavailable} right now. "
        "nbstage is reconnecting and will rejoin this notebook; try again shortly."
    ]
    assert "stale" not in (result.get("structuredContent") or {})
