"""Issue 13 §3: bounded replies, watcher descriptions and paths.

- a reply over the frame limit becomes a small ``result_too_large`` error, never a
  dropped frame or a closed connection (``Connection.send``, ``ClientServer.answer``);
- ``get_all_cells`` through MCP pages by itself when the daemon says so;
- a watcher's description is bounded in depth and size as it arrives;
- a path with a NUL byte or over PATH_MAX is a ``bad_request`` at decode time.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from nbstage.entrypoints.daemon.connection import Connection, too_large_frame
from nbstage.protocol.common.errors import ErrorCode, NbstageError
from nbstage.protocol.common.labels import MAX_LABEL_CHARS, fitted_label, label_problem
from nbstage.protocol.common.paths import PATH_MAX, path_problem
from nbstage.protocol.daemon.frames import (
    HEADER_BYTES,
    MAX_FRAME_BYTES,
    FrameTooLarge,
    decode_body,
    encode_frame,
    encode_result_frame,
)
from nbstage.protocol.daemon.requests import decode_request
from nbstage.protocol.mcp.tools import TOOLS_BY_NAME
from nbstage.protocol.session.watching import (
    CLIENT_MAX_BYTES,
    CLIENT_MAX_DEPTH,
    CLIENT_MAX_TEXT,
    TOO_DEEP,
    bounded_client,
)
from tests.unit.actor_harness import ActorBench
from tests.unit.test_session_races import I1, SessionChild, notebook

# --- paths ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "problem"),
    [
        ("/w/a.ipynb", None),
        ("a.ipynb", None),
        ("/w/a\0.ipynb", "NUL"),
        ("\0", "NUL"),
        ("/" + "a" * (PATH_MAX - 2), None),
        ("/" + "a" * (PATH_MAX - 1), "PATH_MAX"),
        ("/" + "é" * PATH_MAX, "PATH_MAX"),
    ],
)
def test_which_paths_can_name_a_file(path: str, problem: str | None):
    found = path_problem(path)
    assert (found is None) if problem is None else (problem in found)


BAD_PATHS = ["/tmp/a\0b.ipynb", "/" + "x" * PATH_MAX + ".ipynb"]


@pytest.mark.parametrize("bad", BAD_PATHS)
@pytest.mark.parametrize(
    ("kind", "fields"),
    [
        ("open", {}),
        ("save", {"notebook_id": "N"}),
        ("create", {}),
    ],
)
def test_every_request_that_carries_a_path_refuses_a_bad_one_as_it_is_decoded(
    bad: str, kind: str, fields: dict[str, Any]
):
    name = "working_dir" if kind == "create" else "path"
    frame = {"v": 1, "id": 1, "type": kind, **fields, name: bad}
    with pytest.raises(NbstageError) as caught:
        decode_request(frame)
    assert caught.value.code is ErrorCode.BAD_REQUEST
    assert f"'{name}' is not a usable path" in caught.value.message


@pytest.mark.parametrize("bad", BAD_PATHS)
@pytest.mark.parametrize(
    ("tool", "name"),
    [("connect_notebook", "path"), ("save_notebook", "path"), ("create_notebook", "working_dir")],
)
def test_every_tool_that_takes_a_path_refuses_a_bad_one(bad: str, tool: str, name: str):
    with pytest.raises(NbstageError) as caught:
        TOOLS_BY_NAME[tool].parse({name: bad})
    assert caught.value.code is ErrorCode.BAD_REQUEST


LABEL_REQUESTS = [
    ("open", {"path": "/a.ipynb"}),
    ("create", {}),
    ("attach", {"notebook_id": "N"}),
]


@pytest.mark.parametrize(("kind", "fields"), LABEL_REQUESTS)
@pytest.mark.parametrize(
    ("label", "phrase"),
    [
        ("x" * (MAX_LABEL_CHARS + 1), "257 characters long, over the limit of 256"),
        ("x" * 20_000_000, "20,000,000 characters long"),
        ("agent\x1b]0;owned\x07", "control character \\x1b"),
        ("agent\n", "control character \\x0a"),
        ("agent\x9b", "control character \\x9b"),
    ],
)
def test_a_peer_label_too_long_or_with_controls_is_refused_as_it_is_decoded(
    kind: str, fields: dict[str, Any], label: str, phrase: str
):
    frame = {"v": 1, "id": 1, "type": kind, **fields, "peer_label": label}
    with pytest.raises(NbstageError) as caught:
        decode_request(frame)
    assert caught.value.code is ErrorCode.BAD_REQUEST
    assert "'peer_label' is not a usable label" in caught.value.message
    assert phrase in caught.value.message


@pytest.mark.parametrize(("kind", "fields"), LABEL_REQUESTS)
def test_a_label_at_the_limit_passes(kind: str, fields: dict[str, Any]):
    label = "é" * MAX_LABEL_CHARS
    assert decode_request({"v": 1, "id": 1, "type": kind, **fields, "peer_label": label})


@pytest.mark.parametrize(
    ("name", "fitted"),
    [
        ("claude-code", "claude-code"),
        ("a\x1b[2Jb\tc", "a [2Jb c"),
        ("y" * 1000, "y" * MAX_LABEL_CHARS),
    ],
)
def test_an_mcp_client_name_is_fitted_to_a_label_the_daemon_takes(name: str, fitted: str):
    assert fitted_label(name) == fitted
    assert label_problem(fitted_label(name)) is None


def test_save_carries_overwrite_after_its_key():
    request = decode_request({"v": 1, "id": 1, "type": "save", "notebook_id": "N"})
    assert (request.key, request.overwrite) == (None, False)
    request = decode_request(
        {"v": 1, "id": 1, "type": "save", "notebook_id": "N", "path": "/a.ipynb", "overwrite": True}
    )
    assert request.overwrite is True


# --- replies over the frame limit -------------------------------------------------------

HUGE = "x" * (MAX_FRAME_BYTES + 10)


def read(frame: bytes) -> dict[str, Any]:
    assert len(frame) - HEADER_BYTES <= MAX_FRAME_BYTES
    return decode_body(frame[HEADER_BYTES:], null_id_ok=True)


def test_an_oversized_frame_says_how_large_it_was():
    with pytest.raises(FrameTooLarge) as caught:
        encode_frame({"v": 1, "id": 1, "type": "result", "result": HUGE})
    assert caught.value.size > MAX_FRAME_BYTES
    with pytest.raises(FrameTooLarge):
        encode_result_frame(1, orjson.dumps(HUGE))


def test_the_too_large_error_is_small_and_keeps_the_request_id():
    frame = read(too_large_frame(7, 18 * 1024 * 1024))
    assert frame["id"] == 7
    assert frame["type"] == "error"
    assert frame["error"]["code"] == "result_too_large"
    assert "start and count" in frame["error"]["message"]
    assert "18,874,368 bytes" in frame["error"]["message"]


def test_a_request_id_too_large_to_echo_gets_the_error_with_a_null_id():
    frame = read(too_large_frame(HUGE, 20 * 1024 * 1024))
    assert (frame["id"], frame["error"]["code"]) == (None, "result_too_large")


class Writer:
    """A stream writer whose client never reads: everything written stays buffered."""

    def __init__(self) -> None:
        self.written: list[bytes] = []
        self.aborted = False
        self.transport = self

    def is_closing(self) -> bool:
        return self.aborted

    def write(self, data: bytes) -> None:
        self.written.append(data)

    def get_write_buffer_size(self) -> int:
        return sum(map(len, self.written))

    def abort(self) -> None:
        self.aborted = True


def test_an_oversized_error_echo_becomes_result_too_large_on_the_same_connection():
    writer = Writer()
    conn = Connection(1, writer, MAX_FRAME_BYTES * 2)
    conn.send({"id": 3, "type": "error", "error": {"code": "bad_request", "message": HUGE}})
    conn.send({"id": 4, "type": "result", "result": {}})
    first, second = map(read, writer.written)
    assert (first["id"], first["error"]["code"]) == (3, "result_too_large")
    assert (second["id"], second["type"]) == (4, "result")


def test_a_connection_that_does_not_read_is_dropped_past_its_limit(
    caplog: pytest.LogCaptureFixture,
) -> None:
    writer = Writer()
    conn = Connection(5, writer, 1000, client={"label": "watcher"})
    event = {"id": 1, "type": "event", "event": {"kind": "peer_joined", "label": "x" * 200}}
    while not writer.aborted:
        conn.send(event)
        assert writer.get_write_buffer_size() < 1000 + 400, "dropped at the first frame past it"
    sent = len(writer.written)
    conn.send(event)
    assert len(writer.written) == sent, "nothing is written to a dropped connection"
    assert "dropped connection 5 (watcher)" in caplog.text
    assert "over the limit of 1000 (max_unsent_bytes)" in caplog.text


# --- watcher descriptions ---------------------------------------------------------------


def nested(levels: int) -> dict[str, Any]:
    value: dict[str, Any] = {"leaf": True}
    for _ in range(levels):
        value = {"inner": value}
    return value


def depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max((depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((depth(v) for v in value), default=0)
    return 0


@pytest.mark.parametrize(
    ("client", "expected"),
    [
        (None, None),
        (
            {"label": "a", "pids": [1, 2], "notebooks": []},
            {"label": "a", "pids": [1, 2], "notebooks": []},
        ),
        ({"label": "x" * 5000}, {"label": "x" * CLIENT_MAX_TEXT}),
        ({"k" * 5000: 1}, {"k" * CLIENT_MAX_TEXT: 1}),
        ({"pids": list(range(1000))}, {"pids": list(range(200))}),
    ],
)
def test_a_watcher_description_is_kept_within_bounds(client, expected):
    assert bounded_client(client) == expected


def test_a_300_level_description_is_cut_to_the_depth_limit():
    kept = bounded_client({"label": "deep", "extra": nested(300)})
    assert depth(kept) == CLIENT_MAX_DEPTH
    assert kept["label"] == "deep"
    assert TOO_DEEP in orjson.dumps(kept).decode()
    orjson.dumps({"clients": [kept] * 10})


def test_a_description_too_large_in_all_keeps_its_label_alone():
    wide = {"label": "wide", **{f"k{i}": "v" * CLIENT_MAX_TEXT for i in range(150)}}
    kept = bounded_client(wide)
    assert kept["label"] == "wide"
    assert set(kept) == {"label", "dropped"}
    assert len(orjson.dumps(kept)) < CLIENT_MAX_BYTES


# --- get_all_cells pages by itself through MCP ------------------------------------------


@pytest.fixture
def child(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[SessionChild]:
    monkeypatch.setenv("NBSTAGE_HEARTBEAT_SECS", "3600")
    child = SessionChild(ActorBench())
    child.start(tmp_path)
    child.daemon_up(I1)
    yield child
    child.bench.close()


def summary_row(index: int) -> dict[str, Any]:
    return {
        "cell_id": f"c{index}",
        "index": index,
        "cell_type": "code",
        "source_preview": "",
        "execution_count": None,
        "output_count": 0,
    }


def cell(index: int) -> dict[str, Any]:
    return {
        "id": f"c{index}",
        "cell_type": "code",
        "source": f"x = {index}",
        "metadata": {},
        "execution_count": None,
    }


def test_get_all_cells_pages_when_the_daemon_says_the_reply_is_too_large(
    child: SessionChild, tmp_path: Path
):
    child.connect("c1", notebook(tmp_path, "N"), "n1")
    child.call("g1", "get_all_cells", format="json", start=1)
    first = child.daemon.only("get_cells")
    assert (first["format"], first["start"], first["count"]) == ("json", 1, None)
    child.daemon.refuse(first, "result_too_large", "too large")
    summary = child.daemon.only("get_cells")
    assert summary["format"] == "summary"
    child.daemon.answer(summary, {"cells": [summary_row(i) for i in range(1, 5)], "total": 5})
    asked = []
    while not child.finished("g1"):
        page = child.daemon.only("get_cells")
        asked.append((page["start"], page["count"]))
        if page["count"] > 1 and page["start"] == 1:
            child.daemon.refuse(page, "result_too_large", "too large")
            continue
        rows = [cell(i) for i in range(page["start"], page["start"] + page["count"])]
        child.daemon.answer(page, {"cells": rows, "total": 5})
    assert asked == [(1, 2), (1, 1), (2, 1), (3, 1), (4, 1)]
    result = child.result("g1")
    assert not result.get("isError")
    assert [c["id"] for c in result["structuredContent"]["cells"]] == ["c1", "c2", "c3", "c4"]
    assert result["structuredContent"]["total"] == 5


def test_get_all_cells_names_a_single_cell_too_large_to_send(child: SessionChild, tmp_path: Path):
    child.connect("c1", notebook(tmp_path, "N"), "n1")
    child.call("g1", "get_all_cells", format="rich")
    child.daemon.refuse(child.daemon.only("get_cells"), "result_too_large", "too large")
    child.daemon.answer(child.daemon.only("get_cells"), {"cells": [summary_row(0)], "total": 1})
    child.daemon.refuse(child.daemon.only("get_cells"), "result_too_large", "too large")
    result = child.result("g1")
    assert result["isError"]
    assert result["structuredContent"]["code"] == "result_too_large"
    assert "Cell 0 alone" in result["content"][0]["text"]


def test_a_tool_call_too_large_for_one_frame_is_answered_not_left_waiting(
    child: SessionChild, tmp_path: Path
):
    child.connect("c1", notebook(tmp_path, "N"), "n1")
    child.call("x1", "create_cell", source="z" * (MAX_FRAME_BYTES + 1))
    result = child.result("x1")
    assert result["isError"]
    assert result["structuredContent"]["code"] == "bad_request"
    assert "was not sent" in result["content"][0]["text"]
    assert child.daemon.unanswered("create_cell") == []
