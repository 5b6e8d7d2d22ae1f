"""The SessionManager's requests to the daemon, and the answers they wait for.

A :class:`DaemonRequests` owns the manager's current :class:`DaemonLink` and the table
of requests sent on it: daemon request id → the reply type expected and the
continuation that resumes with it (or with a :class:`DaemonFailure`), plus the tool
call each request serves, whose result carries the notices its answer brings.
Waiting is this table, never a blocked mailbox. No actor here: the owner passes the
callable that reaches its edge.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from nbstage.actors.session.daemon_link import (
    DaemonFailure,
    DaemonFrameArrived,
    DaemonLink,
    DaemonLinkClosed,
    DaemonLinkRefused,
    frame_from,
    is_current,
    reply_in,
)
from nbstage.protocol.common.errors import ErrorCode
from nbstage.protocol.daemon.frames import MAX_FRAME_BYTES, FrameKind, FrameTooLarge
from nbstage.protocol.daemon.replies import reply_type

Resume = Callable[[Any], None]

UNREACHABLE = (
    "The notebook daemon is unreachable right now; nbstage is reconnecting and will "
    "rejoin your notebook. Try again in a moment."
)


def settings_refused(problem: str) -> str:
    return (
        f"The nbstage daemon cannot start: {problem}. Once that is mended, the next call "
        "starts it (with autostart off: `nbstage daemon start`)."
    )


def too_large_to_send(size: int) -> str:
    return (
        f"The request is {size:,} bytes, over the daemon's "
        f"{MAX_FRAME_BYTES // (1024 * 1024)} MiB limit for one frame, so it was not sent. "
        "Send less at once, for example a long source split over several cells."
    )


class DaemonRequests:
    def __init__(self) -> None:
        self.link: DaemonLink | None = None
        self.waiting: dict[int, tuple[type, Resume]] = {}
        self.call_of: dict[int, str] = {}
        self.unreachable = UNREACHABLE
        """What a request says while no daemon answers."""
        self.refused_in_a_row = 0

    def connect(self, tell_edge: Callable[[object], None], socket_path: str, owner: Any) -> None:
        self.link = DaemonLink(tell_edge, socket_path, owner)

    def send(self, request: object, resume: Resume, call_id: str | None = None) -> None:
        """Send ``request``; ``resume`` gets its typed reply or a DaemonFailure."""
        if self.link is None:
            resume(DaemonFailure(ErrorCode.DAEMON_UNREACHABLE, self.unreachable))
            return
        try:
            request_id = self.link.send(request)
        except FrameTooLarge as exc:
            resume(DaemonFailure(ErrorCode.BAD_REQUEST, too_large_to_send(exc.size)))
            return
        self.waiting[request_id] = (reply_type(request), resume)
        if call_id is not None:
            self.call_of[request_id] = call_id

    def arrived(
        self,
        msg: DaemonFrameArrived,
        progressed: Callable[[str, str], None],
        noted: Callable[[str, object], None],
    ) -> None:
        """A frame on the current link: a progress line for a call (``progressed``), or
        the answer a waiting request resumes with, its notices first to ``noted``."""
        frame = frame_from(self.link, msg)
        if frame is None:
            return
        self.refused_in_a_row = 0
        self.unreachable = UNREACHABLE
        request_id: Any = frame.get("id")
        if frame["type"] == FrameKind.PROGRESS:
            call_id = self.call_of.get(request_id)
            if call_id is not None and isinstance(frame.get("message"), str):
                progressed(call_id, frame["message"])
            return
        waiting = self.waiting.pop(request_id, None)
        if waiting is None:
            return
        call_id = self.call_of.pop(request_id, None)
        if call_id is not None:
            noted(call_id, frame.get("notices"))
        expected, resume = waiting
        resume(reply_in(frame, expected))

    def lost(self, msg: DaemonLinkClosed | DaemonLinkRefused) -> bool:
        """The current link ended: every waiting request resumes with a failure. False for
        a report from an older link, which changes nothing."""
        if not is_current(self.link, msg):
            return False
        self.link = None
        problem = None
        if isinstance(msg, DaemonLinkRefused):
            self.refused_in_a_row += 1
            problem = msg.settings_problem
        else:
            self.refused_in_a_row = 0
        self.unreachable = UNREACHABLE if problem is None else settings_refused(problem)
        failure = DaemonFailure(ErrorCode.DAEMON_UNREACHABLE, self.unreachable)
        waiting, self.waiting = self.waiting, {}
        self.call_of = {}
        for _expected, resume in waiting.values():
            resume(failure)
        return True

    def close(self) -> None:
        if self.link is not None:
            self.link.close()
            self.link = None
