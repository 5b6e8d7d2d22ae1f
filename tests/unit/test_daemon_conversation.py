"""One request and its answer, as both clients of the daemon speak them: the session
child's DaemonLink and the blocking DaemonClient share protocol/daemon/conversation.py."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pytest

from nbstage.actors.session.daemon_link import DaemonFailure, reply_in
from nbstage.entrypoints.control.daemon_client import DaemonClient, DaemonError
from nbstage.protocol.common.errors import ErrorCode
from nbstage.protocol.daemon.conversation import answer_in, is_answer, request_frame
from nbstage.protocol.daemon.frames import HEADER_BYTES, decode_body, encode_frame, recv_body
from nbstage.protocol.daemon.replies import (
    DaemonIdentity,
    NotebookSaved,
    RoomEvicted,
)
from nbstage.protocol.daemon.requests import (
    EvictRoom,
    GetCells,
    GetStatus,
    ManageDependencies,
    SaveNotebook,
    decode_request,
)

REQUESTS = [
    GetStatus(),
    EvictRoom("nb-1"),
    SaveNotebook("nb-1", path="/tmp/x.ipynb", key="k"),
    GetCells("nb-1", start=2, count=3),
    ManageDependencies("nb-1", add=["numpy"]),
]
SAVED = {"notebook_id": "nb-1", "path": "/w/a.ipynb"}
REFUSED = {"code": "not_found", "message": "no such room"}


def frame(kind: str, request_id: int = 4, **fields: Any) -> dict[str, Any]:
    return {"v": 1, "id": request_id, "type": kind, **fields}


@pytest.mark.parametrize("request_", REQUESTS, ids=lambda r: type(r).__name__)
def test_the_daemon_reads_a_request_frame_back_as_the_request_sent(request_: object) -> None:
    body = orjson.loads(request_frame(7, request_)[HEADER_BYTES:])
    assert body["id"] == 7
    assert decode_request(body) == request_


@pytest.mark.parametrize(
    ("answer", "request_id", "ends"),
    [
        (frame("result", result={}), 4, True),
        (frame("error", error=REFUSED), 4, True),
        (frame("progress", message="building"), 4, False),
        (frame("result", result={}), 5, False),
        (frame("event", event={}), 4, False),
    ],
)
def test_only_a_result_or_error_of_the_same_id_ends_a_request(
    answer: dict[str, Any], request_id: int, ends: bool
) -> None:
    assert is_answer(answer, request_id) is ends


@pytest.mark.parametrize(
    ("answer", "code"),
    [
        (frame("error", error=REFUSED), ErrorCode.NOT_FOUND),
        (frame("result", result={"notebook_id": "nb-1"}), ErrorCode.BAD_REPLY),
        (frame("error", error={"code": "made_up", "message": "?"}), ErrorCode.BAD_REPLY),
        (frame("progress", message="still going"), ErrorCode.BAD_REPLY),
    ],
)
def test_both_clients_fail_alike_on_a_refusal_or_a_malformed_answer(
    answer: dict[str, Any], code: ErrorCode
) -> None:
    with pytest.raises(DaemonError) as raised:
        answer_in(answer, NotebookSaved, DaemonError)
    assert raised.value.code is code
    failure = reply_in(answer, NotebookSaved)
    assert isinstance(failure, DaemonFailure)
    assert (failure.code, failure.message) == (code, raised.value.message)


def test_both_clients_read_a_result_as_the_same_reply() -> None:
    answer = frame("result", result=SAVED)
    assert answer_in(answer, NotebookSaved, DaemonError) == reply_in(answer, NotebookSaved)
    assert reply_in(answer, NotebookSaved) == NotebookSaved("nb-1", "/w/a.ipynb")


@dataclass
class FakeDaemon:
    """A socket that answers each request with a progress line, an event, then the next
    reply queued in ``replies``; what it was sent goes to ``received``."""

    server: socket.socket
    path: Path
    replies: list[dict[str, Any]] = field(default_factory=list)
    received: list[dict[str, Any]] = field(default_factory=list)

    def serve(self) -> None:
        conn, _ = self.server.accept()
        with conn:
            for reply in self.replies:
                asked = decode_body(recv_body(conn))
                self.received.append(asked)
                rid = asked["id"]
                conn.sendall(encode_frame(frame("progress", rid, message="working")))
                conn.sendall(encode_frame(frame("event", rid, event={})))
                conn.sendall(encode_frame({**frame(reply["type"], rid), **reply}))


@pytest.fixture
def fake_daemon(tmp_path: Path) -> Iterator[FakeDaemon]:
    tmp_path.chmod(0o700)
    path = tmp_path / "daemon.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind(str(path))
        server.listen(1)
        yield FakeDaemon(server, path)


def test_the_blocking_client_sends_typed_requests_and_returns_typed_replies(
    fake_daemon: FakeDaemon,
) -> None:
    fake_daemon.replies += [
        {"type": "result", "result": {"evicted": "nb-1", "saved": True}},
        {"type": "error", "error": REFUSED},
    ]
    server = threading.Thread(target=fake_daemon.serve)
    server.start()
    try:
        with DaemonClient(fake_daemon.path, timeout=5) as client:
            assert client.call(EvictRoom("nb-1"), RoomEvicted) == RoomEvicted("nb-1", True)
            with pytest.raises(DaemonError) as refused:
                client.call(SaveNotebook("nb-2"), NotebookSaved)
    finally:
        server.join(5)
    assert refused.value.code is ErrorCode.NOT_FOUND
    sent = [decode_request(asked) for asked in fake_daemon.received]
    assert sent == [EvictRoom("nb-1"), SaveNotebook("nb-2")]


def test_the_blocking_client_takes_the_reply_type_or_a_base_of_it_and_nothing_else(
    fake_daemon: FakeDaemon,
) -> None:
    identity = {"pid": 9, "started_at": 1.5, "version": "1.0", "incarnation": [9, 1.5]}
    fake_daemon.replies.append({"type": "result", "result": identity})
    server = threading.Thread(target=fake_daemon.serve)
    server.start()
    try:
        with DaemonClient(fake_daemon.path, timeout=5) as client:
            with pytest.raises(TypeError):
                client.call(GetStatus(), RoomEvicted)
            assert client.call(GetStatus(), DaemonIdentity) == DaemonIdentity(
                9, 1.5, "1.0", (9, 1.5)
            )
    finally:
        server.join(5)
    assert len(fake_daemon.received) == 1, "the refused call sent nothing"
