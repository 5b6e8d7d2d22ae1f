"""The three-way merge by cell id (actors/daemon/notebook/notebook_merge.py), one row per rule."""

from __future__ import annotations

import pytest

from nbstage.actors.daemon.notebook.notebook_merge import (
    CONFLICT_FIRST_LINES,
    MergeSummary,
    is_conflict_copy,
    merge_cells,
    merge_metadata,
    notice_line,
    recover_ids,
)
from nbstage.actors.daemon.room.notices import NoticeBoard


def code(cell_id: str, source: str, outputs: list | None = None) -> dict:
    return {
        "id": cell_id,
        "cell_type": "code",
        "metadata": {},
        "source": source,
        "execution_count": None,
        "outputs": outputs or [],
    }


def md(cell_id: str, source: str) -> dict:
    return {"id": cell_id, "cell_type": "markdown", "metadata": {}, "source": source}


def raw(cell_id: str, source: str) -> dict:
    return {"id": cell_id, "cell_type": "raw", "metadata": {}, "source": source}


A, B, C = code("a", "a = 1"), code("b", "b = 2"), code("c", "c = 3")
BASE = [A, B, C]
COPY = "<conflict copy>"
"""Stands for the conflict copy's fresh id in the expected rows."""


def shape(cells: list[dict]) -> list[tuple[str, str]]:
    return [(COPY if is_conflict_copy(c) else c["id"], c["source"]) for c in cells]


@pytest.mark.parametrize(
    ("ours", "theirs", "expected", "summary"),
    [
        pytest.param(
            BASE,
            BASE,
            [("a", "a = 1"), ("b", "b = 2"), ("c", "c = 3")],
            MergeSummary(),
            id="nothing changed on either side",
        ),
        pytest.param(
            BASE,
            [A, code("b", "b = 'disk'"), C],
            [("a", "a = 1"), ("b", "b = 'disk'"), ("c", "c = 3")],
            MergeSummary(updated=1),
            id="a cell only the file changed takes the file's version",
        ),
        pytest.param(
            [A, code("b", "b = 'room'"), C],
            BASE,
            [("a", "a = 1"), ("b", "b = 'room'"), ("c", "c = 3")],
            MergeSummary(),
            id="a cell only the room changed keeps the room's version",
        ),
        pytest.param(
            [A, code("b", "b = 'room'"), C],
            [A, code("b", "b = 'disk'"), C],
            [
                ("a", "a = 1"),
                ("b", "b = 'room'"),
                (COPY, "# nbstage: conflict copy from disk\nb = 'disk'"),
                ("c", "c = 3"),
            ],
            MergeSummary(conflicts=1),
            id="a cell both changed keeps the room's, with the file's as a conflict copy after it",
        ),
        pytest.param(
            [A, code("b", "b = 'same'"), C],
            [A, code("b", "b = 'same'"), C],
            [("a", "a = 1"), ("b", "b = 'same'"), ("c", "c = 3")],
            MergeSummary(),
            id="a cell both changed the same way is no conflict",
        ),
        pytest.param(
            [A, code("b", "b = 2", [{"output_type": "stream", "name": "stdout", "text": "2"}]), C],
            [A, code("b", "b = 'disk'"), C],
            [
                ("a", "a = 1"),
                ("b", "b = 2"),
                (COPY, "# nbstage: conflict copy from disk\nb = 'disk'"),
                ("c", "c = 3"),
            ],
            MergeSummary(conflicts=1),
            id="outputs the room got are a change of the room's too",
        ),
        pytest.param(
            BASE,
            [A, B, C, code("d", "d = 4")],
            [("a", "a = 1"), ("b", "b = 2"), ("c", "c = 3"), ("d", "d = 4")],
            MergeSummary(added=1),
            id="a cell added on disk is kept",
        ),
        pytest.param(
            [A, B, C, code("r", "r = 0")],
            BASE,
            [("a", "a = 1"), ("b", "b = 2"), ("c", "c = 3"), ("r", "r = 0")],
            MergeSummary(),
            id="a cell added in the room is kept",
        ),
        pytest.param(
            [A, code("r", "r = 0"), B, C],
            [A, B, code("d", "d = 4"), C],
            [("a", "a = 1"), ("r", "r = 0"), ("b", "b = 2"), ("d", "d = 4"), ("c", "c = 3")],
            MergeSummary(added=1),
            id="cells added on both sides each go after the cell they follow on their side",
        ),
        pytest.param(
            BASE,
            [code("d", "d = 4"), code("e", "e = 5"), A, B, C],
            [("d", "d = 4"), ("e", "e = 5"), ("a", "a = 1"), ("b", "b = 2"), ("c", "c = 3")],
            MergeSummary(added=2),
            id="cells added at the top of the file go first, in the file's order",
        ),
        pytest.param(
            BASE,
            [A, C],
            [("a", "a = 1"), ("c", "c = 3")],
            MergeSummary(deleted=1),
            id="a cell deleted on disk and untouched in the room is deleted",
        ),
        pytest.param(
            [A, code("b", "b = 'room'"), C],
            [A, C],
            [("a", "a = 1"), ("b", "b = 'room'"), ("c", "c = 3")],
            MergeSummary(),
            id="a cell deleted on disk but changed in the room keeps the room's version",
        ),
        pytest.param(
            [A, C],
            BASE,
            [("a", "a = 1"), ("c", "c = 3")],
            MergeSummary(),
            id="a cell deleted in the room and untouched on disk stays deleted",
        ),
        pytest.param(
            [A, C],
            [A, code("b", "b = 'disk'"), C],
            [("a", "a = 1"), ("b", "b = 'disk'"), ("c", "c = 3")],
            MergeSummary(added=1),
            id="a cell deleted in the room but changed on disk comes back with the file's version",
        ),
        pytest.param(
            BASE,
            [C, A, B],
            [("c", "c = 3"), ("a", "a = 1"), ("b", "b = 2")],
            MergeSummary(),
            id="cells only the file reordered take the file's order",
        ),
        pytest.param(
            [B, A, C],
            [C, A, code("b", "b = 'disk'")],
            [("b", "b = 'disk'"), ("a", "a = 1"), ("c", "c = 3")],
            MergeSummary(updated=1),
            id="when both reordered, the room's order wins",
        ),
    ],
)
def test_merge_rules(ours, theirs, expected, summary) -> None:
    merged = merge_cells(BASE, ours, theirs)
    assert shape(merged.cells) == expected
    assert merged.summary == summary


@pytest.mark.parametrize(
    ("cell", "first_line"),
    [
        pytest.param(code("x", "x = 'disk'"), "# nbstage: conflict copy from disk", id="code"),
        pytest.param(md("x", "# Disk"), "<!-- nbstage: conflict copy from disk -->", id="markdown"),
        pytest.param(raw("x", "disk"), "nbstage: conflict copy from disk", id="raw"),
    ],
)
def test_a_conflict_copy_is_flagged_in_metadata_and_says_so_on_its_first_line(
    cell, first_line
) -> None:
    room = {**cell, "source": "room"}
    merged = merge_cells([{**cell, "source": "base"}], [room], [cell])
    kept, copy = merged.cells
    assert kept == room
    assert copy["metadata"]["nbstage"] == {"conflict_copy": True}
    assert copy["source"].split("\n") == [first_line, cell["source"]]
    assert CONFLICT_FIRST_LINES[cell["cell_type"]] == first_line
    assert copy["id"] not in {cell["id"]}
    assert {k: v for k, v in copy.items() if k not in ("id", "metadata", "source")} == {
        k: v for k, v in cell.items() if k not in ("id", "metadata", "source")
    }


def test_a_conflict_copy_of_an_empty_cell_is_its_first_line_alone() -> None:
    merged = merge_cells([code("x", "base")], [code("x", "room")], [code("x", "")])
    assert merged.cells[1]["source"] == "# nbstage: conflict copy from disk"


def test_conflict_copies_get_ids_no_cell_has() -> None:
    ours = [code(i, f"{i} = 'room'") for i in "abc"]
    theirs = [code(i, f"{i} = 'disk'") for i in "abc"]
    merged = merge_cells(BASE, ours, theirs)
    ids = [c["id"] for c in merged.cells]
    assert len(ids) == len(set(ids)) == 6
    assert merged.summary == MergeSummary(conflicts=3)


@pytest.mark.parametrize(
    ("base", "ours", "theirs", "expected"),
    [
        pytest.param({"k": 1}, {"k": 1}, {"k": 2}, {"k": 2}, id="only the file changed it"),
        pytest.param({"k": 1}, {"k": 3}, {"k": 1}, {"k": 3}, id="only the room changed it"),
        pytest.param({"k": 1}, {"k": 3}, {"k": 2}, {"k": 3}, id="both changed it: the room's"),
    ],
)
def test_merge_metadata(base, ours, theirs, expected) -> None:
    assert merge_metadata(base, ours, theirs) == expected


@pytest.mark.parametrize(
    ("theirs", "expected_ids"),
    [
        pytest.param(["a = 1", "b = 2", "c = 3"], ["a", "b", "c"], id="unchanged cells"),
        pytest.param(
            ["new", "a = 1", "b = 2", "c = 3"], [None, "a", "b", "c"], id="a cell added first"
        ),
        pytest.param(["a = 1", "b = 'edited'", "c = 3"], ["a", "b", "c"], id="a cell edited"),
        pytest.param(["a = 1", "c = 3"], ["a", "c"], id="a cell deleted"),
    ],
)
def test_cells_without_ids_get_the_ids_of_the_cells_they_stand_for(theirs, expected_ids) -> None:
    disk = [code(f"tmp{i}", source) for i, source in enumerate(theirs)]
    recovered = recover_ids(BASE, disk, set(range(len(disk))))
    ids = [c["id"] for c in recovered]
    for got, want in zip(ids, expected_ids, strict=True):
        if want is None:
            assert got not in {"a", "b", "c"}
        else:
            assert got == want
    assert [c["source"] for c in recovered] == theirs


def test_cells_with_ids_keep_them_and_are_not_matched_again() -> None:
    disk = [code("b", "b = 2"), code("tmp", "a = 1")]
    recovered = recover_ids(BASE, disk, {1})
    assert [c["id"] for c in recovered] == ["b", "a"]


@pytest.mark.parametrize(
    ("summary", "line"),
    [
        pytest.param(
            MergeSummary(updated=2, added=1, conflicts=1),
            "[nbstage] /w/n.ipynb changed on disk: 2 cells updated, 1 added, 1 conflict",
            id="the issue's line",
        ),
        pytest.param(
            MergeSummary(deleted=3),
            "[nbstage] /w/n.ipynb changed on disk: 0 cells updated, 0 added, 0 conflicts, "
            "3 deleted",
            id="deletions are named when there are any",
        ),
    ],
)
def test_notice_line(summary, line) -> None:
    notice = notice_line("/w/n.ipynb", summary)
    assert notice.line() == line
    assert notice.next_call == "get_all_cells()"


# --- the notice board -------------------------------------------------------------------


def test_a_posted_notice_reaches_each_following_connection_once() -> None:
    board = NoticeBoard()
    board.follow(1)
    board.follow(2)
    board.post("merged")
    assert board.take(1) == ("merged",)
    assert board.take(1) == ()
    assert board.take(2) == ("merged",)


def test_a_connection_that_follows_later_or_never_gets_no_earlier_notice() -> None:
    board = NoticeBoard()
    board.post("before anyone")
    board.follow(1)
    assert board.take(1) == ()
    assert board.take(9) == ()


def test_a_standing_line_goes_on_every_answer_until_withdrawn() -> None:
    board = NoticeBoard()
    board.follow(1)
    board.stand("file", "paused")
    board.post("merged")
    assert board.take(1) == ("merged", "paused")
    assert board.take(1) == ("paused",)
    assert board.take(7) == ("paused",)
    board.stand("file", None)
    assert board.take(1) == ()


def test_the_board_keeps_only_what_a_following_connection_has_not_read() -> None:
    board = NoticeBoard()
    board.follow(1)
    for n in range(40):
        board.post(f"n{n}")
    assert len(board.posted) <= 16
    board.take(1)
    assert board.posted == []
    board.unfollow(1)
    board.post("nobody follows")
    assert board.posted == []
