"""Frames between `nbstage mcp` and its session child, over a socketpair.

A frame is a 4-byte big-endian length, then an orjson object naming the message
(``type``) with its fields. A finished tool result is already JSON, so it travels
as raw bytes after a NUL that ends the object (orjson never writes a raw NUL), and
the edge writes it to stdout without decoding it. Nothing is ever unpickled.
"""

from __future__ import annotations

import asyncio
import struct

import orjson

from nbstage.protocol.common.codec import from_wire, to_wire
from nbstage.protocol.common.errors import NbstageError
from nbstage.protocol.daemon.frames import FrameError, json_object, read_body
from nbstage.protocol.session import resource_messages as res
from nbstage.protocol.session import supervision as sup

MAX_SESSION_FRAME = 256 * 1024 * 1024
SESSION_FD_ENV = "NBSTAGE_SESSION_FD"
"""Where the session child finds its end of the socketpair."""
_LENGTH = struct.Struct(">I")
_RAW_AFTER = b"\0"

TO_CHILD = (
    sup.SessionConfig,
    sup.ToolCallRequested,
    sup.ToolCallCancelled,
    sup.StopSessionManager,
    res.ResourceRequested,
    res.ResourceSubscriptionsChanged,
)
FROM_CHILD = (
    sup.SessionManagerReady,
    sup.ToolCallFinished,
    sup.ToolCallProgressed,
    sup.ActiveSessionChanged,
    sup.RestartTargetChanged,
    sup.HandoffRequested,
    res.ResourceAnswered,
    res.ResourceRefused,
    res.ResourceListChanged,
    res.ResourceUpdated,
)
_BY_NAME = {cls.__name__: cls for cls in (*TO_CHILD, *FROM_CHILD)}
_RAW = (sup.ToolCallFinished, res.ResourceAnswered)
"""Messages of a call id and an encoded result, which travels raw after the object."""


def encode(message: object) -> bytes:
    if isinstance(message, _RAW):
        head = orjson.dumps({"type": type(message).__name__, "call_id": message.call_id})
        body = head + _RAW_AFTER + message.result_json
    else:
        body = orjson.dumps({"type": type(message).__name__, **to_wire(message)})
    if len(body) > MAX_SESSION_FRAME:
        raise FrameError(f"a {type(message).__name__} of {len(body)} bytes is over the limit")
    return _LENGTH.pack(len(body)) + body


def decode(body: bytes) -> object:
    """The message in one frame body; FrameError if it is not one of ours."""
    head, _, raw = body.partition(_RAW_AFTER)
    fields = json_object(head, "session frame")
    cls = _BY_NAME.get(fields.pop("type", None))
    if cls is None:
        raise FrameError("session frame names no known message")
    if cls in _RAW:
        call_id = fields.get("call_id")
        if not isinstance(call_id, str):
            raise FrameError(f"{cls.__name__} needs a string call_id")
        return cls(call_id, raw)
    try:
        return from_wire(cls, fields)
    except NbstageError as exc:
        raise FrameError(f"bad {cls.__name__}: {exc.message}") from None


async def read(reader: asyncio.StreamReader) -> object | None:
    """The next message, or None at a clean end of stream."""
    body = await read_body(reader, MAX_SESSION_FRAME)
    return None if body is None else decode(body)
