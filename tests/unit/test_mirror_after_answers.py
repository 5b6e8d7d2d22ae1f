"""The people's shared document takes what a message changed once the answers that
message produced have gone out (room/lab_people.py, ``AfterMail``): an agent's call does
not wait for the people's update, changes made before the mirror comes back are mirrored
once, a person's own message finds every change mirrored first, and a mirror that fails
is not asked for again until the document changes."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from nbstage.actors.common.effects import AfterMail
from nbstage.actors.daemon.notebook.document import Document
from nbstage.actors.daemon.room import lab_people
from nbstage.actors.daemon.room.notices import NoticeBoard
from nbstage.actors.daemon.room.peers import Peers
from nbstage.actors.daemon.room.sharing import Sharing
from nbstage.protocol.daemon.lab import JoinSharedDoc, PassSharedDocMessage
from nbstage.protocol.daemon_actors.edge import Origin
from nbstage.protocol.daemon_actors.room_followups import SharedDocMirrorDue
from tests.unit.test_shared_doc_handover import Browser
from tests.unit.test_shared_doc_handover import Room as HandoverRoom


class WatchedRoom:
    """What lab_people reads of a Room, with a person watching a built shared document;
    ``done`` records the actions carried out, and each mirror as ("mirror", revision)."""

    def __init__(self) -> None:
        doc = Document.empty()
        doc.create_cell("1+1", "code", None)
        handover = HandoverRoom(doc)
        build = handover.join(1)[0]
        handover.built(build, build.work())
        self.doc, self.sharing, self.peers = doc, handover.sharing, handover.peers
        self.person = next(iter(self.sharing.shared.people))
        self.seat = SimpleNamespace(
            runs=SimpleNamespace(book=SimpleNamespace(live_cells=frozenset))
        )
        self.config = SimpleNamespace(notebook_id="nb")
        self.edge = object()
        self.close = SimpleNamespace(refuse=lambda why: None)
        self.notices = SimpleNamespace(post=lambda notice: None)
        self.journal = SimpleNamespace()
        self.file = SimpleNamespace(journalled=False)
        self.done: list[Any] = []
        real = self.sharing.mirror

        def mirror(*args: Any) -> list[Any]:
            self.done.append(("mirror", self.doc.revision))
            return real(*args)

        self.sharing.mirror = mirror  # type: ignore[method-assign]

    def act(self, *todo: Any) -> None:
        self.done.extend(todo)

    def wakes(self) -> list[AfterMail]:
        """The mirrors asked for."""
        return [x for x in self.done if isinstance(x, AfterMail)]

    def mirrors(self) -> list[tuple[str, int]]:
        return [x for x in self.done if isinstance(x, tuple) and x[0] == "mirror"]


def test_a_change_is_mirrored_from_a_timer_due_at_once_not_in_the_message() -> None:
    room = WatchedRoom()
    room.doc.create_cell("2+2", "code", None)
    lab_people.after_message(room)
    assert room.mirrors() == [], "the message's answers go out first"
    assert [w.payload for w in room.wakes()] == [SharedDocMirrorDue()]
    lab_people.mirror(room, SharedDocMirrorDue())
    assert room.mirrors() == [("mirror", room.doc.revision)]
    assert not room.sharing.mirror_due


def test_a_burst_of_changes_arms_one_timer_and_is_mirrored_once() -> None:
    room = WatchedRoom()
    for source in ("a", "b", "c"):
        room.doc.create_cell(source, "code", None)
        lab_people.after_message(room)
    assert len(room.wakes()) == 1
    lab_people.mirror(room, SharedDocMirrorDue())
    lab_people.after_message(room)
    assert len(room.wakes()) == 1, "the mirror's own message asks for none: nothing is behind"
    assert room.mirrors() == [("mirror", room.doc.revision)]


def test_nothing_changed_arms_nothing() -> None:
    room = WatchedRoom()
    lab_people.mirror(room)
    room.done.clear()
    lab_people.after_message(room)
    assert room.wakes() == []


def test_a_persons_message_finds_the_agents_change_mirrored_first() -> None:
    room = WatchedRoom()
    room.doc.create_cell("by the agent", "code", None)
    lab_people.after_message(room)
    assert room.sharing.mirror_due
    revision = room.doc.revision
    message = PassSharedDocMessage("nb", room.person, Browser().sync_step1())
    lab_people.person_said(room, Origin(1, 9), message)
    assert room.mirrors()[0] == ("mirror", revision), "mirrored before the person's message"
    assert not room.sharing.mirror_due


def test_a_join_finds_the_agents_change_mirrored_first() -> None:
    room = WatchedRoom()
    room.doc.create_cell("by the agent", "code", None)
    lab_people.after_message(room)
    peer = room.peers.join("person (JupyterLab)", 2)
    lab_people.joined(room, Origin(2, 1), JoinSharedDoc("nb", peer))
    assert room.mirrors() == [("mirror", room.doc.revision)]


def test_nobody_watching_arms_nothing() -> None:
    room = WatchedRoom()
    room.sharing = Sharing()
    room.peers = Peers(NoticeBoard())
    room.doc.create_cell("x", "code", None)
    lab_people.after_message(room)
    assert room.wakes() == []


def test_a_failing_mirror_is_not_asked_for_again_until_the_document_changes() -> None:
    room = WatchedRoom()

    def broken(*args: Any) -> list[Any]:
        raise RuntimeError("yrs refused")

    room.sharing.mirror = broken  # type: ignore[method-assign]
    room.doc.create_cell("x", "code", None)
    lab_people.after_message(room)
    lab_people.mirror(room, SharedDocMirrorDue())
    lab_people.after_message(room)
    assert len(room.wakes()) == 1, "the same revision again would fail again"
    room.doc.create_cell("y", "code", None)
    lab_people.after_message(room)
    assert len(room.wakes()) == 2
