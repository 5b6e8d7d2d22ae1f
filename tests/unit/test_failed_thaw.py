"""A thaw that fails (on a worker) while people watch a frozen document is not started
again by the Room's own next message: as a mirror that fails, it waits for the Document
to move. Driven through the Room's handlers (lab_people.py) on a stand-in room."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from nbstage.actors.common.effects import AfterMail
from nbstage.actors.daemon.room import lab_people
from nbstage.actors.daemon.room.actions import Offload
from nbstage.protocol.common.offload import BlockingWorkDone
from nbstage.protocol.daemon.room_replies import SharedDocState
from nbstage.protocol.daemon_actors.room_followups import SharedDocBuilt
from tests.unit.test_shared_doc_watched_freeze import EDGE, Watched


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
