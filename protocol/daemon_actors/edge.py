"""Messages between the socket edge and the actors behind it.

The edge is the daemon's main process: it owns the Unix socket, turns frames into
:class:`ClientRequest` messages and sends answers back to the right connection.
Actors never see a socket; they answer with :class:`RequestAnswered` or
:class:`RequestFailed` addressed to the edge, carrying the request's origin.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

import orjson

from nbstage.protocol.common.errors import ErrorCode
from nbstage.protocol.common.frozen import frozen
from nbstage.protocol.daemon.notices import Notice


@frozen
class Origin:
    """Where an answer goes: a socket connection and the frame id on it."""

    conn: int
    request_id: int | str
    preview: int | None = None
    """The request's preview: each output text in the answer is cut to about this many
    bytes before it is encoded (actors/common/output_bounds.py); None sends outputs whole."""


@frozen
class ClientRequest:
    """A decoded wire request travelling from the edge to the actor that answers it."""

    origin: Origin
    body: Any
    """One of the dataclasses in nbstage.protocol.daemon.requests."""


@frozen
class RequestAnswered:
    origin: Origin
    result_json: bytes
    """The reply (a dataclass of nbstage.protocol.daemon.replies), already encoded by the actor:
    bytes cross thespian's queues far more cheaply than a large dict, and the edge writes
    them without re-encoding."""
    notices: tuple[Notice, ...] = ()
    """Notices for the agent, such as a merge from disk; the frame carries them as
    ``notices`` and the session manager puts them at the top of the tool result."""

    def result(self) -> dict[str, Any]:
        result: dict[str, Any] = orjson.loads(self.result_json)
        return result


@frozen
class RequestProgressed:
    """A line about a request still under way (a build's output); the edge writes it as a
    ``progress`` frame with the request's id, before the answer."""

    origin: Origin
    message: str


@frozen
class RequestFailed:
    """The request was refused; the edge writes it as a DaemonRefused error frame."""

    origin: Origin
    code: ErrorCode
    message: str
    notices: tuple[Notice, ...] = ()


class EventKind(StrEnum):
    CREATED = "created"
    REMOVED = "removed"
    PEER_JOINED = "peer_joined"
    PEER_LEFT = "peer_left"
    SAVED = "saved"
    KERNEL_DIED = "kernel_died"
    CHANGED = "changed"
    """The document took a new revision: anyone's edit, outputs, a merge with the file."""


@frozen
class RoomEventOccurred:
    """Something watchers should hear about, broadcast on every watch subscription."""

    kind: EventKind
    notebook_id: str
    detail: dict[str, Any]


@frozen
class KernelProcessStarted:
    """A kernel process's pid, so the daemon's last-resort teardown can find it."""

    notebook_id: str
    pid: int


@frozen
class KernelProcessEnded:
    notebook_id: str
    pid: int


@frozen
class RoomResident:
    """The Daemon tells the edge where a room lives, so room requests skip the Daemon hop."""

    notebook_id: str
    address: Any


@frozen
class RoomGone:
    notebook_id: str
