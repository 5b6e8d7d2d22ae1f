"""One request to the daemon and its answer, as every client of the daemon sees them.

A request (a dataclass of ``requests.py``) goes out as one frame under a number its
client chose; the answer is the result or error frame of that number, read as the reply
``replies.reply_type`` names, or as a failure. The two clients differ only in how the
bytes move and how they wait: the session child's ``DaemonLink``
(``actors/session/daemon_link.py``) hands frames to its edge's asyncio loop and is
answered by message, while the blocking ``DaemonClient``
(``entrypoints/control/daemon_client.py``) of the CLI, the admin console and the harness
writes and reads its own socket. Both encode and decode here.
"""

from __future__ import annotations

from typing import Any, TypeVar

from nbstage.protocol.common.codec import to_wire
from nbstage.protocol.common.errors import NbstageError
from nbstage.protocol.daemon.frames import WIRE_VERSION, FrameKind, encode_frame
from nbstage.protocol.daemon.replies import DaemonRefused, decode_reply
from nbstage.protocol.daemon.requests import WIRE_NAMES

_T = TypeVar("_T")
_Failure = TypeVar("_Failure", bound=NbstageError)
ANSWER_KINDS = (FrameKind.RESULT, FrameKind.ERROR)


def request_frame(request_id: int, request: object) -> bytes:
    """``request`` as the frame that asks it under ``request_id``; raises FrameTooLarge."""
    envelope = {"v": WIRE_VERSION, "type": WIRE_NAMES[type(request)], "id": request_id}
    return encode_frame({**envelope, **to_wire(request)})


def is_answer(frame: dict[str, Any], request_id: int) -> bool:
    """Whether ``frame`` ends the request ``request_id`` (not a progress line or an event)."""
    return frame.get("id") == request_id and frame["type"] in ANSWER_KINDS


def answer_in(frame: dict[str, Any], expected: type[_T], failure: type[_Failure]) -> _T:
    """The ``expected`` reply a result frame carries. Raises ``failure`` with the refusal's
    code for an error frame, or with BAD_REPLY for an answer that is not ``expected``."""
    try:
        reply = decode_reply(frame, expected)
    except NbstageError as exc:
        raise failure(exc.code, exc.message) from None
    if isinstance(reply, DaemonRefused):
        raise failure(reply.code, reply.message)
    return reply
