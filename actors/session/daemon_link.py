"""An actor's connection to the daemon socket, carried out by its process's edge.

Actors never touch a socket. A :class:`DaemonLink` is the actor's handle on one
connection: it numbers requests and encodes their frames, and asks the edge
(``entrypoints/session/session_child.py``) to connect, write and close. The edge reports
back what happens to the owning actor as messages: each frame that arrives
(:class:`DaemonFrameArrived`), a connection that could not be made
(:class:`DaemonLinkRefused`) or one that ended (:class:`DaemonLinkClosed`).
Requests are the dataclasses of ``protocol/daemon/requests.py``; ``reply_in`` reads each
answer as the reply type its request expects, or as a :class:`DaemonFailure`.
The connection is the actor's identity in the daemon: when the process dies, the
socket closes and the daemon makes its peers leave their rooms.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable
from typing import Any

from nbstage.protocol.common.errors import ErrorCode, NbstageError
from nbstage.protocol.common.frozen import frozen
from nbstage.protocol.daemon.conversation import answer_in, request_frame
from nbstage.protocol.daemon.frames import FrameError, decode_daemon_frame

log = logging.getLogger("nbstage.link")


@frozen
class OpenDaemonLink:
    """Actor → edge: connect to the daemon; report to ``owner`` under ``link``."""

    link: int
    socket_path: str
    owner: Any


@frozen
class SendToDaemon:
    """Actor → edge: write one encoded frame on ``link`` (queued until it is connected)."""

    link: int
    frame: bytes


@frozen
class CloseDaemonLink:
    link: int


@frozen
class DaemonFrameArrived:
    link: int
    body: bytes
    """The frame still encoded; it is decoded once, by the actor that waits for it."""

    def frame(self) -> dict[str, Any]:
        return decode_daemon_frame(self.body)


@frozen
class DaemonLinkRefused:
    """The connection could not be made: nothing listens on the socket (yet)."""

    link: int
    reason: str
    settings_problem: str | None = None
    """Why a daemon would refuse this state dir's settings, if it would: then none
    will start until they are mended."""


@frozen
class DaemonLinkClosed:
    link: int
    reason: str


class DaemonFailure(NbstageError):
    """A request the daemon refused, answered with something malformed, or never got."""


_link_ids = itertools.count(1)


class DaemonLink:
    """One connection, as its owning actor sees it."""

    def __init__(self, tell_edge: Callable[[object], None], socket_path: str, owner: Any) -> None:
        self.link = next(_link_ids)
        self._tell_edge = tell_edge
        self._ids = itertools.count(1)
        tell_edge(OpenDaemonLink(self.link, socket_path, owner))

    def send(self, request: object) -> int:
        """Send a request; returns its id. A link that failed reports so by message,
        so the caller's pending continuations are failed there, in one place."""
        request_id = next(self._ids)
        self._tell_edge(SendToDaemon(self.link, request_frame(request_id, request)))
        return request_id

    def close(self) -> None:
        self._tell_edge(CloseDaemonLink(self.link))


def is_current(
    link: DaemonLink | None, msg: DaemonFrameArrived | DaemonLinkClosed | DaemonLinkRefused
) -> bool:
    """Whether a report comes from the link the actor still uses (not an older one)."""
    return link is not None and msg.link == link.link


def frame_from(link: DaemonLink | None, msg: DaemonFrameArrived) -> dict[str, Any] | None:
    """The frame of a report from the current link, or None (stale link, malformed frame)."""
    if not is_current(link, msg):
        return None
    try:
        return msg.frame()
    except FrameError:
        log.warning("dropped a malformed frame from the daemon")
        return None


def reply_in(frame: dict[str, Any], expected: type) -> object:
    """The ``expected`` reply a result frame carries, or the DaemonFailure an error frame
    (or a malformed reply) stands for."""
    try:
        return answer_in(frame, expected, DaemonFailure)
    except DaemonFailure as failure:
        if failure.code is ErrorCode.BAD_REPLY:
            log.error("%s", failure.message)
        return failure
