"""The shared document built off the Room's thread (actors/room/sharing.py,
shared_build.py): what the Room changes between a build's start and its
``SharedDocBuilt`` is neither lost nor doubled, the people's requests held meanwhile come
back in the order they came, and an idle document frozen and made again keeps its
history. Driven by the order of messages, as the Room's mailbox would deliver them: the
worker's part is called where a test puts it."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Callable
from typing import Any

import pytest
from jupyter_ydoc import YNotebook
from pycrdt import (
    Doc,
    YMessageType,
    create_sync_message,
    handle_sync_message,
    write_message,
)

from nbstage.actors.daemon.notebook.document import Document
from nbstage.actors.daemon.room import freed_pages
from nbstage.actors.daemon.room.actions import Answer, Fail, Offload, Wake
from nbstage.actors.daemon.room.notices import NoticeBoard
from nbstage.actors.daemon.room.peers import Peers
from nbstage.actors.daemon.room.shared_doc import STEP2
from nbstage.actors.daemon.room.sharing import Sharing
from nbstage.protocol.common.offload import BlockingWorkDone
from nbstage.protocol.daemon.lab import JoinSharedDoc, PassSharedDocMessage, from_text, to_text
from nbstage.protocol.daemon.room_replies import SharedDocState
from nbstage.protocol.daemon_actors.edge import Origin
from nbstage.protocol.daemon_actors.room_followups import (
    FreedPagesReleased,
    SharedDocBuilt,
    SharedDocIdle,
)

STREAM = {"output_type": "stream", "name": "stdout", "text": "out\n"}


def _doc(*sources: str) -> Document:
    doc = Document.empty()
    for source in sources:
        doc.create_cell(source, "code", None)
    return doc


RELEASED = [Offload(FreedPagesReleased(), freed_pages.release)]
"""What a kept freeze comes to: the pages the live document held, given back by a worker."""


class Room:
    """The Room's side of the conversation, as its handlers drive the sharing part."""

    def __init__(self, doc: Document) -> None:
        self.doc, self.sharing, self.peers = doc, Sharing(), Peers(NoticeBoard())
        self.now = 0.0
        self.sharing.clock = lambda: self.now
        self.rearmed: list[Wake] = []
        """The idle timers armed again by a timer that found activity."""
        self.requests = 0
        self.releases = 0
        """The builds taken that asked a worker to give the freed pages back."""

    def person(self, conn: int) -> tuple[Origin, JoinSharedDoc]:
        peer_id = self.peers.join("person (JupyterLab)", conn)
        return self.origin(conn), JoinSharedDoc("nb", peer_id)

    def origin(self, conn: int) -> Origin:
        self.requests += 1
        return Origin(conn, self.requests)

    def join(self, conn: int) -> list[Any]:
        origin, req = self.person(conn)
        return self.sharing.join(origin, req, self.doc, self.peers)

    def built(self, build: Offload, result: Any = None, error: Exception | None = None) -> list:
        """SharedDocBuilt arrives; the held requests are served as the Room serves them.
        Every action, in order."""
        done = BlockingWorkDone(build.token, result, error)
        todo, held = self.sharing.built(done, self.doc)
        self.releases += todo.count(RELEASED[0])
        return self._serve([action for action in todo if action not in RELEASED], held)

    def idle(self, due: SharedDocIdle, running: frozenset[str] = frozenset()) -> Offload | None:
        """The idle timer fires: the freeze handed to a worker, if one starts (a timer
        armed again instead is kept in ``rearmed``)."""
        todo = self.sharing.idle(due, self.doc, self.peers, running)
        self.rearmed += [action for action in todo if isinstance(action, Wake)]
        offloads = [action for action in todo if isinstance(action, Offload)]
        assert len(todo) <= 1
        return offloads[0] if offloads else None

    def later(self) -> SharedDocIdle:
        """A whole idle period passes: the timer of the live document's chain fires."""
        self.now += self.sharing.idle_secs
        return SharedDocIdle(self.sharing.generation)

    def frozen_back(
        self, freeze: Offload, result: Any = None, error: Exception | None = None
    ) -> list:
        """SharedDocFrozen arrives; the held requests are served as the Room serves them."""
        done = BlockingWorkDone(freeze.token, result, error)
        return self._serve(*self.sharing.frozen_back(done, self.doc))

    def freeze(self, due: SharedDocIdle) -> None:
        """The idle timer fires and the worker's freeze comes back at once."""
        freeze = self.idle(due)
        assert freeze is not None
        assert self.frozen_back(freeze, freeze.work()) == RELEASED

    def _serve(self, todo: list, held: list) -> list:
        for origin, req in held:
            if isinstance(req, JoinSharedDoc):
                todo += self.sharing.join(origin, req, self.doc, self.peers)
            elif not self.sharing.holds(origin, req):
                todo.append(Answer(origin, self.sharing.heard(req, self.doc, None).answer))
        return todo

    def y_cells(self) -> list[tuple[str, str, list]]:
        shared = self.sharing.shared
        assert shared is not None
        return [(c["id"], c["source"], c.get("outputs", [])) for c in shared.content()["cells"]]

    def cells(self) -> list[tuple[str, str, list]]:
        return [(c.id, c.source, c.outputs) for c in self.doc.cells]


class Browser:
    """A person's Y client: its own Y document, synced through the room's messages."""

    def __init__(self) -> None:
        self.notebook = YNotebook(Doc())

    def sync_step1(self) -> str:
        return to_text([create_sync_message(self.notebook.ydoc)])[0]

    def hear(self, messages: list[str]) -> None:
        for message in map(from_text, messages):
            if message[0] == YMessageType.SYNC:
                handle_sync_message(message[1:], self.notebook.ydoc)

    def cells(self) -> list[tuple[str, str]]:
        return [(c["id"], c["source"]) for c in self.notebook.get()["cells"]]


def _changes() -> list[Callable[[Document], object]]:
    """What an agent, a kernel or a merge may do to the Document during a build."""
    return [
        lambda d: d.create_cell("made during the build", "code", None),
        lambda d: d.create_cell("at the top", "markdown", 0),
        lambda d: d.set_cell(d.cells[1].id, "edited during the build", None),
        lambda d: d.delete_cell(d.cells[-2].id),
        lambda d: d.move_cell(d.cells[-1].id, None),
        lambda d: d.set_outputs(d.cells[2].id, [STREAM], 7),
    ]


@pytest.mark.parametrize("worker_runs", ["before the changes", "after the changes"])
@pytest.mark.parametrize("count", [1, 3, 6])
def test_changes_during_the_build_are_in_the_document_once(worker_runs: str, count: int) -> None:
    room = Room(_doc("a = 1", "b = 2", "c = 3", "d = 4"))
    [build] = room.join(conn=5)
    assert isinstance(build, Offload)
    assert isinstance(build.token, SharedDocBuilt)
    built = build.work() if worker_runs == "before the changes" else None
    for change in _changes()[:count]:
        change(room.doc)
    room.doc.revision += 1
    todo = room.built(build, built if built is not None else build.work())
    assert room.y_cells() == room.cells()
    ids = [cell_id for cell_id, _, _ in room.y_cells()]
    assert len(ids) == len(set(ids))
    assert [type(action) for action in todo] == [Wake, Answer]


def test_a_browser_that_joins_after_the_build_gets_each_cell_once() -> None:
    room = Room(_doc("a", "b"))
    [build] = room.join(conn=5)
    room.doc.create_cell("c", "code", None)
    todo = room.built(build, build.work())
    answer = todo[-1]
    browser = Browser()
    browser.hear(answer.reply.messages)
    peer_id = next(iter(room.sharing.people()))
    said = room.sharing.heard(
        PassSharedDocMessage("nb", peer_id, browser.sync_step1()), room.doc, None
    )
    browser.hear(said.answer.messages)
    assert browser.cells() == [(c.id, c.source) for c in room.doc.cells]


def test_the_peoples_requests_held_for_the_build_come_back_in_their_order() -> None:
    room = Room(_doc("a"))
    [build] = room.join(conn=5)
    second = room.person(conn=6)
    assert room.sharing.join(*second, room.doc, room.peers) == []
    message = PassSharedDocMessage("nb", second[1].peer_id, Browser().sync_step1())
    origin = room.origin(6)
    assert room.sharing.holds(origin, message)
    third = room.person(conn=7)
    assert room.sharing.join(*third, room.doc, room.peers) == []
    assert room.sharing.view().state is SharedDocState.BUILDING
    todo = room.built(build, build.work())
    answered = [action.origin.request_id for action in todo if isinstance(action, Answer)]
    assert answered == [1, second[0].request_id, origin.request_id, third[0].request_id]
    assert set(room.sharing.people()) == set(room.peers.labels)


def test_a_build_taken_gives_back_the_pages_its_temporaries_held_and_no_other_does() -> None:
    room = Room(_doc("a"))
    [build] = room.join(conn=5)
    stale = Offload(SharedDocBuilt(build.token.generation + 1), build.work)
    room.built(stale, stale.work())
    room.built(build, error=RuntimeError("no"))
    assert room.releases == 0
    [again] = room.join(conn=6)
    room.built(again, again.work())
    assert room.releases == 1


def test_a_build_of_another_generation_is_not_taken() -> None:
    room = Room(_doc("a"))
    [build] = room.join(conn=5)
    stale = Offload(SharedDocBuilt(build.token.generation + 1), build.work)
    assert room.built(stale, stale.work()) == []
    assert room.sharing.shared is None
    assert room.sharing.building is not None


def test_a_failed_build_refuses_what_it_held() -> None:
    room = Room(_doc("a"))
    [build] = room.join(conn=5)
    room.sharing.join(*room.person(conn=6), room.doc, room.peers)
    todo = room.built(build, error=RuntimeError("no"))
    assert [type(action) for action in todo] == [Fail, Fail]
    assert room.sharing.view().state is SharedDocState.NONE
    [again] = room.join(conn=7)
    assert isinstance(again, Offload)


def _live_with_a_browser(room: Room) -> tuple[Browser, str]:
    [build] = room.join(conn=5)
    [_, answer] = room.built(build, build.work())
    browser = Browser()
    browser.hear(answer.reply.messages)
    peer_id = next(iter(room.sharing.people()))
    said = room.sharing.heard(
        PassSharedDocMessage("nb", peer_id, browser.sync_step1()), room.doc, None
    )
    browser.hear(said.answer.messages)
    return browser, peer_id


def _everyone_leaves(
    room: Room, peer_id: str, running: frozenset[str] = frozenset()
) -> SharedDocIdle:
    """The person leaves, then nothing happens for a whole idle period."""
    room.peers.labels.pop(peer_id)
    room.peers.conns.pop(peer_id)
    room.sharing.mirror(room.doc, room.peers, running, None, "nb")
    assert not room.sharing.people()
    return room.later()


def test_an_idle_document_is_frozen_and_made_again_with_its_history() -> None:
    room = Room(_doc("a", "b", "c"))
    room.doc.set_outputs(room.doc.cells[0].id, [STREAM], 1)
    browser, peer_id = _live_with_a_browser(room)
    session = room.sharing.shared.session
    room.freeze(_everyone_leaves(room, peer_id))
    view = room.sharing.view()
    assert view.state is SharedDocState.FROZEN
    assert view.frozen_bytes
    assert room.sharing.shared is None

    room.doc.set_cell(room.doc.cells[1].id, "b changed while frozen", None)
    room.doc.create_cell("new while frozen", "code", None)
    room.doc.set_outputs(room.doc.cells[0].id, [{**STREAM, "text": "again\n"}], 2)
    [thaw] = room.join(conn=8)
    room.doc.delete_cell(room.doc.cells[2].id)  # during the thaw
    [_, answer] = room.built(thaw, thaw.work())
    assert answer.reply.session == session
    assert room.y_cells() == room.cells()

    # The browser that held the old history syncs again: nothing doubles.
    peer = next(p for p in room.sharing.people())
    said = room.sharing.heard(
        PassSharedDocMessage("nb", peer, browser.sync_step1()), room.doc, None
    )
    browser.hear(said.answer.messages)
    assert browser.cells() == [(c.id, c.source) for c in room.doc.cells]


def test_a_timer_armed_before_a_join_does_not_freeze() -> None:
    room = Room(_doc("a"))
    _, peer_id = _live_with_a_browser(room)
    due = _everyone_leaves(room, peer_id)
    room.join(conn=9)
    assert room.idle(due) is None
    assert room.sharing.view().state is SharedDocState.LIVE


def test_a_frozen_document_is_let_go() -> None:
    """Its observers are unsubscribed: pycrdt held them, and they held the document."""
    room = Room(_doc(*(f"x = {i}" for i in range(50))))
    _, peer_id = _live_with_a_browser(room)
    gone = weakref.ref(room.sharing.shared)
    room.freeze(_everyone_leaves(room, peer_id))
    gc.collect()
    assert gone() is None


def test_the_workers_encoding_answers_the_first_new_client_and_is_then_let_go() -> None:
    """Kept while anyone watched, that copy of the whole document weighed 1.2 times the
    notebook's JSON; a later client that holds nothing is answered from the document."""
    room = Room(_doc("a", "b"))
    [build] = room.join(conn=5)
    built = build.work()
    room.built(build, built)
    peer_id = next(iter(room.sharing.people()))
    ask = PassSharedDocMessage("nb", peer_id, Browser().sync_step1())
    [first] = room.sharing.heard(ask, room.doc, None).answer.messages
    assert from_text(first) == STEP2 + write_message(built.update)
    shared = room.sharing.shared
    assert shared is not None
    assert shared._whole is None
    for change in (None, lambda d: d.create_cell("c", "code", None)):
        if change is not None:
            change(room.doc)
            room.sharing.mirror(room.doc, room.peers, frozenset(), None, "nb")
        browser = Browser()
        browser.hear(room.sharing.heard(ask, room.doc, None).answer.messages)
        assert browser.cells() == [(c.id, c.source) for c in room.doc.cells]


def test_a_first_client_that_holds_history_gets_its_difference_and_the_copy_is_let_go() -> None:
    room = Room(_doc("a"))
    browser, peer_id = _live_with_a_browser(room)
    room.freeze(_everyone_leaves(room, peer_id))
    [thaw] = room.join(conn=8)
    room.built(thaw, thaw.work())
    peer_id = next(iter(room.sharing.people()))
    room.doc.create_cell("b", "code", None)
    ask = PassSharedDocMessage("nb", peer_id, browser.sync_step1())
    browser.hear(room.sharing.heard(ask, room.doc, None).answer.messages)
    shared = room.sharing.shared
    assert shared is not None
    assert shared._whole is None
    room.sharing.mirror(room.doc, room.peers, frozenset(), None, "nb")
    browser.hear(room.sharing.heard(ask, room.doc, None).answer.messages)
    assert browser.cells() == [(c.id, c.source) for c in room.doc.cells]


def test_a_cell_running_when_the_document_froze_is_shown_as_it_runs_after() -> None:
    room = Room(_doc("a", "b"))
    first, second = (cell.id for cell in room.doc.cells)
    _, peer_id = _live_with_a_browser(room)
    room.freeze(_everyone_leaves(room, peer_id, frozenset({first})))
    [thaw] = room.join(conn=8)
    done = BlockingWorkDone(thaw.token, thaw.work())
    room.sharing.built(done, room.doc, frozenset({second}))
    states = [c.get("execution_state") for c in room.sharing.shared.notebook.ycells.to_py()]
    assert states == ["idle", "running"]


def test_a_build_that_comes_back_to_a_closed_room_refuses_what_it_held() -> None:
    room = Room(_doc("a"))
    [build] = room.join(conn=5)
    room.doc = None  # type: ignore[assignment]
    todo = room.built(build, build.work())
    assert [type(action) for action in todo] == [Fail]
    assert room.sharing.shared is None


def test_the_rooms_own_changes_are_not_kept_for_undo() -> None:
    """Outputs written again and again leave no undo stack, and the deleted ones are
    not kept in the document."""
    room = Room(_doc("print(i)"))
    _live_with_a_browser(room)
    shared = room.sharing.shared
    assert shared is not None
    cell_id = room.doc.cells[0].id
    big = "x" * 10_000
    for i in range(50):
        room.doc.set_outputs(cell_id, [{**STREAM, "text": f"{i} {big}\n"}], i)
        room.sharing.mirror(room.doc, room.peers, frozenset(), None, "nb")
    assert shared.notebook.undo_manager.undo_stack == []
    assert len(shared.ydoc.get_update()) < 3 * len(big)


def test_a_failed_thaw_keeps_the_frozen_document_and_its_history() -> None:
    room = Room(_doc("a"))
    _, peer_id = _live_with_a_browser(room)
    session = room.sharing.shared.session
    room.freeze(_everyone_leaves(room, peer_id))
    [thaw] = room.join(conn=8)
    room.built(thaw, error=RuntimeError("no"))
    assert room.sharing.view().state is SharedDocState.FROZEN
    [again] = room.join(conn=9)
    [_, answer] = room.built(again, again.work())
    assert answer.reply.session == session
