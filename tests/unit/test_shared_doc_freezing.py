"""The shared document frozen and thawed off the Room's thread (actors/room/sharing.py,
freezing.py, shared_build.py): the Room's side does no encoding, compressing or checksums,
and a result that comes back after the room moved on (an edit, a person who joined, a
second freeze, the room closed) loses nothing and is never taken over a newer state.
Driven by the order of messages, as the Room's mailbox would deliver them: the worker's
part is called where a test puts it."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Callable

import pytest

from nbstage.actors.daemon.notebook.document import Document
from nbstage.actors.daemon.room import shared_build
from nbstage.actors.daemon.room.actions import Answer, Fail, Offload, Wake
from nbstage.actors.daemon.room.freezing import FreezeOutcome, outcome
from nbstage.protocol.common.errors import ErrorCode, NbstageError
from nbstage.protocol.daemon.lab import PassSharedDocMessage
from nbstage.protocol.daemon.room_replies import SharedDocState
from nbstage.protocol.daemon_actors.room_followups import SharedDocBuilt, SharedDocFrozen
from tests.unit.test_shared_doc_handover import (
    RELEASED,
    STREAM,
    Browser,
    Room,
    _doc,
    _everyone_leaves,
    _live_with_a_browser,
)


def _edits() -> list[Callable[[Document], object]]:
    """What an agent or the kernel may do to the Document while a freeze or a thaw runs."""
    return [
        lambda d: d.set_cell(d.cells[1].id, "edited meanwhile", None),
        lambda d: d.create_cell("made meanwhile", "code", None),
        lambda d: d.set_outputs(d.cells[0].id, [{**STREAM, "text": "meanwhile\n"}], 9),
        lambda d: d.delete_cell(d.cells[2].id),
        lambda d: d.move_cell(d.cells[-1].id, None),
        lambda d: d.change_tags(d.cells[2].id, ["meanwhile"], []),
    ]


def _edit(room: Room) -> None:
    for edit in _edits():
        edit(room.doc)
    room.doc.revision += 1


def _synced(room: Room, browser: Browser) -> list[tuple[str, str]]:
    """The browser that held the old history asks for what it lacks: each cell once."""
    peer = next(iter(room.sharing.people()))
    ask = PassSharedDocMessage("nb", peer, browser.sync_step1())
    browser.hear(room.sharing.heard(ask, room.doc, None).answer.messages)
    return browser.cells()


def _freezing(room: Room) -> tuple[Browser, str, Offload]:
    """A live document with a browser that held it, everyone gone, the freeze handed out."""
    room.doc.set_outputs(room.doc.cells[0].id, [STREAM], 1)
    browser, peer_id = _live_with_a_browser(room)
    freeze = room.idle(_everyone_leaves(room, peer_id))
    assert freeze is not None
    assert isinstance(freeze.token, SharedDocFrozen)
    return browser, peer_id, freeze


@pytest.mark.parametrize(
    ("under_way", "generation", "room_open", "held", "failed", "expected"),
    [
        (None, 3, True, False, False, FreezeOutcome.STALE),
        (4, 3, True, True, False, FreezeOutcome.STALE),
        (4, 3, False, False, False, FreezeOutcome.STALE),
        (3, 3, False, True, False, FreezeOutcome.CLOSED),
        (3, 3, False, False, True, FreezeOutcome.CLOSED),
        (3, 3, True, True, False, FreezeOutcome.TAKEN_BACK),
        (3, 3, True, False, True, FreezeOutcome.TAKEN_BACK),
        (3, 3, True, True, True, FreezeOutcome.TAKEN_BACK),
        (3, 3, True, False, False, FreezeOutcome.KEPT),
    ],
)
def test_what_a_freeze_that_came_back_comes_to(
    under_way: int | None,
    generation: int,
    room_open: bool,
    held: bool,
    failed: bool,
    expected: FreezeOutcome,
) -> None:
    assert outcome(under_way, generation, room_open, held, failed) is expected


def test_the_rooms_side_of_a_freeze_and_a_thaw_takes_no_checksum(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The checksums, the encoding and the compression are the worker's part."""
    counted: list[object] = []
    real = shared_build.checksum
    monkeypatch.setattr(shared_build, "checksum", lambda cell: counted.append(cell) or real(cell))
    room = Room(_doc("a", "b", "c"))
    _, _, freeze = _freezing(room)
    assert counted == []
    assert room.sharing.view().state is SharedDocState.FREEZING
    assert room.frozen_back(freeze, freeze.work()) == RELEASED
    assert len(counted) == 3
    room.doc.set_cell(room.doc.cells[0].id, "a changed while frozen", None)
    [thaw] = room.join(conn=8)
    assert len(counted) == 3
    assert isinstance(thaw.token, SharedDocBuilt)
    room.built(thaw, thaw.work())
    assert len(counted) == 6
    assert room.y_cells() == room.cells()


def test_a_thaw_of_a_document_unchanged_since_its_freeze_takes_no_checksum(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The Document's revision has not moved: every cell is as the frozen form holds it."""
    room = Room(_doc("a", "b", "c"))
    _, _, freeze = _freezing(room)
    room.frozen_back(freeze, freeze.work())
    counted: list[object] = []
    monkeypatch.setattr(shared_build, "checksum", lambda cell: counted.append(cell) or 0)
    [thaw] = room.join(conn=8)
    room.built(thaw, thaw.work())
    assert counted == []
    assert room.y_cells() == room.cells()


@pytest.mark.parametrize("worker_runs", ["before the edits", "after the edits"])
def test_an_edit_made_while_the_freeze_runs_survives_it(worker_runs: str) -> None:
    room = Room(_doc("a", "b", "c", "d"))
    browser, _, freeze = _freezing(room)
    session = room.sharing.freezing.shared.session
    frozen = freeze.work() if worker_runs == "before the edits" else None
    _edit(room)
    assert room.frozen_back(freeze, frozen if frozen is not None else freeze.work()) == RELEASED
    assert room.sharing.view().state is SharedDocState.FROZEN
    [thaw] = room.join(conn=8)
    [_, answer] = room.built(thaw, thaw.work())
    assert answer.reply.session == session
    assert room.y_cells() == room.cells()
    assert _synced(room, browser) == [(c.id, c.source) for c in room.doc.cells]
    metadata = [cell["metadata"] for cell in room.sharing.shared.content()["cells"]]
    assert metadata == [cell.metadata for cell in room.doc.cells]
    assert {"tags": ["meanwhile"]} in metadata


@pytest.mark.parametrize("worker_runs", ["before the join", "after the join"])
def test_a_person_who_joins_while_the_freeze_runs_gets_the_live_document(
    worker_runs: str,
) -> None:
    room = Room(_doc("a", "b", "c", "d"))
    browser, _, freeze = _freezing(room)
    live = room.sharing.freezing.shared
    frozen = freeze.work() if worker_runs == "before the join" else None
    _edit(room)
    origin, join = room.person(conn=8)
    assert room.sharing.join(origin, join, room.doc, room.peers) == []
    ask = PassSharedDocMessage("nb", join.peer_id, browser.sync_step1())
    asked = room.origin(8)
    assert room.sharing.holds(asked, ask)
    todo = room.frozen_back(freeze, frozen if frozen is not None else freeze.work())
    assert [type(action) for action in todo] == [Wake, Answer, Answer]
    assert [action.origin for action in todo[1:]] == [origin, asked]
    assert room.sharing.shared is live
    assert room.sharing.frozen is None
    assert room.sharing.view().state is SharedDocState.LIVE
    assert room.y_cells() == room.cells()
    browser.hear(todo[-1].reply.messages)
    assert browser.cells() == [(c.id, c.source) for c in room.doc.cells]


def test_a_freeze_that_comes_back_after_a_second_one_began_is_dropped() -> None:
    room = Room(_doc("a", "b", "c"))
    browser, _, first = _freezing(room)
    first_result = first.work()
    room.join(conn=8)
    room.frozen_back(first, first_result)
    peer_id = next(iter(room.sharing.people()))
    second = room.idle(_everyone_leaves(room, peer_id))
    assert second is not None
    assert second.token.generation > first.token.generation
    _edit(room)
    second_result = second.work()
    assert room.frozen_back(first, first_result) == []
    assert room.sharing.view().state is SharedDocState.FREEZING
    assert room.frozen_back(second, second_result) == RELEASED
    assert room.sharing.frozen is second_result
    assert room.frozen_back(second, second_result) == []
    assert room.sharing.frozen is second_result
    [thaw] = room.join(conn=9)
    room.built(thaw, thaw.work())
    assert room.y_cells() == room.cells()
    assert _synced(room, browser) == [(c.id, c.source) for c in room.doc.cells]


def test_a_timer_of_an_earlier_generation_starts_no_second_freeze() -> None:
    room = Room(_doc("a"))
    _, peer_id = _live_with_a_browser(room)
    due = _everyone_leaves(room, peer_id)
    freeze = room.idle(due)
    assert freeze is not None
    assert room.idle(due) is None
    assert room.frozen_back(freeze, freeze.work()) == RELEASED
    assert room.idle(due) is None
    assert room.sharing.view().state is SharedDocState.FROZEN


def test_a_freeze_that_comes_back_to_a_closed_room_keeps_nothing() -> None:
    room = Room(_doc("a", "b"))
    _, _, freeze = _freezing(room)
    room.join(conn=8)
    gone = weakref.ref(room.sharing.freezing.shared)
    result = freeze.work()
    room.doc = None  # type: ignore[assignment]
    todo = room.frozen_back(freeze, result)
    assert [type(action) for action in todo] == [Fail]
    assert room.sharing.view().state is SharedDocState.NONE
    del freeze
    gc.collect()
    assert gone() is None


def test_a_failed_freeze_keeps_the_live_document_and_tries_again() -> None:
    room = Room(_doc("a", "b"))
    _, _, freeze = _freezing(room)
    live = room.sharing.freezing.shared
    room.doc.create_cell("made meanwhile", "code", None)
    todo = room.frozen_back(freeze, error=RuntimeError("no"))
    [wake] = todo
    assert isinstance(wake, Wake)
    assert room.sharing.shared is live
    assert room.y_cells() == room.cells()
    room.now += room.sharing.idle_secs
    again = room.idle(wake.payload)
    assert again is not None
    assert room.frozen_back(again, again.work()) == RELEASED
    assert room.sharing.view().state is SharedDocState.FROZEN


@pytest.mark.parametrize("worker_runs", ["before the edits", "after the edits"])
def test_people_who_join_while_the_thaw_runs_get_every_edit(worker_runs: str) -> None:
    room = Room(_doc("a", "b", "c", "d"))
    browser, _, freeze = _freezing(room)
    room.frozen_back(freeze, freeze.work())
    [thaw] = room.join(conn=8)
    built = thaw.work() if worker_runs == "before the edits" else None
    _edit(room)
    second, join = room.person(conn=9)
    assert room.sharing.join(second, join, room.doc, room.peers) == []
    todo = room.built(thaw, built if built is not None else thaw.work())
    assert [type(action) for action in todo] == [Wake, Answer, Answer]
    assert room.y_cells() == room.cells()
    newcomer = Browser()
    newcomer.hear(todo[-1].reply.messages)
    ask = PassSharedDocMessage("nb", join.peer_id, newcomer.sync_step1())
    newcomer.hear(room.sharing.heard(ask, room.doc, None).answer.messages)
    expected = [(c.id, c.source) for c in room.doc.cells]
    assert newcomer.cells() == expected
    assert _synced(room, browser) == expected
    texts = [[o["text"] for o in c["outputs"]] for c in room.sharing.shared.content()["cells"]]
    assert ["meanwhile\n"] in texts


@pytest.mark.parametrize("times", [2, 3, 5])
def test_outputs_changed_twice_while_nobody_watched_are_frozen_as_they_are(times: int) -> None:
    """A freed outputs list's identity may be taken by the next one the Document makes:
    the mirror must not take a twice-changed cell for an unchanged one."""
    room = Room(_doc("a", "b"))
    cell_id = room.doc.cells[0].id
    room.doc.set_outputs(cell_id, [{**STREAM, "text": "0\n"}], 1)
    _, peer_id = _live_with_a_browser(room)
    due = _everyone_leaves(room, peer_id)
    for i in range(1, times + 1):
        room.doc.set_outputs(cell_id, [{**STREAM, "text": f"{i}\n"}], 1)
    freeze = room.idle(due)
    assert freeze is not None
    room.frozen_back(freeze, freeze.work())
    [thaw] = room.join(conn=8)
    room.built(thaw, thaw.work())
    assert room.y_cells() == room.cells()


@pytest.mark.parametrize("times", [2, 3])
def test_outputs_changed_twice_during_a_build_are_built_as_they_are(times: int) -> None:
    room = Room(_doc("a", "b"))
    cell_id = room.doc.cells[0].id
    room.doc.set_outputs(cell_id, [{**STREAM, "text": "0\n"}], 1)
    [build] = room.join(conn=5)
    for i in range(1, times + 1):
        room.doc.set_outputs(cell_id, [{**STREAM, "text": f"{i}\n"}], 1)
    room.built(build, build.work())
    assert room.y_cells() == room.cells()


def test_a_room_that_closes_refuses_what_a_freeze_held_and_keeps_its_result() -> None:
    """The room may end before the freeze is back: the person hears now; the freeze, if the
    close is called off, is kept."""
    room = Room(_doc("a"))
    _, _, freeze = _freezing(room)
    room.join(conn=8)
    closing = NbstageError(ErrorCode.SHUTTING_DOWN, "closing")
    refused = room.sharing.refuse_held(closing)
    assert [type(action) for action in refused] == [Fail]
    assert room.sharing.refuse_held(closing) == []
    assert room.frozen_back(freeze, freeze.work()) == RELEASED
    assert room.sharing.view().state is SharedDocState.FROZEN
