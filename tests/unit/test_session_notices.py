"""Notices the daemon's answers carry for the agent ("notices" in a result or error frame)
reach the top of the tool result, once each, in its text and its structured part
(actors/session/session_manager.py)."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from nbstage.actors.daemon.environment.dependencies import approval_line
from nbstage.actors.session.daemon_link import DaemonFrameArrived
from nbstage.protocol.daemon.frames import WIRE_VERSION, decode_body, encode_result_frame
from nbstage.protocol.daemon.notices import Notice, NoticeKind
from tests.images import png_bytes
from tests.unit.actor_harness import ActorBench, DaemonRequest
from tests.unit.test_session_races import I1, SessionChild, notebook, room, texts

MERGED_NOTICE = Notice(
    NoticeKind.CHANGED_ON_DISK,
    "/w/N.ipynb changed on disk: 1 cell updated, 0 added, 0 conflicts",
    "get_all_cells()",
)
PAUSED_NOTICE = Notice(NoticeKind.AUTOSAVE_PAUSED, "Autosave is paused and the file is left ...")
MERGED, PAUSED = MERGED_NOTICE.line(), PAUSED_NOTICE.line()
MERGED_WIRE, PAUSED_WIRE = MERGED_NOTICE.to_json(), PAUSED_NOTICE.to_json()


@pytest.fixture(autouse=True)
def _no_lag_checks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NBSTAGE_HEARTBEAT_SECS", "3600")


@pytest.fixture
def child(tmp_path: Path) -> Iterator[SessionChild]:
    bench = ActorBench()
    child = SessionChild(bench)
    child.start(tmp_path)
    child.daemon_up(I1)
    child.connect("c0", notebook(tmp_path, "N"), "n1")
    yield child
    bench.close()


def deliver(child: SessionChild, request: DaemonRequest, payload: dict) -> None:
    body = orjson.dumps({"v": WIRE_VERSION, "id": request.request_id, **payload})
    child.daemon.answered.add((request.link, request.request_id))
    child.bench.send(request.owner, DaemonFrameArrived(request.link, body))


SUMMARY = {"cells": [], "total": 0}


def test_the_notices_of_an_answer_come_first_in_the_tool_result(child) -> None:
    child.call("g1", "get_all_cells")
    request = child.daemon.only("get_cells")
    deliver(child, request, {"type": "result", "result": SUMMARY, "notices": [MERGED_WIRE]})
    result = child.result("g1")
    assert texts(result)[0] == MERGED
    assert result["structuredContent"] == {"cells": [], "total": 0, "notices": [MERGED_WIRE]}
    child.call("g2", "get_all_cells")
    child.daemon.answer(child.daemon.only("get_cells"), SUMMARY)
    assert MERGED not in texts(child.result("g2"))


def test_a_line_several_answers_of_one_call_carry_is_shown_once(child) -> None:
    child.call("s1", "set_cell", cell_id="c1", source="x", and_run=True)
    deliver(
        child,
        child.daemon.only("set_cell"),
        {"type": "result", "result": {"cell_id": "c1"}, "notices": [PAUSED_WIRE]},
    )
    execution = {
        "execution_id": "e1",
        "cell_id": "c1",
        "status": "done",
        "execution_count": 1,
        "outputs": [],
    }
    deliver(
        child,
        child.daemon.only("execute"),
        {
            "type": "result",
            "result": {"execution": execution},
            "notices": [MERGED_WIRE, PAUSED_WIRE],
        },
    )
    result = child.result("s1")
    lines = [t for t in texts(result) if t.startswith("[nbstage]")]
    assert lines == [PAUSED, MERGED]
    assert result["structuredContent"]["notices"] == [PAUSED_WIRE, MERGED_WIRE]


def test_a_refusal_carries_its_notices_too(child) -> None:
    child.call("g1", "get_cell", cell_id="gone")
    refusal = {"code": "cell_not_found", "message": "There is no cell with id 'gone'."}
    deliver(
        child,
        child.daemon.only("get_cell"),
        {"type": "error", "error": refusal, "notices": [MERGED_WIRE]},
    )
    result = child.result("g1")
    assert result["isError"] is True
    assert texts(result) == [MERGED, "There is no cell with id 'gone'. Next: get_all_cells()"]
    assert result["structuredContent"] == {
        "error": "There is no cell with id 'gone'.",
        "code": "cell_not_found",
        "next_call": "get_all_cells()",
        "notices": [MERGED_WIRE],
    }


def test_a_bare_line_from_an_older_daemon_is_a_note(child) -> None:
    child.call("g1", "get_all_cells")
    request = child.daemon.only("get_cells")
    deliver(child, request, {"type": "result", "result": SUMMARY, "notices": [MERGED, 7]})
    result = child.result("g1")
    assert texts(result)[0] == MERGED
    note = {"kind": "note", "message": MERGED_NOTICE.message}
    assert result["structuredContent"]["notices"] == [note]


def test_a_result_frame_carries_notices_only_when_there_are_some() -> None:
    with_notices = decode_body(encode_result_frame(3, b'{"x":1}', (MERGED_NOTICE,))[4:])
    assert with_notices == {
        "v": 1,
        "id": 3,
        "type": "result",
        "result": {"x": 1},
        "notices": [MERGED_WIRE],
    }
    assert "notices" not in decode_body(encode_result_frame(3, b"{}")[4:])


def test_the_notices_of_a_join_reach_the_connect_result(tmp_path: Path) -> None:
    bench = ActorBench()
    try:
        child = SessionChild(bench)
        child.start(tmp_path)
        child.daemon_up(I1)
        nb = notebook(tmp_path, "N")
        child.call("c0", "connect_notebook", path=nb.path)
        approval = approval_line(["six"])
        payload = {"type": "result", "result": room(nb, "n1"), "notices": [approval.to_json()]}
        deliver(child, child.daemon.only("open"), payload)
        connected = child.result("c0")
        assert texts(connected)[0] == approval.line()
        assert connected["structuredContent"]["notices"] == [
            {
                "kind": "approval_needed",
                "message": approval.message,
                "next_call": "manage_dependencies(trust=true)",
            }
        ]
        child.call("g1", "get_all_cells")
        child.daemon.answer(child.daemon.only("get_cells"), SUMMARY)
        assert "notices" not in child.result("g1")["structuredContent"], "once"
    finally:
        bench.close()


def test_an_image_result_goes_out_once_its_figure_file_is_written(child, tmp_path: Path) -> None:
    (tmp_path / "state").mkdir()
    png = base64.b64encode(png_bytes(4, 3)).decode()
    child.call("e1", "execute_cell", cell_id="c1")
    output = {"output_type": "display_data", "data": {"image/png": png}, "metadata": {}}
    execution = {
        "execution_id": "e1",
        "cell_id": "c1",
        "status": "done",
        "execution_count": 1,
        "outputs": [output],
    }
    child.daemon.answer(child.daemon.only("execute"), {"execution": execution})
    result = child.result("e1")
    (image,) = result["structuredContent"]["execution"]["outputs"][0]["images"]
    assert image["attached"] is True
    assert (image["width"], image["height"]) == (4, 3)
    assert Path(image["file"]).parent == tmp_path / "state" / "figures"
    assert Path(image["file"]).read_bytes() == png_bytes(4, 3)
