"""The journal with the Daemon and its Rooms in one process (simpleSystemBase).

The bench plays the socket edge and runs offloaded work at once, except the journal
appends this bench holds while the test says so: an edit's answer waits for its append.
A "crash" is a second Daemon started over the same state dir while the first one's rooms
have flushed nothing since the edit (autosave is an hour away): its rooms find the edit.
The notebooks name a kernelspec nobody has, so no kernel starts.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import orjson
import pytest
from thespian.actors import ActorAddress

from nbstage.actors.daemon.actor import Daemon
from nbstage.actors.daemon.registry import Registry
from nbstage.protocol.common.offload import BlockingWorkRequested
from nbstage.protocol.common.settings import Settings
from nbstage.protocol.daemon.requests import (
    AttachNotebook,
    CellsFormat,
    CreateCell,
    CreateNotebook,
    DescribeRoom,
    GetCells,
    OpenNotebook,
    SaveNotebook,
    SetCell,
)
from nbstage.protocol.daemon_actors.daemon_followups import BindingStored
from nbstage.protocol.daemon_actors.edge import ClientRequest, Origin, RequestAnswered, RoomResident
from nbstage.protocol.daemon_actors.room_followups import JournalAppended, SaveFinished
from nbstage.protocol.daemon_actors.rooms import DaemonStarted, StartDaemon
from tests.unit.actor_harness import ActorBench, HoldAppends, ReleaseAppends, held_work

NO_AUTOSAVE = Settings(
    autosave_delay_secs=3600.0,
    autosave_max_delay_secs=3600.0,
    reaper_interval_secs=3600.0,
    keep_alive_secs=3600.0,
    file_check_secs=0.0,
)
NOBODY_S_KERNEL = {"kernelspec": {"name": "nosuch", "display_name": "x", "language": "nosuch"}}


@pytest.fixture
def bench(holding_bench: ActorBench) -> ActorBench:
    return holding_bench


def state_dir(tmp_path: Path) -> Path:
    state = tmp_path / "state"
    state.mkdir()
    return state


def start_daemon(bench: ActorBench, state: Path) -> ActorAddress:
    before = len(bench.seen_of(DaemonStarted))
    address = bench.create(Daemon)
    bench.send(address, StartDaemon(str(state), str(state / "kernels"), NO_AUTOSAVE))
    bench.run_until(lambda: len(bench.seen_of(DaemonStarted)) > before)
    return address


def answer(bench: ActorBench, request_id: str) -> Any:
    def find() -> Any:
        for msg in bench.seen():
            if hasattr(msg, "origin") and getattr(msg.origin, "request_id", None) == request_id:
                return msg
        return None

    found = bench.run_until(find)
    assert isinstance(found, RequestAnswered), f"{request_id} was refused: {found}"
    return found.result()


def ask(bench: ActorBench, target: ActorAddress, request_id: str, body: Any) -> dict:
    bench.send(target, ClientRequest(Origin(1, request_id), body))
    return answer(bench, request_id)


def answered(bench: ActorBench, request_id: str) -> bool:
    return any(
        isinstance(m, RequestAnswered) and m.origin.request_id == request_id for m in bench.seen()
    )


def notices_of(bench: ActorBench, request_id: str) -> tuple[str, ...]:
    for m in bench.seen_of(RequestAnswered):
        if m.origin.request_id == request_id:
            return tuple(notice.line() for notice in m.notices)
    raise AssertionError(f"{request_id} was not answered")


def room_of(bench: ActorBench, notebook_id: str) -> ActorAddress:
    return [m.address for m in bench.seen_of(RoomResident) if m.notebook_id == notebook_id][-1]


def held_appends(bench: ActorBench) -> list[BlockingWorkRequested]:
    return [
        m
        for m in bench.seen_of(BlockingWorkRequested)
        if isinstance(m.token, JournalAppended) and m.lane.startswith("journal:")
    ]


def sources(bench: ActorBench, room: ActorAddress, notebook_id: str, request_id: str) -> list:
    cells = ask(bench, room, request_id, GetCells(notebook_id, format=CellsFormat.JSON))
    return [cell["source"] for cell in cells["cells"]]


def notebook_file(path: Path) -> Path:
    nb = {"cells": [], "metadata": NOBODY_S_KERNEL, "nbformat": 4, "nbformat_minor": 5}
    path.write_bytes(orjson.dumps(nb))
    return path


def test_an_edit_is_answered_only_once_its_journal_record_is_written(
    bench: ActorBench, tmp_path: Path
) -> None:
    state = state_dir(tmp_path)
    daemon = start_daemon(bench, state)
    path = notebook_file(tmp_path / "n.ipynb")
    joined = ask(bench, daemon, "open", OpenNotebook(str(path)))
    notebook_id = joined["notebook_id"]
    room = room_of(bench, notebook_id)

    bench.system.tell(bench.recorder, HoldAppends())
    bench.send(room, ClientRequest(Origin(1, "edit"), CreateCell(notebook_id, "x = 1", key="k")))
    bench.send(room, ClientRequest(Origin(1, "again"), CreateCell(notebook_id, "x = 1", key="k")))
    bench.run_until(lambda: held_appends(bench))

    assert sources(bench, room, notebook_id, "read") == ["x = 1"]
    assert not answered(bench, "edit")
    assert not answered(bench, "again")
    assert not any(isinstance(m.token, SaveFinished) for m in bench.seen_of(BlockingWorkRequested))

    bench.system.tell(bench.recorder, ReleaseAppends())
    first, repeat = answer(bench, "edit"), answer(bench, "again")
    assert first == repeat
    assert len(held_appends(bench)) == 1
    assert sources(bench, room, notebook_id, "read-after") == ["x = 1"]


def test_a_daemon_started_over_the_same_state_dir_finds_the_acknowledged_edits(
    bench: ActorBench, tmp_path: Path
) -> None:
    state = state_dir(tmp_path)
    first = start_daemon(bench, state)

    path = notebook_file(tmp_path / "file.ipynb")
    on_disk = path.read_bytes()
    file_id = ask(bench, first, "open", OpenNotebook(str(path)))["notebook_id"]
    file_room = room_of(bench, file_id)
    cell = ask(bench, file_room, "c1", CreateCell(file_id, "kept = 1"))["cell_id"]
    ask(bench, file_room, "c2", SetCell(file_id, cell, "kept = 2"))
    ask(bench, file_room, "c3", CreateCell(file_id, "second", "markdown", 0))

    made = ask(bench, first, "create", CreateNotebook(runtime=None, ephemeral=False))
    untitled_id = made["notebook_id"]
    untitled_room = room_of(bench, untitled_id)
    ask(bench, untitled_room, "u1", CreateCell(untitled_id, "y = 'untitled'"))
    registry = Registry(state / "registry.sqlite3")
    row = orjson.loads(registry.load_untitled(untitled_id))
    assert row["cells"] == [], "the edit must not have been flushed for this test to mean much"
    registry.store_untitled(untitled_id, orjson.dumps({**row, "metadata": NOBODY_S_KERNEL}))
    registry.close()

    second = start_daemon(bench, state)
    reopened = ask(bench, second, "reopen", OpenNotebook(str(path)))
    assert reopened["notebook_id"] == file_id
    again = room_of(bench, file_id)
    assert again != file_room
    assert sources(bench, again, file_id, "r1") == ["second", "kept = 2"]
    assert notices_of(bench, "r1") == (
        f"[nbstage] {path}: 3 edits made before the daemon stopped were restored from the "
        "journal and are not saved yet",
    )
    assert ask(bench, again, "d1", DescribeRoom(file_id))["unsaved"] is True
    assert path.read_bytes() == on_disk

    ask(bench, second, "attach", AttachNotebook(untitled_id))
    assert sources(bench, room_of(bench, untitled_id), untitled_id, "r2") == ["y = 'untitled'"]

    ask(bench, again, "save", SaveNotebook(file_id))
    saved = orjson.loads(path.read_bytes())
    assert ["".join(c["source"]) for c in saved["cells"]] == ["second", "kept = 2"]
    assert ask(bench, again, "d2", DescribeRoom(file_id))["unsaved"] is False

    third = start_daemon(bench, state)
    ask(bench, third, "third-open", OpenNotebook(str(path)))
    latest = room_of(bench, file_id)
    assert ask(bench, latest, "d3", DescribeRoom(file_id))["unsaved"] is False
    assert sources(bench, latest, file_id, "r3") == ["second", "kept = 2"]


def test_an_edit_whose_journal_write_fails_is_still_answered_and_saved_as_before(
    bench: ActorBench, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    state = tmp_path / "state"
    (state / "journal.sqlite3").mkdir(parents=True)
    daemon = start_daemon(bench, state)
    path = notebook_file(tmp_path / "n.ipynb")
    notebook_id = ask(bench, daemon, "open", OpenNotebook(str(path)))["notebook_id"]
    room = room_of(bench, notebook_id)
    with caplog.at_level(logging.ERROR, logger="nbstage.room"):
        ask(bench, room, "edit", CreateCell(notebook_id, "x = 1"))
    assert any("could not journal edit 1" in r.getMessage() for r in caplog.records)
    ask(bench, room, "save", SaveNotebook(notebook_id))
    assert ["".join(c["source"]) for c in orjson.loads(path.read_bytes())["cells"]] == ["x = 1"]


def test_a_save_to_a_new_path_is_answered_only_once_the_registry_holds_its_binding(
    bench: ActorBench, tmp_path: Path
) -> None:
    """Otherwise a SIGKILL just after the answer leaves a file the next daemon opens under
    a new id, and the id the agent was given names nothing."""
    state = state_dir(tmp_path)
    daemon = start_daemon(bench, state)
    made = ask(bench, daemon, "create", CreateNotebook(runtime=None, ephemeral=False))
    notebook_id = made["notebook_id"]
    room = room_of(bench, notebook_id)
    target = tmp_path / "saved.ipynb"

    bench.system.tell(bench.recorder, HoldAppends(BindingStored))
    bench.send(room, ClientRequest(Origin(1, "save"), SaveNotebook(notebook_id, str(target))))
    bench.run_until(lambda: held_work(bench, BindingStored))
    assert target.exists()
    assert not answered(bench, "save")
    assert Registry(state / "registry.sqlite3").id_for(str(target)) is None

    bench.system.tell(bench.recorder, ReleaseAppends())
    assert answer(bench, "save")["path"] == str(target)
    assert Registry(state / "registry.sqlite3").id_for(str(target)) == notebook_id


def test_an_open_of_a_new_path_is_answered_only_once_the_registry_holds_its_binding(
    bench: ActorBench, tmp_path: Path
) -> None:
    state = state_dir(tmp_path)
    daemon = start_daemon(bench, state)
    path = notebook_file(tmp_path / "opened.ipynb")

    bench.system.tell(bench.recorder, HoldAppends(BindingStored))
    bench.send(daemon, ClientRequest(Origin(1, "open"), OpenNotebook(str(path))))
    bench.run_until(lambda: held_work(bench, BindingStored))
    assert not answered(bench, "open")

    bench.system.tell(bench.recorder, ReleaseAppends())
    notebook_id = answer(bench, "open")["notebook_id"]
    assert Registry(state / "registry.sqlite3").id_for(str(path)) == notebook_id
    after_a_crash = start_daemon(bench, state)
    again = ask(bench, after_a_crash, "again", OpenNotebook(str(path)))
    assert again["notebook_id"] == notebook_id
    assert len(held_work(bench, BindingStored)) == 1, "a known path is not recorded again"
