"""What the SessionManager reports beside its results, and how it reads the daemon's answers.

The supervisor's restart target follows RestartTargetChanged (SPEC §8), which the
SessionManager sends for what the daemon confirmed; nothing re-reads a finished MCP
result. Every daemon answer is decoded once into the reply type its request expects,
so a malformed one becomes a tool error with a code, not a crash inside a handler.
The session child is played as in test_session_races.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from nbstage.protocol.session.supervision import (
    RestartTargetChanged,
    TargetChange,
    ToolCallFinished,
)
from tests.unit.actor_harness import ActorBench
from tests.unit.test_session_races import I1, SessionChild, notebook, texts


@pytest.fixture
def child(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[SessionChild]:
    """A session child on a live daemon, with no watch-loop lag timer in the way."""
    monkeypatch.setenv("NBSTAGE_HEARTBEAT_SECS", "3600")
    child = SessionChild(ActorBench())
    child.start(tmp_path)
    child.daemon_up(I1)
    yield child
    child.bench.close()


def reports(child: SessionChild) -> list[RestartTargetChanged]:
    return child.bench.seen_of(RestartTargetChanged)


def test_a_connect_reports_the_notebook_it_joined_before_its_result(
    child: SessionChild, tmp_path: Path
) -> None:
    n = notebook(tmp_path, "N")
    child.connect("c1", n, "n1")
    assert reports(child) == [RestartTargetChanged(TargetChange.JOINED, "N", n.path)]
    order = [
        m for m in child.bench.seen() if isinstance(m, RestartTargetChanged | ToolCallFinished)
    ]
    assert isinstance(order[0], RestartTargetChanged), "the target moves before the answer"


def test_a_failed_connect_reports_nothing(child: SessionChild) -> None:
    child.call("c1", "connect_notebook", notebook_id="N")
    child.daemon.refuse(child.daemon.only("attach"), "notebook_unavailable", "gone")
    assert child.result("c1")["isError"]
    assert reports(child) == []


def test_a_save_reports_the_new_path_and_moves_the_session_there(
    child: SessionChild, tmp_path: Path
) -> None:
    child.connect("c1", notebook(tmp_path, "N"), "n1")
    saved_to = str(tmp_path / "saved.ipynb")
    child.call("s1", "save_notebook", path="saved.ipynb")
    sent = child.daemon.only("save")
    assert (sent["path"], sent["overwrite"]) == (saved_to, False)
    child.daemon.answer(sent, {"notebook_id": "N", "path": saved_to})
    assert child.result("s1")["structuredContent"] == {
        "notebook_id": "N",
        "path": saved_to,
        "working_dir": str(tmp_path),
    }
    assert reports(child)[-1] == RestartTargetChanged(TargetChange.SAVED, "N", saved_to)
    assert child.active_changes()[-1] == ("N", saved_to)


def test_a_disconnect_reports_the_notebook_it_left(child: SessionChild, tmp_path: Path) -> None:
    child.connect("c1", notebook(tmp_path, "N"), "n1")
    child.call("d1", "disconnect_notebook")
    assert reports(child)[-1] == RestartTargetChanged(TargetChange.LEFT, "N", None)


@pytest.mark.parametrize(
    "answer",
    [
        pytest.param({}, id="an empty answer"),
        pytest.param({"cell": {"cell_id": "c1"}}, id="a cell without its fields"),
        pytest.param(
            {
                "cell": {
                    "cell_id": "c1",
                    "cell_type": "code",
                    "source": 3,
                    "execution_count": None,
                    "outputs": [],
                }
            },
            id="a source that is no string",
        ),
    ],
)
def test_a_malformed_answer_is_a_bad_reply_tool_error(
    child: SessionChild, tmp_path: Path, answer: dict
) -> None:
    child.connect("c1", notebook(tmp_path, "N"), "n1")
    child.call("g1", "get_cell", cell_id="c1")
    child.daemon.answer(child.daemon.only("get_cell"), answer)
    result = child.result("g1")
    assert result["isError"]
    assert result["structuredContent"]["code"] == "bad_reply"
    assert texts(result)[0].startswith("the daemon sent a malformed CellShown:")
