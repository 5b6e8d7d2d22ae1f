"""The Lab edge ↔ Room conversation: a person's y-websocket messages, carried over the
daemon socket (ADR 0004).

The Lab edge joins a room as a peer (``attach``), then asks for ``lab_join`` with its
peer id; from then on the Room pushes every Y update and awareness change the person
needs as ``lab`` frames on that connection, and the edge passes each message the
browser sends as ``lab_message``. Y messages are bytes; on the wire they are base64.
"""

from __future__ import annotations

import base64
import binascii

from nbstage.protocol.common.errors import ErrorCode, NbstageError
from nbstage.protocol.common.frozen import frozen
from nbstage.protocol.daemon.replies import REPLY_TYPES
from nbstage.protocol.daemon.requests import wire_request

LAB_FRAME = "lab"
"""The ``type`` of a frame the daemon pushes to a person's connection."""


@wire_request("lab_join")
@frozen
class JoinSharedDoc:
    """Make an attached peer one of the room's people: answered with the Y messages that
    start the sync; the room's updates follow as ``lab`` frames."""

    notebook_id: str
    peer_id: str


@wire_request("lab_message")
@frozen
class PassSharedDocMessage:
    """One y-websocket message from the person's browser (base64); answered once what it
    changed is journalled, with the messages for that browser alone."""

    notebook_id: str
    peer_id: str
    data: str


@frozen
class SharedDocAnswered:
    messages: list[str]
    """base64 y-websocket messages for the person who asked."""
    session: str
    """The room's Y history: a browser that holds another must reload (ADR 0004)."""


@frozen
class SharedDocPushed:
    """Room → daemon edge: y-websocket messages for one person, written as a ``lab``
    frame on that person's connection."""

    conn: int
    notebook_id: str
    peer_id: str
    messages: list[str]


REPLY_TYPES[JoinSharedDoc] = SharedDocAnswered
REPLY_TYPES[PassSharedDocMessage] = SharedDocAnswered


def to_text(messages: list[bytes]) -> list[str]:
    return [base64.b64encode(m).decode("ascii") for m in messages]


def from_text(data: str) -> bytes:
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise NbstageError(ErrorCode.BAD_REQUEST, "data is not base64") from None
