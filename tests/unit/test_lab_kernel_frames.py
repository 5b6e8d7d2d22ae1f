"""A stand-in kernel's websocket frames (entrypoints/lab/kernel_frames.py): a reply written
in either protocol reads back whole, and what is not a kernel message is refused with a
reason, never read past its end."""

from __future__ import annotations

import json

import pytest
from jupyter_client.session import Session
from jupyter_server.services.kernels.connection.base import serialize_msg_to_ws_v1

from nbstage.entrypoints.lab.kernel_frames import V1, FrameRefused, read_frame, write_frame

SESSION = Session()


def _request(channel: str | None = "shell") -> dict:
    msg = SESSION.msg("complete_request", {"code": "pri", "cursor_pos": 3})
    return msg if channel is None else {**msg, "channel": channel}


@pytest.mark.parametrize("protocol", [V1, None])
def test_a_message_written_reads_back_with_its_channel(protocol) -> None:
    frame = write_frame(_request("control"), protocol, SESSION)
    assert isinstance(frame, bytes if protocol == V1 else str)
    read = read_frame(frame, protocol, SESSION)
    assert read["channel"] == "control"
    assert read["header"]["msg_type"] == "complete_request"
    assert read["content"] == {"code": "pri", "cursor_pos": 3}


def test_a_legacy_message_with_no_channel_is_on_shell() -> None:
    msg = _request(None)
    assert read_frame(json.dumps(msg, default=str), None, SESSION)["channel"] == "shell"


def _v1(parts: list[bytes], channel: str = "shell") -> bytes:
    return bytes(serialize_msg_to_ws_v1(parts, channel))


def _offsets(*offsets: int) -> bytes:
    return b"".join(n.to_bytes(8, "little") for n in (len(offsets), *offsets))


HEADER = json.dumps({"msg_type": "kernel_info_request", "msg_id": "1"}).encode()
DEEP = b"[" * 100_000 + b"]" * 100_000
"""JSON nested past Python's recursion limit."""


def _v1_raw(channel: bytes, *parts: bytes) -> bytes:
    """A v1 frame whose channel is these bytes as they are."""
    chunks = [channel, *parts]
    offsets, at = [], 8 * (len(chunks) + 2)
    for chunk in chunks:
        offsets.append(at)
        at += len(chunk)
    return _offsets(*offsets, at) + b"".join(chunks)


REFUSED = [
    pytest.param(V1, "{}", "binary", id="v1 text"),
    pytest.param(V1, b"\x01", "count", id="v1 shorter than its count"),
    pytest.param(V1, _offsets(1, 2), "not whole", id="v1 too few offsets"),
    pytest.param(V1, (2**62).to_bytes(8, "little"), "not whole", id="v1 a huge count"),
    pytest.param(V1, _offsets(0, 0, 0, 0, 0, 0)[:30], "not whole", id="v1 a cut table"),
    pytest.param(V1, _offsets(56, 99, 99, 99, 99, 99), "order", id="v1 past its end"),
    pytest.param(V1, _offsets(56, 60, 58, 60, 60, 60) + b"x" * 4, "order", id="v1 backwards"),
    pytest.param(V1, _v1([b"{", b"{}", b"{}", b"{}"]), "not JSON", id="v1 a broken part"),
    pytest.param(V1, _v1([b"[]", b"{}", b"{}", b"{}"]), "header", id="v1 a header not a map"),
    pytest.param(V1, _v1([b"{}", b"{}", b"{}", b"{}"]), "msg_type", id="v1 no msg_type"),
    pytest.param(
        V1, _v1_raw(b"\xff", HEADER, b"{}", b"{}", b"{}"), "UTF-8", id="v1 channel not UTF-8"
    ),
    pytest.param(V1, _v1([HEADER, b"{}", b"{}", DEEP]), "not JSON", id="v1 a part too deep"),
    pytest.param(None, b"\xff", "JSON", id="legacy bytes"),
    pytest.param(None, DEEP, "JSON", id="legacy too deep"),
    pytest.param(None, "[1]", "header", id="legacy a list"),
    pytest.param(None, json.dumps({"header": {"msg_type": 3}}), "msg_type", id="legacy type"),
    pytest.param(
        None, json.dumps({"header": {"msg_type": "x"}, "channel": 3}), "name", id="legacy chan"
    ),
]


@pytest.mark.parametrize(("protocol", "message", "said"), REFUSED)
def test_what_is_not_a_kernel_message_is_refused_with_a_reason(protocol, message, said) -> None:
    with pytest.raises(FrameRefused, match=said):
        read_frame(message, protocol, SESSION)


def test_a_v1_request_with_a_header_is_read() -> None:
    read = read_frame(_v1([HEADER, b"{}", b"{}", b"{}"], "shell"), V1, SESSION)
    assert read["header"]["msg_type"] == "kernel_info_request"
    assert read["content"] == {}
