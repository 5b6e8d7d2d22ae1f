"""The Room's handlers for the people (lab_people.py) on a stand-in room, around a watched
document's freeze: a thaw that fails (on a worker) is not started again by the Room's
own next message, as a mirror that fails waits for the Document to move; and a person's
awareness renewal, which the handler takes with a mirror first, is not activity."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from jupyter_ydoc import YNotebook
from pycrdt import Doc, create_update_message

from nbstage.actors.common.effects import AfterMail, Wake
from nbstage.actors.daemon.room import lab_people
from nbstage.actors.daemon.room.actions import Offload
from nbstage.actors.daemon.room.shared_doc import SharedDoc
from nbstage.protocol.common.offload import BlockingWorkDone
from nbstage.protocol.daemon.lab import PassSharedDocMessage, to_text
from nbstage.protocol.daemon.room_replies import SharedDocState
from nbstage.protocol.daemon_actors.room_followups import (
    SharedDocBuilt,
    SharedDocFrozen,
    SharedDocIdle,
)
from tests.unit.test_shared_doc_watched_freeze import EDGE, Watched, _awareness_message


def _room(watched: Watched) -> Any:
    acted: list[Any] = []
    return SimpleNamespace(
        sharing=watched.sharing,
        doc=watched.room.doc,
        peers=watched.room.peers,
        seat=SimpleNamespace(runs=SimpleNamespace(book=SimpleNamespace(live_cells=frozenset))),
        config=SimpleNamespace(notebook_id="nb"),
        edge=EDGE,
        acted=acted,
        act=lambda *actions: acted.extend(actions),
        close=SimpleNamespace(refuse=lambda why: None),
        file=SimpleNamespace(journalled=False),
        journal=None,
    )


def _thaw_failed(room: Any) -> None:
    """The mirror the Room asked for starts a thaw, and the worker's build fails."""
    lab_people.mirror(room)
    [thaw] = [a for a in room.acted if isinstance(a, Offload)]
    assert isinstance(thaw.token, SharedDocBuilt)
    room.acted.clear()
    lab_people.shared_doc_built(room, BlockingWorkDone(thaw.token, None, RuntimeError("broken")))
    lab_people.after_message(room)


def test_a_failed_thaw_is_not_started_again_until_the_document_moves() -> None:
    watched = Watched("a", "b")
    watched.freeze()
    room = _room(watched)
    room.doc.create_cell("the agent's", "code", None)
    lab_people.after_message(room)
    assert any(isinstance(a, AfterMail) for a in room.acted)
    _thaw_failed(room)
    assert watched.sharing.view().state is SharedDocState.FROZEN
    assert not any(isinstance(a, AfterMail) for a in room.acted), "no thaw after its own failure"
    room.doc.create_cell("another", "code", None)
    lab_people.after_message(room)
    assert any(isinstance(a, AfterMail) for a in room.acted), "the next change tries again"


def test_awareness_renewals_alone_let_a_watched_document_freeze() -> None:
    """Lab's provider renews its awareness every 15 s, half the idle period: taken
    through the Room's handler (a mirror first, then aside or heard), the renewals
    leave the period running, and the timer freezes the document."""
    watched = Watched("a", "b")
    room = _room(watched)
    start, period = watched.room.now, watched.sharing.idle_secs
    for at in (period / 2, period, period * 3 / 2):
        watched.room.now = start + at
        message = to_text([_awareness_message()])[0]
        origin = watched.room.origin(watched.room.peers.conns[watched.person])
        lab_people.person_said(room, origin, PassSharedDocMessage("nb", watched.person, message))
        lab_people.after_message(room)
    room.acted.clear()
    lab_people.shared_doc_idle(room, SharedDocIdle(watched.sharing.generation))
    [freeze] = room.acted
    assert isinstance(freeze, Offload)
    assert isinstance(freeze.token, SharedDocFrozen)


def test_a_mirror_that_fails_as_a_thaw_is_taken_still_serves_what_waited(monkeypatch) -> None:
    """The held requests went back to the Room only after the mirror: one that raised
    left them unanswered, and no idle timer was armed."""
    watched = Watched("a", "b")
    watched.freeze()
    typist = Doc()
    typist.apply_update(watched.browser.notebook.ydoc.get_update())
    before = typist.get_state()
    YNotebook(typist).ycells[0]["source"].insert(1, " typed")
    update = typist.get_update(before)
    [thaw] = watched.says(watched.person, create_update_message(update))
    assert isinstance(thaw.token, SharedDocBuilt)

    def broken(self: Any, doc: Any, running: Any = frozenset()) -> list[bytes]:
        raise RuntimeError("the people's document is broken")

    monkeypatch.setattr(SharedDoc, "mirror", broken)
    done = BlockingWorkDone(thaw.token, thaw.work(), None)
    todo, held = watched.sharing.built(done, watched.room.doc, frozenset(), EDGE, "nb")
    assert [type(req) for _, req in held] == [PassSharedDocMessage], "served all the same"
    assert any(isinstance(a, Wake) and isinstance(a.payload, SharedDocIdle) for a in todo)
    assert watched.sharing.stalled_at == watched.room.doc.revision
