"""A small blocking client for the daemon socket, used by the CLI, the admin console and tests."""

from __future__ import annotations

import itertools
import socket
from pathlib import Path
from typing import Any

from nbstage.entrypoints.common.ownership import check_peer, check_private_dir
from nbstage.protocol.common.codec import from_wire
from nbstage.protocol.common.errors import NbstageError
from nbstage.protocol.daemon.frames import WIRE_VERSION, FrameKind, encode_frame, recv_frame
from nbstage.protocol.daemon.replies import DaemonRefused


class DaemonError(NbstageError):
    """The daemon answered a request with an error frame."""

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


class DaemonNotRunning(Exception):
    """Nothing answers on the socket."""


_ANSWERS = (FrameKind.RESULT, FrameKind.ERROR)


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
        """The notices ({kind, message, next_call?}) that the last answer to ``request`` carried."""

    def __enter__(self) -> DaemonClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._sock.close()

    def send(self, kind: str, **fields: Any) -> int:
        request_id = next(self._ids)
        self._sock.sendall(
            encode_frame({"v": WIRE_VERSION, "type": kind, "id": request_id, **fields})
        )
        return request_id

    def receive(self) -> dict[str, Any]:
        return recv_frame(self._sock)

    def request(self, kind: str, **fields: Any) -> dict[str, Any]:
        """Send one request and wait for its answer; raise DaemonError on an error frame."""
        request_id = self.send(kind, **fields)
        while True:
            frame = self.receive()
            if frame.get("id") == request_id and frame["type"] in _ANSWERS:
                break
        self.notices = frame.get("notices", [])
        if frame["type"] == FrameKind.ERROR:
            refused = from_wire(DaemonRefused, frame["error"])
            raise DaemonError(refused.code, refused.message)
        result: dict[str, Any] = frame["result"]
        return result
