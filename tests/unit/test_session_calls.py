"""The session tools against the session model, as tables: the event each call asks for
(session_calls.session_event), the join request and its outcome, and what the call
answers once the model has decided."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from nbstage.actors.session.daemon_link import DaemonFailure
from nbstage.actors.session.session_calls import (
    already_connected,
    connected_answer,
    join_outcome,
    join_request,
    session_answer,
    session_event,
    target_of,
)
from nbstage.actors.session.session_events import (
    ConnectRequested,
    DisconnectRequested,
    JoinFailed,
)
from nbstage.actors.session.session_model import Target
from nbstage.protocol.common.errors import ErrorCode
from nbstage.protocol.daemon.requests import AttachNotebook, CreateNotebook, OpenNotebook
from nbstage.protocol.mcp.tool_names import ToolName
from nbstage.protocol.mcp.tools import ConnectArgs, CreateArgs, DisconnectArgs
from nbstage.protocol.session.supervision import TargetChange

CWD = "/work/project"


@pytest.mark.parametrize(
    ("name", "args", "expected"),
    [
        (
            ToolName.CONNECT_NOTEBOOK,
            ConnectArgs(path="a.ipynb"),
            ConnectRequested("c1", Target(path="/work/project/a.ipynb")),
        ),
        (
            ToolName.CONNECT_NOTEBOOK,
            ConnectArgs(notebook_id="n-1"),
            ConnectRequested("c1", Target(notebook_id="n-1")),
        ),
        (ToolName.CONNECT_NOTEBOOK, ConnectArgs(), "Give exactly one of path and notebook_id."),
        (
            ToolName.CONNECT_NOTEBOOK,
            ConnectArgs(path="a.ipynb", notebook_id="n-1"),
            "Give exactly one of path and notebook_id.",
        ),
        (
            ToolName.CREATE_NOTEBOOK,
            CreateArgs(runtime="python3", working_dir="sub", ephemeral=False),
            ConnectRequested(
                "c1",
                Target(
                    create={
                        "runtime": "python3",
                        "ephemeral": False,
                        "key": "k1",
                        "working_dir": "/work/project/sub",
                    }
                ),
            ),
        ),
        (
            ToolName.DISCONNECT_NOTEBOOK,
            DisconnectArgs(notebook_id="n-2"),
            DisconnectRequested("c1", "n-2"),
        ),
        (ToolName.GET_ALL_CELLS, None, None),
    ],
)
def test_the_event_a_session_call_asks_for(name: ToolName, args: Any, expected: object) -> None:
    assert session_event(name, "c1", "k1", args, CWD) == expected


@pytest.mark.parametrize(
    ("value", "target"),
    [
        ("notes/a.ipynb", Target(path="/work/project/notes/a.ipynb")),
        ("/abs/b.ipynb", Target(path="/abs/b.ipynb")),
        ("0b6c2a4e-uuid", Target(notebook_id="0b6c2a4e-uuid")),
    ],
)
def test_a_restart_target_is_a_path_or_a_notebook_id(value: str, target: Target) -> None:
    assert target_of(value, CWD) == target


JOINED = {
    "notebook_id": "n-1",
    "path": "/work/project/a.ipynb",
    "cell_count": 3,
    "kernel_status": "idle",
    "runtime": "python3",
    "kernel_refused": None,
    "ephemeral": False,
    "environment": None,
}


def test_create_answers_the_runtime_it_was_asked_for_and_joins_without_a_path() -> None:
    result = {"notebook_id": "n-9", "ephemeral": True, "runtime": "python3"}
    answer = session_answer(ToolName.CREATE_NOTEBOOK, result, "python")
    assert answer is not None
    assert answer.result["structuredContent"]["runtime"] == "python"
    assert (answer.change, answer.notebook_id, answer.path) == (TargetChange.JOINED, "n-9", None)
    kept = session_answer(ToolName.CREATE_NOTEBOOK, result, None)
    assert kept is not None
    assert kept.result["structuredContent"]["runtime"] == "python3"


def test_disconnect_leaves_the_restart_target() -> None:
    answer = session_answer(ToolName.DISCONNECT_NOTEBOOK, {"disconnected": "n-1"}, None)
    assert answer is not None
    assert (answer.change, answer.notebook_id) == (TargetChange.LEFT, "n-1")
    assert answer.result["content"][0]["text"] == "Disconnected from n-1."


def test_connect_answers_with_the_room_facts_or_asks_the_room_when_already_connected() -> None:
    answer = session_answer(ToolName.CONNECT_NOTEBOOK, JOINED, None)
    assert answer is not None
    assert (answer.change, answer.path) == (TargetChange.JOINED, JOINED["path"])
    assert answer.result["content"][0]["text"].startswith("Connected to /work/project/a.ipynb")
    already = {**JOINED, "cell_count": None}
    assert session_answer(ToolName.CONNECT_NOTEBOOK, already, None) is None


def test_a_refused_kernel_is_named_instead_of_its_status() -> None:
    refused = {**JOINED, "kernel_refused": "No kernelspec named r."}
    text = connected_answer(refused, "Connected to").result["content"][0]["text"]
    assert text.endswith("(3 cells, no kernel). No kernelspec named r.")


@pytest.mark.parametrize(
    ("target", "asked"),
    [
        (Target(path="/p/a.ipynb"), OpenNotebook("/p/a.ipynb", "agent")),
        (Target(notebook_id="n-1"), AttachNotebook("n-1", "agent")),
        (
            Target(
                create={"runtime": "python", "ephemeral": True, "key": "k", "working_dir": "/p"}
            ),
            CreateNotebook(
                runtime="python", ephemeral=True, key="k", working_dir="/p", peer_label="agent"
            ),
        ),
    ],
)
def test_a_join_is_the_daemon_request_its_target_names(target: Target, asked: object) -> None:
    assert join_request(target, "agent") == asked


@pytest.mark.parametrize(
    ("code", "unavailable"),
    [
        (ErrorCode.NOTEBOOK_UNAVAILABLE, True),
        (ErrorCode.NOT_FOUND, True),
        (ErrorCode.DAEMON_UNREACHABLE, False),
    ],
)
def test_a_failed_join_says_whether_the_notebook_is_gone(
    code: ErrorCode, unavailable: bool
) -> None:
    outcome = join_outcome(4, DaemonFailure(code, "no"), (1, 2.0))
    assert outcome == JoinFailed(4, "no", unavailable)


def test_already_connected_answers_with_the_rooms_facts() -> None:
    room = SimpleNamespace(
        cell_count=5, kernel_status="busy", runtime="python3", kernel_refused=None
    )
    answer = already_connected({**JOINED, "cell_count": None}, room)
    text = answer.result["content"][0]["text"]
    assert text.startswith(
        "Already connected to /work/project/a.ipynb (5 cells, kernel python3 busy"
    )
