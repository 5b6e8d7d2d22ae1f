"""How a kernel message is framed on a stand-in's websocket (room_kernels.py), in the two
protocols Lab's front end speaks.

A browser that offers ``v1.kernel.websocket.jupyter.org`` in its handshake (Lab does)
gets it: each message is one binary frame, a table of little-endian offsets, then the
channel's name and the header, parent header, metadata and content, each JSON, then any
buffers. jupyter_server's own helpers cut and build the frame. A client that offers no
protocol gets the legacy one: one JSON text per message, whose ``channel`` key names
the channel.

A frame that is not a kernel message in the protocol of its socket is refused
(``FrameRefused``, with the reason): the stand-in closes that socket and nothing else.
"""

from __future__ import annotations

import json
from typing import Any

from jupyter_client.session import Session
from jupyter_server.services.kernels.connection.base import (
    deserialize_msg_from_ws_v1,
    serialize_msg_to_ws_v1,
)

V1 = "v1.kernel.websocket.jupyter.org"
OFFSET_BYTES = 8
PARTS = ("header", "parent_header", "metadata", "content")
MAX_OFFSETS = 64
"""Channel, four parts and buffers: a stand-in's requests carry none, so a table longer
than this is not a frame worth reading."""


class FrameRefused(ValueError):
    """A websocket message that is not a kernel message in its socket's protocol."""


def read_frame(message: str | bytes, protocol: str | None, session: Session) -> dict[str, Any]:
    """The kernel message in a websocket message, with its ``channel``; FrameRefused if
    there is none."""
    if protocol == V1:
        return _read_v1(message, session)
    try:
        msg = json.loads(message)
    except (ValueError, TypeError, RecursionError):
        raise FrameRefused("a legacy kernel message is JSON text") from None
    return _checked(msg)


def write_frame(msg: dict[str, Any], protocol: str | None, session: Session) -> str | bytes:
    """A kernel message (with its ``channel``) as a websocket message of ``protocol``."""
    if protocol == V1:
        return bytes(serialize_msg_to_ws_v1(msg, msg["channel"], session.pack))
    return json.dumps(msg, default=str)


def _read_v1(message: str | bytes, session: Session) -> dict[str, Any]:
    if not isinstance(message, bytes):
        raise FrameRefused(f"{V1} messages are binary")
    _check_offsets(message)
    try:
        channel, parts = deserialize_msg_from_ws_v1(message)
    except UnicodeDecodeError:
        raise FrameRefused(f"a {V1} message's channel is not UTF-8") from None
    try:
        msg = {name: session.unpack(part) for name, part in zip(PARTS, parts, strict=False)}
    except (ValueError, TypeError, RecursionError):
        raise FrameRefused(f"a part of a {V1} message is not JSON") from None
    return _checked({**msg, "channel": channel})


def _check_offsets(message: bytes) -> None:
    """The offset table is whole and in order, and names a channel and four parts inside
    the message (what jupyter_server's reader takes for granted)."""
    if len(message) < OFFSET_BYTES:
        raise FrameRefused(f"a {V1} message starts with its count of offsets")
    count = int.from_bytes(message[:OFFSET_BYTES], "little")
    table_end = OFFSET_BYTES * (count + 1)
    if not 2 + len(PARTS) <= count <= MAX_OFFSETS or len(message) < table_end:
        raise FrameRefused(f"a {V1} message's offset table is not whole ({count} offsets)")
    offsets = [
        int.from_bytes(message[OFFSET_BYTES * (i + 1) : OFFSET_BYTES * (i + 2)], "little")
        for i in range(count)
    ]
    if offsets[0] != table_end or offsets != sorted(offsets) or offsets[-1] > len(message):
        raise FrameRefused(f"a {V1} message's offsets do not cut it in order")


def _checked(msg: object) -> dict[str, Any]:
    """A message with a header that names its type, and a channel (shell if none, as
    jupyter_server assumes)."""
    if not isinstance(msg, dict) or not isinstance(msg.get("header"), dict):
        raise FrameRefused("a kernel message has a header")
    if not isinstance(msg["header"].get("msg_type"), str):
        raise FrameRefused("a kernel message's header names its msg_type")
    channel = msg.get("channel") or "shell"
    if not isinstance(channel, str):
        raise FrameRefused("a kernel message's channel is a name")
    return {**msg, "channel": channel}
