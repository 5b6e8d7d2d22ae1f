"""A watched shared document frozen while idle (actors/room/sharing.py, freezing.py,
frozen_people.py; ADR 0004 item 19): its people stay joined, their awareness is answered
without the document, and the next sync message of theirs or the next change they must
see thaws it, with nothing doubled and nothing lost. Driven by the order of messages, as
the Room's mailbox would deliver them; the worker's part is called where a test puts it,
and the clock is the test's."""

from __future__ import annotations

from typing import Any

import pytest
from jupyter_ydoc import YNotebook
from pycrdt import (
    Awareness,
    Decoder,
    Doc,
    YMessageType,
    create_awareness_message,
    create_update_message,
)

from nbstage.actors.daemon.room.actions import Answer, Offload, Send, Wake
from nbstage.actors.daemon.room.agent_marks import client_id
from nbstage.actors.daemon.room.freezing import FreezeOutcome, IdleStep, idle_step, outcome
from nbstage.actors.daemon.room.frozen_people import needs_document, stirs
from nbstage.actors.daemon.room.shared_doc import (
    EMPTY_UPDATE,
    KEEPALIVE,
    QUERY_AWARENESS,
    UnreadableMessage,
)
from nbstage.protocol.common.offload import BlockingWorkDone
from nbstage.protocol.daemon.lab import (
    JoinSharedDoc,
    PassSharedDocMessage,
    SharedDocPushed,
    from_text,
    to_text,
)
from nbstage.protocol.daemon.room_replies import SharedDocState
from nbstage.protocol.daemon_actors.room_followups import SharedDocBuilt, SharedDocFrozen
from tests.unit.test_shared_doc_handover import (
    RELEASED,
    STREAM,
    Browser,
    Room,
    _doc,
    _live_with_a_browser,
)

EDGE = "edge"


@pytest.mark.parametrize(
    ("current", "generation", "live", "quiet_for", "watched", "busy", "step", "after"),
    [
        (4, 3, True, 99.0, False, False, IdleStep.STALE, 0.0),
        (3, 3, False, 99.0, True, False, IdleStep.STALE, 0.0),
        (3, 3, True, 10.0, False, False, IdleStep.WAIT, 20.0),
        (3, 3, True, 10.0, True, False, IdleStep.WAIT, 20.0),
        (3, 3, True, 30.0, True, True, IdleStep.WAIT, 30.0),
        (3, 3, True, 30.0, False, True, IdleStep.FREEZE, 0.0),
        (3, 3, True, 30.0, True, False, IdleStep.FREEZE, 0.0),
        (3, 3, True, 45.0, False, False, IdleStep.FREEZE, 0.0),
    ],
)
def test_what_the_idle_timer_does(
    current: int,
    generation: int,
    live: bool,
    quiet_for: float,
    watched: bool,
    busy: bool,
    step: IdleStep,
    after: float,
) -> None:
    decided = idle_step(current, generation, live, quiet_for, 30.0, watched, busy)
    assert (decided.step, decided.after) == (step, after)


@pytest.mark.parametrize(
    ("held", "failed", "wanted", "expected"),
    [
        (False, False, True, FreezeOutcome.TAKEN_BACK),
        (True, False, True, FreezeOutcome.TAKEN_BACK),
        (False, True, True, FreezeOutcome.TAKEN_BACK),
        (False, False, False, FreezeOutcome.KEPT),
    ],
)
def test_a_change_the_people_watching_must_see_takes_the_freeze_back(
    held: bool, failed: bool, wanted: bool, expected: FreezeOutcome
) -> None:
    assert outcome(3, 3, True, held, failed, wanted) is expected
    assert outcome(3, 3, False, held, failed, wanted) is FreezeOutcome.CLOSED
    assert outcome(4, 3, True, held, failed, wanted) is FreezeOutcome.STALE


def _awareness_message(state: dict[str, Any] | None = None) -> bytes:
    mine = Awareness(Doc())
    mine.set_local_state(state or {"user": {"name": "someone"}})
    return create_awareness_message(mine.encode_awareness_update([mine.client_id]))


@pytest.mark.parametrize(
    ("message", "needs"),
    [
        (_awareness_message(), False),
        (bytes((QUERY_AWARENESS,)), False),
        (bytes((YMessageType.SYNC, 2)) + bytes((len(EMPTY_UPDATE),)) + EMPTY_UPDATE, False),
        (bytes((YMessageType.SYNC, 1)) + bytes((len(EMPTY_UPDATE),)) + EMPTY_UPDATE, False),
        (from_text(Browser().sync_step1()), True),
        (bytes((YMessageType.SYNC, 2, 3, 1, 2, 3)), True),
    ],
)
def test_what_of_a_persons_messages_needs_the_document(message: bytes, needs: bool) -> None:
    assert needs_document(message) is needs


@pytest.mark.parametrize("message", [b"", bytes((7,)), bytes((YMessageType.SYNC, 9, 0))])
def test_a_message_that_is_not_one_is_refused_while_frozen_too(message: bytes) -> None:
    with pytest.raises(UnreadableMessage):
        needs_document(message)


class Watched:
    """A live document with one browser that holds it, an agent in the room, and the
    pushes the room sends to the people, heard by their browsers."""

    def __init__(self, *sources: str) -> None:
        self.room = Room(_doc(*sources))
        self.browser, self.person = _live_with_a_browser(self.room)
        self.agent_conn = 40
        self.agent = self.room.peers.join("claude code", self.agent_conn)
        self.browsers = {self.person: self.browser}
        self.awareness = {self.person: Awareness(Doc())}
        self.pushed: list[SharedDocPushed] = []

    @property
    def sharing(self) -> Any:
        return self.room.sharing

    def act(self, todo: list[Any]) -> list[Any]:
        """The pushes are heard by the browsers; the rest is returned, in order."""
        rest = []
        for action in todo:
            if isinstance(action, Send) and isinstance(action.message, SharedDocPushed):
                self.pushed.append(action.message)
                self.hear(action.message.peer_id, action.message.messages)
            else:
                rest.append(action)
        return rest

    def hear(self, peer_id: str, messages: list[str]) -> None:
        self.browsers[peer_id].hear(messages)
        for message in map(from_text, messages):
            decoder = Decoder(message)
            if decoder.read_var_uint() == YMessageType.AWARENESS:
                update = decoder.read_message()
                assert update is not None
                self.awareness[peer_id].apply_awareness_update(update, "room")

    def mirror(self) -> list[Any]:
        running: frozenset[str] = frozenset()
        return self.act(self.sharing.mirror(self.room.doc, self.room.peers, running, EDGE, "nb"))

    def agent_edits(self, change: Any) -> list[Any]:
        """An agent's change to the Document, as the Room makes it, then the mirror."""
        cell_id = change(self.room.doc)
        self.room.doc.revision += 1
        self.sharing.worked_on(self.agent_conn, cell_id, self.room.peers)
        return self.mirror()

    def freeze(self) -> None:
        """A whole idle period, and the worker's freeze back at once."""
        freeze = self.room.idle(self.room.later())
        assert freeze is not None
        assert self.room.frozen_back(freeze, freeze.work()) == RELEASED
        assert self.sharing.view().state is SharedDocState.FROZEN

    def says(self, peer_id: str, message: bytes) -> list[Any]:
        """A person's message as the Room takes it: aside, held, or heard."""
        req = PassSharedDocMessage("nb", peer_id, to_text([message])[0])
        origin = self.room.origin(self.room.peers.conns[peer_id])
        aside = self.sharing.aside(origin, req, self.room.doc, EDGE)
        if aside is not None:
            return self.act(aside)
        if self.sharing.holds(origin, req):
            return []
        said = self.sharing.heard(req, self.room.doc, EDGE)
        return self.act([*said.pushes, Answer(origin, said.answer)])

    def thawed(self, thaw: Offload, running: frozenset[str] = frozenset()) -> list[Any]:
        done = BlockingWorkDone(thaw.token, thaw.work(), None)
        todo, held = self.sharing.built(done, self.room.doc, running, EDGE, "nb")
        todo = self.act(todo)
        for origin, req in held:
            if isinstance(req, PassSharedDocMessage):
                said = self.sharing.heard(req, self.room.doc, EDGE)
                todo += self.act([*said.pushes, Answer(origin, said.answer)])
            else:
                todo += self.sharing.join(origin, req, self.room.doc, self.room.peers)
        return todo

    def cells(self) -> list[tuple[str, str]]:
        return [(cell.id, cell.source) for cell in self.room.doc.cells]


def _new_cell(source: str):
    return lambda doc: doc.create_cell(source, "code", None)[0].id


def test_a_watched_idle_document_is_frozen_and_its_person_stays_joined() -> None:
    watched = Watched("a", "b")
    watched.freeze()
    assert watched.sharing.frozen.ids == [cell.id for cell in watched.room.doc.cells]
    assert set(watched.sharing.people()) == {watched.person}
    assert watched.sharing.watched
    assert watched.sharing.shared is None


def test_a_sync_message_before_the_timer_puts_the_freeze_off_a_period_after_it() -> None:
    watched = Watched("a")
    room = watched.room
    due = room.later()
    room.now -= 5.0
    watched.says(watched.person, from_text(watched.browser.sync_step1()))
    room.now += 5.0
    assert room.idle(due) is None
    [wake] = room.rearmed
    assert wake.seconds == room.sharing.idle_secs - 5.0
    room.now += wake.seconds
    assert room.idle(wake.payload) is not None


def test_a_steady_stream_of_changes_is_never_frozen() -> None:
    watched = Watched("a")
    room = watched.room
    due = room.later()
    for i in range(20):
        room.now += room.sharing.idle_secs / 3
        watched.agent_edits(lambda doc, i=i: doc.set_cell(doc.cells[0].id, f"a{i}", None).id)
        if room.idle(due) is None:
            due = room.rearmed.pop().payload
        assert room.sharing.view().state is SharedDocState.LIVE
    assert watched.browser.cells() == watched.cells()


def test_a_running_cell_keeps_a_watched_document_live() -> None:
    watched = Watched("a")
    running = frozenset({watched.room.doc.cells[0].id})
    watched.sharing.mirror(watched.room.doc, watched.room.peers, running, EDGE, "nb")
    assert watched.room.idle(watched.room.later(), running) is None
    assert watched.room.sharing.view().state is SharedDocState.LIVE


def test_awareness_is_answered_while_frozen_and_does_not_thaw() -> None:
    watched = Watched("a")
    second = watched.room.peers.join("person (JupyterLab)", 9)
    origin = watched.room.origin(9)
    join = watched.sharing.join(
        origin, JoinSharedDoc("nb", second), watched.room.doc, watched.room.peers
    )
    assert [type(action) for action in join] == [Answer]
    watched.browsers[second], watched.awareness[second] = Browser(), Awareness(Doc())
    watched.freeze()
    todo = watched.says(watched.person, _awareness_message({"user": {"name": "ada"}}))
    [answer] = todo
    assert isinstance(answer, Answer)
    names = [s.get("user", {}).get("name") for s in watched.awareness[second].states.values()]
    assert "ada" in names, "relayed to the other person"
    [query] = watched.says(second, bytes((QUERY_AWARENESS,)))
    assert query.reply.messages
    assert watched.sharing.view().state is SharedDocState.FROZEN


def test_a_persons_edit_while_frozen_thaws_it_and_is_taken_once() -> None:
    watched = Watched("a", "b")
    watched.freeze()
    session = watched.sharing.frozen.session
    typist = Doc()
    typist.apply_update(watched.browser.notebook.ydoc.get_update())
    before = typist.get_state()
    YNotebook(typist).ycells[0]["source"].insert(1, " typed")
    update = typist.get_update(before)
    watched.browser.notebook.ydoc.apply_update(update)
    [thaw] = watched.says(watched.person, create_update_message(update))
    assert isinstance(thaw, Offload)
    assert isinstance(thaw.token, SharedDocBuilt)
    assert watched.sharing.view().state is SharedDocState.BUILDING
    todo = watched.thawed(thaw)
    answers = [action for action in todo if isinstance(action, Answer)]
    assert [a.reply.session for a in answers] == [session]
    assert watched.room.doc.cells[0].source == "a typed"
    assert watched.browser.cells() == watched.cells()


def test_an_agents_edit_while_frozen_reaches_the_person_after_the_thaw() -> None:
    watched = Watched("a", "b")
    watched.agent_edits(lambda doc: doc.cells[0].id)
    watched.freeze()
    assert watched.sharing.behind(watched.room.doc, watched.room.peers, frozenset()) is False
    watched.room.doc.create_cell("made by the agent", "code", None)
    watched.room.doc.revision += 1
    assert watched.sharing.behind(watched.room.doc, watched.room.peers, frozenset())
    [thaw] = watched.mirror()
    assert isinstance(thaw, Offload)
    assert watched.mirror() == [], "a thaw under way brings everything when it is back"
    watched.thawed(thaw)
    assert watched.browser.cells() == watched.cells()
    ids = [cell_id for cell_id, _ in watched.browser.cells()]
    assert len(ids) == len(set(ids))
    agent = watched.awareness[watched.person].states.get(client_id(watched.agent))
    assert agent is not None, "the agent's state is sent again after the thaw"
    assert agent["nbstage"] == {"cell_id": watched.room.doc.cells[0].id}


def test_an_agents_edit_during_the_freeze_takes_it_back_and_reaches_the_person() -> None:
    watched = Watched("a", "b")
    freeze = watched.room.idle(watched.room.later())
    assert freeze is not None
    result = freeze.work()
    assert watched.agent_edits(_new_cell("made during the freeze")) == []
    todo = watched.act(watched.room.frozen_back(freeze, result))
    assert [type(action) for action in todo] == [Wake]
    assert watched.sharing.view().state is SharedDocState.LIVE
    assert watched.browser.cells() == watched.cells()


def test_a_sync_message_during_the_thaw_waits_and_comes_after_the_catch_up() -> None:
    watched = Watched("a")
    watched.freeze()
    watched.room.doc.create_cell("b", "code", None)
    watched.room.doc.revision += 1
    [thaw] = watched.mirror()
    watched.room.doc.create_cell("c", "code", None)
    watched.room.doc.revision += 1
    assert watched.says(watched.person, from_text(watched.browser.sync_step1())) == []
    assert watched.says(watched.person, _awareness_message()) == [], "held, in order"
    todo = watched.thawed(thaw)
    assert [type(action) for action in todo] == [Wake, Offload, Answer, Answer]
    assert watched.pushed, "the catch-up came first"
    assert watched.browser.cells() == watched.cells()


def test_a_person_who_leaves_during_the_thaw_is_let_go() -> None:
    watched = Watched("a")
    watched.freeze()
    watched.room.doc.create_cell("b", "code", None)
    watched.room.doc.revision += 1
    [thaw] = watched.mirror()
    watched.room.peers.labels.pop(watched.person)
    watched.room.peers.conns.pop(watched.person)
    watched.thawed(thaw)
    watched.mirror()
    assert watched.sharing.people() == {}
    assert watched.room.idle(watched.room.later()) is not None


def test_a_person_who_leaves_a_frozen_document_needs_no_thaw() -> None:
    watched = Watched("a")
    watched.freeze()
    watched.room.peers.labels.pop(watched.person)
    watched.room.peers.conns.pop(watched.person)
    assert watched.sharing.behind(watched.room.doc, watched.room.peers, frozenset())
    assert watched.mirror() == []
    assert watched.sharing.view().state is SharedDocState.FROZEN
    assert not watched.sharing.watched
    assert watched.sharing.frozen.awareness is None


def test_an_agent_that_leaves_a_frozen_document_is_ended_without_a_thaw() -> None:
    watched = Watched("a")
    watched.agent_edits(lambda doc: doc.cells[0].id)
    assert client_id(watched.agent) in watched.awareness[watched.person].states
    watched.freeze()
    watched.room.peers.labels.pop(watched.agent)
    watched.room.peers.conns.pop(watched.agent)
    assert watched.mirror() == []
    assert client_id(watched.agent) not in watched.awareness[watched.person].states
    assert watched.sharing.view().state is SharedDocState.FROZEN


def test_frozen_again_after_a_thaw_and_thawed_again_nothing_doubles() -> None:
    watched = Watched("a", "b", "c")
    session = watched.sharing.shared.session
    for round_ in range(3):
        watched.freeze()
        assert watched.sharing.frozen.session == session
        [thaw] = watched.agent_edits(_new_cell(f"round {round_}"))
        watched.thawed(thaw)
        assert watched.browser.cells() == watched.cells()
    freeze = watched.room.idle(watched.room.later())
    assert freeze is not None
    assert isinstance(freeze.token, SharedDocFrozen)


@pytest.mark.parametrize("frozen", [False, True])
def test_a_persons_awareness_renewal_is_answered_even_when_nothing_changed(frozen: bool) -> None:
    """y-websocket's provider reconnects after 30 s without a message, and a reconnect is a
    join: the renewal (every 15 s) is answered with an empty update at least."""
    watched = Watched("a")
    if frozen:
        watched.freeze()
    [answer] = watched.says(watched.person, _awareness_message())
    assert [from_text(m) for m in answer.reply.messages] == [KEEPALIVE]
    browser = Browser()
    browser.hear(answer.reply.messages)
    assert browser.cells() == []
    state = SharedDocState.FROZEN if frozen else SharedDocState.LIVE
    assert watched.sharing.view().state is state


def test_awareness_during_the_freeze_is_answered_and_the_freeze_kept() -> None:
    """The worker reads the Y document, not the awareness: a renewal needs no hold."""
    watched = Watched("a")
    freeze = watched.room.idle(watched.room.later())
    assert freeze is not None
    [answer] = watched.says(watched.person, _awareness_message())
    assert isinstance(answer, Answer)
    assert watched.says(watched.person, from_text(watched.browser.sync_step1())) == []
    todo = watched.act(watched.room.frozen_back(freeze, freeze.work()))
    assert watched.sharing.view().state is SharedDocState.LIVE, "the sync message took it back"
    assert [type(action) for action in todo] == [Wake, Answer]


def test_awareness_alone_during_the_freeze_leaves_it_kept() -> None:
    watched = Watched("a")
    freeze = watched.room.idle(watched.room.later())
    assert freeze is not None
    watched.says(watched.person, _awareness_message())
    assert watched.room.frozen_back(freeze, freeze.work()) == RELEASED
    assert watched.sharing.view().state is SharedDocState.FROZEN


def test_a_run_and_its_output_while_frozen_reach_the_person_after_the_thaw() -> None:
    """The kernel's side: a cell starts running (the people must see [*]), then its
    output comes, and then it is idle again."""
    watched = Watched("print(1)")
    cell_id = watched.room.doc.cells[0].id
    watched.freeze()
    running = frozenset({cell_id})
    assert watched.sharing.behind(watched.room.doc, watched.room.peers, running)
    [thaw] = watched.act(
        watched.sharing.mirror(watched.room.doc, watched.room.peers, running, EDGE, "nb")
    )
    watched.thawed(thaw, running)
    [ycell] = watched.browser.notebook.ycells.to_py()
    assert ycell["execution_state"] == "running"
    watched.room.doc.set_outputs(cell_id, [{**STREAM, "text": "1\n"}], 1)
    watched.act(
        watched.sharing.mirror(watched.room.doc, watched.room.peers, frozenset(), EDGE, "nb")
    )
    [ycell] = watched.browser.notebook.ycells.to_py()
    assert (ycell["execution_state"], ycell["execution_count"]) == ("idle", 1)
    assert [output["text"] for output in ycell["outputs"]] == ["1\n"]


def test_the_last_person_who_leaves_during_the_freeze_takes_the_awareness_along() -> None:
    """As when they leave a frozen document: a later join starts a new awareness, and the
    one who left is not among the states it is told of."""
    watched = Watched("a")
    watched.says(watched.person, _awareness_message({"user": {"name": "gone"}}))
    freeze = watched.room.idle(watched.room.later())
    assert freeze is not None
    watched.room.peers.labels.pop(watched.person)
    watched.room.peers.conns.pop(watched.person)
    watched.mirror()
    assert watched.room.frozen_back(freeze, freeze.work()) == RELEASED
    assert watched.sharing.frozen.awareness is None
    [build] = watched.room.join(conn=77)
    [_, hello] = watched.room.built(build, build.work())
    told = Awareness(Doc())
    for message in map(from_text, hello.reply.messages):
        decoder = Decoder(message)
        if decoder.read_var_uint() == YMessageType.AWARENESS:
            told.apply_awareness_update(decoder.read_message(), "room")
    assert "gone" not in [state.get("user", {}).get("name") for state in told.states.values()]


CURSOR_A = {"user": {"name": "ada"}, "cursors": [{"head": 1, "anchor": 1}]}
CURSOR_B = {"user": {"name": "ada"}, "cursors": [{"head": 4, "anchor": 2}]}


@pytest.mark.parametrize(
    ("before", "after", "thaws"),
    [
        (CURSOR_A, CURSOR_B, True),
        ({"user": {"name": "ada"}}, CURSOR_A, True),
        (CURSOR_A, dict(CURSOR_A), False),
        (CURSOR_A, None, False),
        (None, None, False),
        (None, CURSOR_A, False),
    ],
    ids=["moved", "focused", "renewal", "removal", "removal-of-unknown", "first-state"],
)
def test_which_awareness_states_thaw_ahead_of_the_keystroke(
    before: dict[str, Any] | None, after: dict[str, Any] | None, thaws: bool
) -> None:
    assert stirs(before, after) is thaws


class Person:
    """One browser's own awareness, renewed or changed as y-websocket's provider does."""

    def __init__(self) -> None:
        self.awareness = Awareness(Doc())

    def says(self, state: dict[str, Any] | None) -> bytes:
        self.awareness.set_local_state(state)
        update = self.awareness.encode_awareness_update([self.awareness.client_id])
        return create_awareness_message(update)


def _frozen_with_a_known_state() -> tuple[Watched, Person]:
    watched, person = Watched("a", "b"), Person()
    watched.says(watched.person, person.says(CURSOR_A))
    watched.freeze()
    return watched, person


def test_a_changed_awareness_state_while_frozen_starts_the_thaw_after_its_answer() -> None:
    watched, person = _frozen_with_a_known_state()
    session = watched.sharing.frozen.session
    answer, thaw = watched.says(watched.person, person.says(CURSOR_B))
    assert isinstance(answer, Answer)
    assert answer.reply.messages
    assert isinstance(thaw, Offload)
    assert isinstance(thaw.token, SharedDocBuilt)
    assert watched.sharing.view().state is SharedDocState.BUILDING
    todo = watched.thawed(thaw)
    assert not [action for action in todo if isinstance(action, Answer)], "nothing was held"
    assert watched.sharing.view().state is SharedDocState.LIVE
    assert watched.sharing.shared.session == session
    mine = watched.sharing.shared.awareness.states[person.awareness.client_id]
    assert mine == CURSOR_B, "the state taken while frozen is the live document's"
    assert watched.browser.cells() == watched.cells()


def test_a_changed_awareness_state_while_thawing_starts_nothing_more() -> None:
    watched, person = _frozen_with_a_known_state()
    _, thaw = watched.says(watched.person, person.says(CURSOR_B))
    assert watched.says(watched.person, person.says(CURSOR_A)) == [], "held for the thaw"
    todo = watched.thawed(thaw)
    assert [type(action) for action in todo] == [Wake, Offload, Answer]
    assert not [a for a in todo if isinstance(a, Offload) and isinstance(a.token, SharedDocBuilt)]
    assert watched.sharing.shared.awareness.states[person.awareness.client_id] == CURSOR_A
    assert watched.sharing.view().state is SharedDocState.LIVE


def test_an_awareness_renewal_while_frozen_starts_no_thaw() -> None:
    watched, person = _frozen_with_a_known_state()
    [answer] = watched.says(watched.person, person.says(dict(CURSOR_A)))
    assert isinstance(answer, Answer)
    assert watched.sharing.view().state is SharedDocState.FROZEN
    [answer] = watched.says(watched.person, person.says(None))
    assert watched.sharing.view().state is SharedDocState.FROZEN, "a removal is no keystroke"


def test_a_changed_awareness_state_during_the_freeze_takes_it_back() -> None:
    watched, person = Watched("a"), Person()
    watched.says(watched.person, person.says(CURSOR_A))
    freeze = watched.room.idle(watched.room.later())
    assert freeze is not None
    [answer] = watched.says(watched.person, person.says(CURSOR_B))
    assert isinstance(answer, Answer), "answered aside, nothing held"
    todo = watched.act(watched.room.frozen_back(freeze, freeze.work()))
    assert [type(action) for action in todo] == [Wake]
    assert watched.sharing.view().state is SharedDocState.LIVE
