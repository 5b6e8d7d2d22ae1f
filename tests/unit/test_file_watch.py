"""A file-backed room and its file changing on disk: stamps, checked saves, and the Room
merging what it finds (SPEC §5 "File watch"), with in-process actors and real files."""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
import pytest

from nbstage.actors.daemon.notebook import persistence
from nbstage.actors.daemon.notebook.notebook_files import (
    load_notebook_stamped,
    read_on_disk,
    stamp_of,
)
from nbstage.actors.daemon.room import Room
from nbstage.protocol.common.offload import BlockingWorkRequested
from nbstage.protocol.common.settings import Settings
from nbstage.protocol.daemon.requests import (
    CellsFormat,
    CreateCell,
    DescribeRoom,
    GetCells,
    SaveNotebook,
    SetCell,
)
from nbstage.protocol.daemon_actors.edge import (
    ClientRequest,
    Origin,
    RequestAnswered,
    RequestFailed,
)
from nbstage.protocol.daemon_actors.room_followups import (
    AutosaveDue,
    FileCheckDue,
    FileLooked,
    FileOnDisk,
    FileWritten,
    SaveFinished,
)
from nbstage.protocol.daemon_actors.rooms import (
    CloseReason,
    CloseRoom,
    JoinRoom,
    RoomClosed,
)
from tests.unit.actor_harness import ActorBench, file_room_start

NOTEBOOK = "nb-watch"
QUIET = Settings(
    keep_alive_secs=3600.0,
    autosave_delay_secs=3600.0,
    autosave_max_delay_secs=3600.0,
    file_check_secs=3600.0,
)
"""No timer fires by itself; the tests fire each one when the race they drive needs it."""
PEER_CONN = 1


def write_nb(path: Path, cells: list[tuple[str, str]], *, ids: bool = True) -> Path:
    nb = nbformat.v4.new_notebook()
    for cell_id, source in cells:
        cell = nbformat.v4.new_code_cell(source)
        cell["id"] = cell_id
        nb.cells.append(cell)
    if not ids:
        nb.nbformat_minor = 4
        for cell in nb.cells:
            del cell["id"]
    nbformat.write(nb, path)
    return path


def lines(answer: RequestAnswered | RequestFailed) -> tuple[str, ...]:
    return tuple(notice.line() for notice in answer.notices)


def sources(path: Path) -> list[str]:
    return [c.source for c in nbformat.read(path, as_version=4).cells]


# --- stamps and checked writes (worker-thread functions) ---------------------------------


def test_the_stamp_written_is_the_stamp_of_the_file_after_the_rename(tmp_path) -> None:
    path = write_nb(tmp_path / "n.ipynb", [("a", "1")])
    _, loaded = load_notebook_stamped(path)
    assert loaded == stamp_of(path)
    written = persistence.write_notebook_file(path, nbformat.read(path, as_version=4))
    assert written == stamp_of(path)
    assert written != loaded


def test_a_checked_save_writes_over_the_file_it_expects(tmp_path) -> None:
    path = write_nb(tmp_path / "n.ipynb", [("a", "1")])
    _, stamp = load_notebook_stamped(path)
    snapshot = _snapshot([("a", "room")])
    result = persistence.save_checked(path, snapshot, stamp, explicit=False)
    assert isinstance(result, FileWritten)
    assert sources(path) == ["room"]


def test_a_checked_save_over_an_outside_change_writes_nothing_and_returns_the_file(
    tmp_path,
) -> None:
    path = write_nb(tmp_path / "n.ipynb", [("a", "1")])
    _, stamp = load_notebook_stamped(path)
    write_nb(path, [("a", "from an editor")])
    before = path.read_bytes()
    for explicit in (False, True):
        result = persistence.save_checked(path, _snapshot([("a", "room")]), stamp, explicit)
        assert isinstance(result, FileOnDisk)
        assert "".join(result.notebook["cells"][0]["source"]) == "from an editor"
        assert result.stamp == stamp_of(path)
    assert path.read_bytes() == before


@pytest.mark.parametrize("damage", ["half-written", "deleted"])
def test_only_an_explicit_save_writes_over_a_broken_or_missing_file(tmp_path, damage) -> None:
    path = write_nb(tmp_path / "n.ipynb", [("a", "1")])
    _, stamp = load_notebook_stamped(path)
    if damage == "deleted":
        path.unlink()
    else:
        path.write_bytes(path.read_bytes()[:40])
    before = path.read_bytes() if path.exists() else None
    result = persistence.save_checked(path, _snapshot([("a", "room")]), stamp, explicit=False)
    assert isinstance(result, FileOnDisk)
    assert result.notebook is None
    assert (path.read_bytes() if path.exists() else None) == before
    assert isinstance(
        persistence.save_checked(path, _snapshot([("a", "room")]), stamp, True), FileWritten
    )
    assert sources(path) == ["room"]


def test_read_on_disk_says_what_is_wrong_and_marks_cells_without_ids(tmp_path) -> None:
    path = tmp_path / "n.ipynb"
    path.write_text('{"cells": [', encoding="utf-8")
    broken = read_on_disk(path)
    assert broken.notebook is None
    assert broken.stamp == stamp_of(path)
    assert "is not a Jupyter notebook: it is not valid JSON" in broken.problem
    write_nb(path, [("x", "one"), ("y", "two")], ids=False)
    seen = read_on_disk(path)
    assert [c["id"] for c in seen.notebook["cells"]] == [None, None]
    path.unlink()
    assert read_on_disk(path) == FileOnDisk(None, None)


def test_a_look_reads_only_a_file_whose_stamp_is_not_known(tmp_path) -> None:
    path = write_nb(tmp_path / "n.ipynb", [("a", "1")])
    stamp = stamp_of(path)
    assert persistence.look_at_file(path, (stamp,)) is None
    os.utime(path, ns=(stamp.mtime_ns + 5_000_000, stamp.mtime_ns + 5_000_000))
    assert isinstance(persistence.look_at_file(path, (stamp,)), FileOnDisk)
    path.unlink()
    assert persistence.look_at_file(path, (None,)) is None


def _snapshot(cells: list[tuple[str, str]]) -> bytes:
    import orjson

    nb = nbformat.v4.new_notebook()
    for cell_id, source in cells:
        cell = nbformat.v4.new_code_cell(source)
        cell["id"] = cell_id
        nb.cells.append(cell)
    return orjson.dumps(nb)


# --- the Room ----------------------------------------------------------------------------


class Opened:
    """A Room on a real file, one peer joined from connection PEER_CONN."""

    def __init__(self, bench: ActorBench, path: Path) -> None:
        self.bench = bench
        self.path = path
        self.room = bench.create(Room)
        self.requests = 0
        self.check_generation = 1
        bench.send(self.room, file_room_start(NOTEBOOK, path, QUIET, bench.recorder))
        bench.send(self.room, JoinRoom(Origin(PEER_CONN, "join"), "tester", False, 1))
        self.answer_to("join")

    def answer_to(self, request_id: str) -> RequestAnswered | RequestFailed:
        def find():
            for msg in self.bench.seen():
                answered = isinstance(msg, RequestAnswered | RequestFailed)
                if answered and msg.origin.request_id == request_id:
                    return msg
            return None

        return self.bench.run_until(find)

    def ask(self, body: object, conn: int = PEER_CONN) -> RequestAnswered | RequestFailed:
        self.requests += 1
        request_id = f"r{self.requests}"
        self.bench.send(self.room, ClientRequest(Origin(conn, request_id), body))
        return self.answer_to(request_id)

    def cells(self) -> list[tuple[str, str]]:
        answer = self.ask(GetCells(NOTEBOOK, CellsFormat.JSON))
        return [(c["id"], c["source"]) for c in answer.result()["cells"]]

    def look(self) -> None:
        """The periodic check's timer fires now."""
        self.bench.fire(self.room, FileCheckDue(self.check_generation))
        self.check_generation += 1

    def autosave_due(self) -> None:
        """The autosave timer fires now (only the generation armed last is taken)."""
        for generation in range(1, 30):
            self.bench.fire(self.room, AutosaveDue(generation))

    def saves_started(self) -> int:
        return sum(
            1
            for m in self.bench.seen_of(BlockingWorkRequested)
            if isinstance(m.token, SaveFinished)
        )


@pytest.fixture
def opened(bench, tmp_path) -> Opened:
    path = write_nb(tmp_path / "n.ipynb", [("a", "a = 1"), ("b", "b = 2"), ("c", "c = 3")])
    return Opened(bench, path)


def test_an_outside_change_is_merged_by_cell_id_and_the_next_answer_says_so(opened) -> None:
    opened.ask(SetCell(NOTEBOOK, "b", "b = 'room'"))
    write_nb(
        opened.path,
        [("a", "a = 'editor'"), ("b", "b = 'editor'"), ("d", "d = 4")],
    )
    opened.look()
    answer = opened.ask(GetCells(NOTEBOOK, CellsFormat.JSON))
    assert lines(answer) == (
        f"[nbstage] {opened.path} changed on disk: 1 cell updated, 1 added, 1 conflict, 1 deleted",
    )
    cells = [(c["id"], c["source"]) for c in answer.result()["cells"]]
    copy_id = cells[2][0]
    assert cells == [
        ("a", "a = 'editor'"),
        ("b", "b = 'room'"),
        (copy_id, "# nbstage: conflict copy from disk\nb = 'editor'"),
        ("d", "d = 4"),
    ]
    assert lines(opened.ask(GetCells(NOTEBOOK))) == ()


def test_the_notice_goes_to_the_peers_connection_only(opened) -> None:
    write_nb(opened.path, [("a", "a = 'editor'"), ("b", "b = 2"), ("c", "c = 3")])
    opened.look()
    assert lines(opened.ask(DescribeRoom(NOTEBOOK), conn=7)) == ()
    assert len(lines(opened.ask(DescribeRoom(NOTEBOOK)))) == 1


def test_autosave_merges_an_outside_change_first_and_then_writes_both(opened) -> None:
    opened.ask(SetCell(NOTEBOOK, "c", "c = 'room'"))
    write_nb(opened.path, [("a", "a = 'editor'"), ("b", "b = 2"), ("c", "c = 3")])
    opened.autosave_due()
    opened.bench.run_until(lambda: sources(opened.path) == ["a = 'editor'", "b = 2", "c = 'room'"])
    answer = opened.ask(GetCells(NOTEBOOK))
    assert lines(answer) == (
        f"[nbstage] {opened.path} changed on disk: 1 cell updated, 0 added, 0 conflicts",
    )


def test_the_rooms_own_saves_are_not_outside_changes(opened) -> None:
    opened.ask(SetCell(NOTEBOOK, "a", "a = 'room'"))
    opened.autosave_due()
    opened.bench.run_until(lambda: sources(opened.path)[0] == "a = 'room'")
    opened.look()
    opened.ask(SaveNotebook(NOTEBOOK))
    opened.look()
    answer = opened.ask(GetCells(NOTEBOOK))
    assert lines(answer) == ()
    last_look = [
        m for m in opened.bench.seen_of(BlockingWorkRequested) if isinstance(m.token, FileLooked)
    ][-1]
    assert last_look.work() is None, "the stamp the room knows is the file's"


def test_an_explicit_save_merges_an_outside_change_before_it_writes(opened) -> None:
    opened.ask(SetCell(NOTEBOOK, "b", "b = 'room'"))
    write_nb(opened.path, [("a", "a = 'editor'"), ("b", "b = 2"), ("c", "c = 3")])
    saved = opened.ask(SaveNotebook(NOTEBOOK))
    assert isinstance(saved, RequestAnswered)
    assert lines(saved) == (
        f"[nbstage] {opened.path} changed on disk: 1 cell updated, 0 added, 0 conflicts",
    )
    assert sources(opened.path) == ["a = 'editor'", "b = 'room'", "c = 3"]


def test_cells_an_old_editor_wrote_without_ids_match_the_cells_they_were(opened) -> None:
    write_nb(
        opened.path,
        [("x", "a = 1"), ("y", "b = 'editor'"), ("z", "c = 3")],
        ids=False,
    )
    opened.look()
    answer = opened.ask(GetCells(NOTEBOOK, CellsFormat.JSON))
    assert [(c["id"], c["source"]) for c in answer.result()["cells"]] == [
        ("a", "a = 1"),
        ("b", "b = 'editor'"),
        ("c", "c = 3"),
    ]
    assert lines(answer)[0].endswith("1 cell updated, 0 added, 0 conflicts")


def test_a_half_written_file_pauses_autosave_until_it_parses_again(opened) -> None:
    opened.ask(SetCell(NOTEBOOK, "a", "a = 'room'"))
    good = opened.path.read_bytes()
    opened.path.write_bytes(good[: len(good) // 2])
    half = opened.path.read_bytes()
    opened.look()
    paused = opened.ask(GetCells(NOTEBOOK))
    (line,) = lines(paused)
    assert line.startswith("[nbstage] Autosave is paused and the file is left as it is: ")
    assert "is not a Jupyter notebook" in line
    assert "save_notebook" in line
    saves = opened.saves_started()
    opened.ask(CreateCell(NOTEBOOK, "more = 1"))
    opened.autosave_due()
    opened.look()
    still = opened.ask(GetCells(NOTEBOOK))
    assert lines(still) == (line,)
    assert opened.saves_started() == saves
    assert opened.path.read_bytes() == half
    write_nb(opened.path, [("a", "a = 1"), ("b", "b = 'editor'"), ("c", "c = 3")])
    opened.look()
    resumed = opened.ask(GetCells(NOTEBOOK))
    assert lines(resumed) == (
        f"[nbstage] {opened.path} changed on disk: 1 cell updated, 0 added, 0 conflicts",
    )
    opened.autosave_due()
    opened.bench.run_until(
        lambda: sources(opened.path) == ["a = 'room'", "b = 'editor'", "c = 3", "more = 1"]
    )


def test_an_explicit_save_writes_over_a_file_that_does_not_parse(opened) -> None:
    opened.path.write_text("not json", encoding="utf-8")
    opened.look()
    saved = opened.ask(SaveNotebook(NOTEBOOK))
    assert isinstance(saved, RequestAnswered)
    assert lines(saved) == ()
    assert sources(opened.path) == ["a = 1", "b = 2", "c = 3"]
    assert lines(opened.ask(GetCells(NOTEBOOK))) == ()


def test_a_deleted_file_keeps_the_room_and_the_next_save_writes_it_again(opened) -> None:
    opened.path.unlink()
    opened.look()
    answer = opened.ask(DescribeRoom(NOTEBOOK))
    (line,) = lines(answer)
    assert line.startswith(f"[nbstage] {opened.path} was deleted on disk.")
    assert answer.result()["unsaved"] is True
    assert [source for _, source in opened.cells()] == ["a = 1", "b = 2", "c = 3"]
    opened.autosave_due()
    opened.look()
    opened.ask(GetCells(NOTEBOOK))
    assert not opened.path.exists(), "no edit since the deletion: nothing brings the file back"
    opened.ask(SetCell(NOTEBOOK, "a", "a = 'after'"))
    opened.autosave_due()
    opened.bench.run_until(lambda: opened.path.exists())
    assert sources(opened.path) == ["a = 'after'", "b = 2", "c = 3"]
    assert opened.ask(DescribeRoom(NOTEBOOK)).result()["unsaved"] is False


def test_an_autosave_due_when_the_file_was_deleted_does_not_bring_it_back(opened) -> None:
    opened.ask(SetCell(NOTEBOOK, "a", "a = 'before'"))
    opened.path.unlink()
    opened.look()
    opened.bench.fire(opened.room, AutosaveDue(1))
    opened.ask(GetCells(NOTEBOOK))
    assert not opened.path.exists()
    opened.ask(SetCell(NOTEBOOK, "b", "b = 'after'"))
    opened.autosave_due()
    opened.bench.run_until(lambda: opened.path.exists())
    assert sources(opened.path) == ["a = 'before'", "b = 'after'", "c = 3"]


def test_closing_over_a_file_that_does_not_parse_leaves_it_and_says_the_edits_are_unsaved(
    opened,
) -> None:
    opened.ask(SetCell(NOTEBOOK, "a", "a = 'room'"))
    opened.path.write_text("{", encoding="utf-8")
    opened.bench.send(opened.room, CloseRoom(CloseReason.DAEMON_STOPPING))
    (closed,) = opened.bench.run_until(lambda: opened.bench.seen_of(RoomClosed))
    assert closed.saved is False
    assert "is not a Jupyter notebook" in closed.problem
    assert opened.path.read_text() == "{"
