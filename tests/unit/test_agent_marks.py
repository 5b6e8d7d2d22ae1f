"""The agents' awareness states (actors/daemon/room/agent_marks.py): what is sent when,
read back by a pycrdt Awareness as a browser reads them."""

from __future__ import annotations

import pytest
from jupyter_ydoc import YNotebook
from pycrdt import Awareness, Doc

from nbstage.actors.daemon.room.agent_marks import AgentMarks, client_id


@pytest.fixture
def notebook() -> YNotebook:
    notebook = YNotebook(Doc())
    notebook.set(
        {
            "cells": [
                {"cell_type": "code", "id": "c1", "source": "x = 1", "metadata": {}},
                {"cell_type": "code", "id": "c2", "source": "", "metadata": {}},
            ],
            "metadata": {},
            "nbformat": 4,
            "nbformat_minor": 5,
        }
    )
    return notebook


def _read(update: bytes | None) -> dict[int, dict]:
    assert update is not None
    browser = Awareness(Doc())
    browser.apply_awareness_update(update, "room")
    return _others(browser)


def _others(browser: Awareness) -> dict[int, dict]:
    """The states a browser holds of the others (its own, empty, aside)."""
    return {c: s for c, s in browser.states.items() if c != browser.client_id}


def test_a_mark_is_sent_once_then_only_when_it_changes(notebook) -> None:
    marks, room = AgentMarks(), Awareness(notebook.ydoc)
    marks.worked_on("p1", "claude code", "c1")
    (state,) = _read(marks.states(notebook, room)).values()
    assert state["user"]["name"] == "claude code"
    assert state["user"]["initials"] == "CC"
    assert state["nbstage"] == {"cell_id": "c1"}
    assert state["cursors"][0]["head"] == notebook.ycells[0]["source"].sticky_index(0).to_json()
    assert client_id("p1") in room.states, "a person who joins later gets it"
    assert marks.states(notebook, room) is None
    marks.worked_on("p1", "claude code", "c2")
    (state,) = _read(marks.states(notebook, room)).values()
    assert "cursors" not in state, "an empty source has nothing to anchor a cursor to"


@pytest.mark.parametrize(
    ("age", "renew", "sent"),
    [(0.0, True, False), (11.0, False, False), (11.0, True, True)],
)
def test_a_state_is_renewed_when_old_and_a_browser_renews(notebook, age, renew, sent) -> None:
    marks, room = AgentMarks(), Awareness(notebook.ydoc)
    marks.worked_on("p1", "agent", "c1")
    marks.states(notebook, room)
    marks.marks["p1"].sent_at -= age
    assert (marks.states(notebook, room, renew) is not None) is sent


def test_an_agent_that_left_is_removed(notebook) -> None:
    marks, room = AgentMarks(), Awareness(notebook.ydoc)
    marks.worked_on("p1", "agent", "c1")
    marks.worked_on("p2", "other", "c1")
    browser = Awareness(Doc())
    browser.apply_awareness_update(marks.states(notebook, room), "room")
    marks.keep({"p2": "other"})
    browser.apply_awareness_update(marks.states(notebook, room), "room")
    assert [s["user"]["name"] for s in _others(browser).values()] == ["other"]
    assert client_id("p1") not in room.states


@pytest.mark.parametrize(("age", "sent"), [(0.0, False), (11.0, True)])
def test_a_frozen_documents_marks_are_renewed_as_last_sent(notebook, age, sent) -> None:
    """No Y document to compute a cursor against: the state last sent goes again."""
    marks, room = AgentMarks(), Awareness(notebook.ydoc)
    marks.worked_on("p1", "agent", "c1")
    first = _read(marks.states(notebook, room))
    marks.marks["p1"].sent_at -= age
    renewed = marks.renewed(room)
    assert (renewed is not None) is sent
    if renewed is not None:
        assert _read(renewed) == first
        assert room.meta[client_id("p1")]["clock"] == 2


def test_a_frozen_documents_gone_agent_is_ended_without_the_document(notebook) -> None:
    marks, room = AgentMarks(), Awareness(notebook.ydoc)
    marks.worked_on("p1", "agent", "c1")
    browser = Awareness(Doc())
    browser.apply_awareness_update(marks.states(notebook, room), "room")
    marks.keep({})
    browser.apply_awareness_update(marks.renewed(room), "room")
    assert _others(browser) == {}
    assert marks.renewed(room) is None
