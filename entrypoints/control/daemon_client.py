"""The blocking client of the daemon socket, used by the CLI, the admin console, the
harness and tests.

It speaks the conversation of ``protocol/daemon/conversation.py``, as the session
child's ``DaemonLink`` does: ``call`` sends a request dataclass and returns the reply its
request is answered with, or raises :class:`DaemonError`. ``request`` is the same
exchange with the wire's own dicts, for tests and benches that must send what no request
dataclass can (a bad field) or read an answer as it travelled.
"""

from __future__ import annotations

import itertools
import socket
from pathlib import Path
from typing import Any, TypeVar

from nbstage.entrypoints.common.ownership import check_peer, check_private_dir
from nbstage.protocol.common.errors import NbstageError
from nbstage.protocol.daemon.conversation import answer_in, is_answer, request_frame
from nbstage.protocol.daemon.frames import WIRE_VERSION, FrameKind, encode_frame, recv_frame
from nbstage.protocol.daemon.replies import reply_type


class DaemonError(NbstageError):
    """The daemon refused a request (or answered it with something malformed)."""

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


class DaemonNotRunning(Exception):
    """Nothing answers on the socket."""


_T = TypeVar("_T")


class DaemonClient:
    """A connection to the daemon on ``socket_path``. Before anything is sent, the socket's
    dir and the process serving it must be this user's: else ownership.Untrusted."""

    def __init__(self, socket_path: Path, timeout: float | None = 60.0) -> None:
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.settimeout(timeout)
        try:
            check_private_dir(Path(socket_path).parent)
            self._sock.connect(str(socket_path))
            check_peer(self._sock, f"the daemon on {socket_path}")
        except (FileNotFoundError, ConnectionRefusedError) as exc:
            self._sock.close()
            raise DaemonNotRunning(f"no daemon is listening on {socket_path}") from exc
        except BaseException:
            self._sock.close()
            raise
        self._ids = itertools.count(1)
        self.notices: list[dict[str, Any]] = []
        """The notices ({kind, message, next_call?}) that the last answer carried."""

    def __enter__(self) -> DaemonClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._sock.close()

    def call(self, request: object, expected: type[_T]) -> _T:
        """Send ``request`` and wait for its answer: the reply ``expected`` names (the type
        ``reply_type`` gives for the request, or a base of it); raise DaemonError when the
        daemon refuses it."""
        if not issubclass(reply_type(request), expected):
            raise TypeError(f"{type(request).__name__} is not answered with {expected.__name__}")
        request_id = next(self._ids)
        self._sock.sendall(request_frame(request_id, request))
        return answer_in(self._answer(request_id), expected, DaemonError)

    def send(self, kind: str, **fields: Any) -> int:
        """Send a request written as the wire's dict; returns its id."""
        request_id = next(self._ids)
        self._sock.sendall(
            encode_frame({"v": WIRE_VERSION, "type": kind, "id": request_id, **fields})
        )
        return request_id

    def receive(self) -> dict[str, Any]:
        return recv_frame(self._sock)

    def request(self, kind: str, **fields: Any) -> dict[str, Any]:
        """``call`` in the wire's dicts: the answer's result as it travelled."""
        frame = self._answer(self.send(kind, **fields))
        if frame["type"] == FrameKind.ERROR:
            answer_in(frame, dict, DaemonError)
        result: dict[str, Any] = frame["result"]
        return result

    def _answer(self, request_id: int) -> dict[str, Any]:
        """The frame that answers ``request_id``, past any progress line or event before it."""
        while True:
            frame = self.receive()
            if is_answer(frame, request_id):
                self.notices = frame.get("notices", [])
                return frame
