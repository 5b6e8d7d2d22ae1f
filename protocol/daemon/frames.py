"""The daemon's wire format: a 4-byte big-endian length, then one orjson object.

Every frame is an object carrying ``v`` (the wire version), ``type`` and ``id``.
Nothing else is accepted and nothing is ever unpickled. A client sends requests (their
``type`` is a request's wire name); the daemon answers each with one ``result`` or
``error`` frame of the same ``id``, which a ``progress`` frame (``message``: a line about
the work under way) may precede, and sends ``event`` and heartbeat frames to watchers.
"""

from __future__ import annotations

import asyncio
import socket
import struct
from enum import StrEnum
from typing import Any

import orjson

from nbstage.protocol.daemon.notices import Notice

WIRE_VERSION = 1
MAX_FRAME_BYTES = 16 * 1024 * 1024
_HEADER = struct.Struct(">I")
HEADER_BYTES = _HEADER.size


class FrameKind(StrEnum):
    """The ``type`` of a frame the daemon sends; a client's frames carry a request's wire
    name there instead (``requests.py``)."""

    RESULT = "result"
    ERROR = "error"
    PROGRESS = "progress"
    HEARTBEAT = "heartbeat"
    EVENT = "event"
    LAB = "lab"
    """Y messages for one person watching a room (protocol/lab.py)."""


class FrameError(Exception):
    """The peer sent something that is not a valid frame; the connection must close."""


class FrameTooLarge(FrameError):
    """A frame to send would exceed the limit; nothing was sent."""

    def __init__(self, size: int) -> None:
        super().__init__(f"frame of {size} bytes exceeds the {MAX_FRAME_BYTES}-byte limit")
        self.size = size


def encode_frame(payload: dict[str, Any]) -> bytes:
    body = orjson.dumps(payload)
    if len(body) > MAX_FRAME_BYTES:
        raise FrameTooLarge(len(body))
    return _HEADER.pack(len(body)) + body


def encode_result_frame(
    request_id: int | str, result_json: bytes, notices: tuple[Notice, ...] = ()
) -> bytes:
    """A result frame around an already encoded result, without decoding it again."""
    body = b"".join(
        (
            b'{"v":1,"id":',
            orjson.dumps(request_id),
            b',"type":"result","result":',
            result_json,
            b',"notices":' + orjson.dumps([n.to_json() for n in notices]) if notices else b"",
            b"}",
        )
    )
    if len(body) > MAX_FRAME_BYTES:
        raise FrameTooLarge(len(body))
    return _HEADER.pack(len(body)) + body


def json_object(body: bytes, what: str) -> dict[str, Any]:
    """``body`` as a JSON object; FrameError, naming ``what`` was read, if it is not one.
    Both frame formats (this one and protocol/session/session_frames.py) start here."""
    try:
        payload = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise FrameError(f"{what} is not valid JSON: {exc}") from None
    if not isinstance(payload, dict):
        raise FrameError(f"{what} must be a JSON object")
    return payload


def decode_body(body: bytes, null_id_ok: bool = False) -> dict[str, Any]:
    """Parse a frame body and check its envelope (``v``, ``type``, ``id``).

    A daemon answers a frame it could not read with an error whose id is null;
    clients read those with ``null_id_ok``.
    """
    payload = json_object(body, "frame")
    version = payload.get("v")
    if type(version) is not int or version != WIRE_VERSION:
        raise FrameError(f"frame must carry v={WIRE_VERSION}")
    if not isinstance(payload.get("type"), str):
        raise FrameError("frame must carry a string 'type'")
    frame_id = payload.get("id")
    if frame_id is None and null_id_ok:
        return payload
    if isinstance(frame_id, bool) or not isinstance(frame_id, int | str):
        raise FrameError("frame must carry an 'id' that is an integer or a string")
    return payload


def decode_daemon_frame(body: bytes) -> dict[str, Any]:
    """A frame from the daemon, as a client reads it: its ``type`` becomes a FrameKind, and
    one of no kind the daemon sends is refused like any malformed frame."""
    payload = decode_body(body, null_id_ok=True)
    try:
        payload["type"] = FrameKind(payload["type"])
    except ValueError:
        raise FrameError(f"the daemon sends no {payload['type']!r} frame") from None
    return payload


def _check_length(header: bytes, limit: int = MAX_FRAME_BYTES) -> int:
    length: int = _HEADER.unpack(header)[0]
    if length > limit:
        raise FrameError(f"frame length {length} exceeds the {limit}-byte limit")
    return length


async def read_body(reader: asyncio.StreamReader, limit: int = MAX_FRAME_BYTES) -> bytes | None:
    """Read one frame's body, still encoded; None at a clean end of stream between frames."""
    try:
        header = await reader.readexactly(_HEADER.size)
    except asyncio.IncompleteReadError as exc:
        if exc.partial:
            raise FrameError("connection closed inside a frame header") from None
        return None
    length = _check_length(header, limit)
    try:
        return await reader.readexactly(length)
    except asyncio.IncompleteReadError:
        raise FrameError("connection closed inside a frame body") from None


async def read_frame(reader: asyncio.StreamReader) -> dict[str, Any] | None:
    """Read one frame; None at a clean end of stream between frames."""
    body = await read_body(reader)
    return None if body is None else decode_body(body)


def _recv_exactly(sock: socket.socket, size: int) -> bytes:
    chunks = bytearray()
    while len(chunks) < size:
        chunk = sock.recv(size - len(chunks))
        if not chunk:
            raise ConnectionError("daemon closed the connection")
        chunks += chunk
    return bytes(chunks)


def recv_body(sock: socket.socket) -> bytes:
    """Blocking read of one frame's body, still encoded."""
    length = _check_length(_recv_exactly(sock, _HEADER.size))
    return _recv_exactly(sock, length)


def recv_frame(sock: socket.socket) -> dict[str, Any]:
    """Blocking read of one frame from the daemon (used by clients)."""
    return decode_daemon_frame(recv_body(sock))
