"""A connection from an actor to the daemon socket, read by a thread of its own.

Actors never block, so a reader thread blocks on the socket and posts each frame
to the owning actor through ``thread_post.self_poster``.
Sending happens on the actor's own thread. A closed link posts DaemonLinkClosed.
The connection is the actor's identity in the daemon: when the process dies, the
socket closes and the daemon makes its peers leave their rooms.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from nbstage.protocol.frames import WIRE_VERSION, FrameError, decode_body, encode_frame, recv_body

log = logging.getLogger("nbstage.link")


@dataclass(frozen=True, slots=True)
class DaemonFrameArrived:
    link: int
    body: bytes
    """The frame still encoded: bytes are cheap to pass through the actor's queue."""

    def frame(self) -> dict[str, Any]:
        return decode_body(self.body, null_id_ok=True)


@dataclass(frozen=True, slots=True)
class DaemonLinkClosed:
    link: int
    reason: str


_link_ids = itertools.count(1)


class DaemonLink:
    def __init__(self, socket_path: str, post: Callable[[object], None]) -> None:
        self.link = next(_link_ids)
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._sock.connect(socket_path)
        except OSError:
            self._sock.close()
            raise
        self._post = post
        self._ids = itertools.count(1)
        self._send_lock = threading.Lock()
        threading.Thread(target=self._read, name=f"daemon-link-{self.link}", daemon=True).start()

    def send(self, kind: str, **fields: Any) -> int:
        """Send a request; returns its id. It never raises for a dead daemon: a failed
        write shuts the socket, so the reader reports DaemonLinkClosed and the caller's
        pending continuations are failed there, in one place."""
        request_id = next(self._ids)
        frame = encode_frame({"v": WIRE_VERSION, "type": kind, "id": request_id, **fields})
        try:
            with self._send_lock:
                self._sock.sendall(frame)
        except OSError:
            with contextlib.suppress(OSError):
                self._sock.shutdown(socket.SHUT_RDWR)
        return request_id

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)
        self._sock.close()

    def _read(self) -> None:
        try:
            while True:
                self._post(DaemonFrameArrived(self.link, recv_body(self._sock)))
        except (OSError, ConnectionError, FrameError) as exc:
            self._post(DaemonLinkClosed(self.link, str(exc) or type(exc).__name__))


def is_current(link: DaemonLink | None, msg: DaemonFrameArrived | DaemonLinkClosed) -> bool:
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
