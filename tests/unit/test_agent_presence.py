"""The agents' states copied into Lab's global awareness room
(entrypoints/lab/agent_presence.py), read back as a browser's panel reads them."""

from __future__ import annotations

from jupyter_ydoc import YNotebook
from pycrdt import Awareness, Decoder, Doc, create_awareness_message

from nbstage.actors.daemon.room.agent_marks import AgentMarks
from nbstage.entrypoints.lab.agent_presence import AgentPresence


def _room_message(marks: AgentMarks) -> bytes:
    notebook = YNotebook(Doc())
    update = marks.states(notebook, Awareness(notebook.ydoc))
    assert update is not None
    return create_awareness_message(update)


def _panel(*messages: bytes | None) -> list[dict]:
    panel = Awareness(Doc())
    for message in messages:
        assert message is not None
        decoder = Decoder(message)
        decoder.read_var_uint()
        panel.apply_awareness_update(decoder.read_message(), "lab")
    return [s for c, s in panel.states.items() if c != panel.client_id]


def test_an_agents_state_is_copied_once_with_the_notebook_as_current() -> None:
    marks, presence = AgentMarks(), AgentPresence()
    marks.worked_on("p1", "claude", None)
    message = _room_message(marks)
    copied = presence.copied("dir/a.ipynb", message)
    (state,) = _panel(copied)
    assert state["user"]["name"] == "claude"
    assert (state["current"], state["documents"]) == ("notebook:dir/a.ipynb", ["dir/a.ipynb"])
    assert presence.copied("dir/a.ipynb", message) is None, "heard on a second websocket"
    assert _panel(presence.known()) == [state], "for a browser that joins later"


def test_a_removal_and_a_closed_notebook_remove_the_state() -> None:
    marks, presence = AgentMarks(), AgentPresence()
    marks.worked_on("p1", "claude", None)
    first = presence.copied("a.ipynb", _room_message(marks))
    marks.keep({})
    removed = presence.copied("a.ipynb", _room_message(marks))
    assert _panel(first, removed) == []
    marks.worked_on("p2", "other", None)
    again = presence.copied("a.ipynb", _room_message(marks))
    assert presence.forget("b.ipynb") is None
    assert _panel(again, presence.forget("a.ipynb")) == []
    assert presence.known() is None


def test_messages_that_are_not_agent_awareness_are_not_copied() -> None:
    presence = AgentPresence()
    person = Awareness(Doc())
    person.set_local_state({"user": {"name": "ada"}})
    update = person.encode_awareness_update([person.client_id])
    assert presence.copied("a.ipynb", create_awareness_message(update)) is None
    assert presence.copied("a.ipynb", b"\x00\x00\x01\x00") is None
    assert presence.copied("a.ipynb", b"\x01\x05\xff") is None
