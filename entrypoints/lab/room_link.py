"""One connection from the Lab edge to the daemon, on the Lab server's asyncio loop.

A room's websocket gets a link of its own: the daemon ties the person's peer to the
connection, so closing the link is leaving the room. Requests are pipelined (each is
answered in its own time, matched by id); ``lab`` frames the daemon pushes go to
``on_push``, and ``on_lost`` hears once that the daemon is gone.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from nbstage.entrypoints.common.ownership import check_peer, check_private_dir
from nbstage.entrypoints.common.statedir import client_paths
from nbstage.entrypoints.control.daemon_client import DaemonError
from nbstage.protocol.common.errors import ErrorCode, NbstageError
from nbstage.protocol.common.wire_decoding import from_wire
from nbstage.protocol.daemon.frames import (
    WIRE_VERSION,
    FrameError,
    FrameKind,
    decode_daemon_frame,
    encode_frame,
    read_body,
)
from nbstage.protocol.daemon.replies import DaemonRefused


def socket_path() -> Path:
    """The daemon socket of the state dir ``nbstage lab`` was started for."""
    return client_paths(os.environ.get("NBSTAGE_STATE_DIR") or None).socket


class RoomLink:
    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        on_push: Callable[[list[str]], None],
        on_lost: Callable[[], None],
    ) -> None:
        self._reader, self._writer = reader, writer
        self._on_push, self._on_lost = on_push, on_lost
        self._ids = itertools.count(1)
        self._waiting: dict[int, asyncio.Future] = {}
        self._task = asyncio.create_task(self._read())

    @classmethod
    async def open(
        cls,
        socket_path: Path,
        on_push: Callable[[list[str]], None] = lambda _: None,
        on_lost: Callable[[], None] = lambda: None,
    ) -> RoomLink:
        """Connect, checking as every client does that the socket's dir and the daemon
        are this user's (ownership.Untrusted otherwise)."""
        check_private_dir(socket_path.parent)
        reader, writer = await asyncio.open_unix_connection(str(socket_path))
        try:
            check_peer(writer.get_extra_info("socket"), f"the daemon on {socket_path}")
        except BaseException:
            writer.close()
            raise
        return cls(reader, writer, on_push, on_lost)

    def post(self, kind: str, **fields: Any) -> asyncio.Future:
        """Send one request now; the future holds its result, or DaemonError."""
        request_id = next(self._ids)
        answer: asyncio.Future = asyncio.get_running_loop().create_future()
        if self._writer.is_closing():
            answer.set_exception(ConnectionError("the daemon connection is closed"))
            return answer
        self._waiting[request_id] = answer
        envelope = {"v": WIRE_VERSION, "type": kind, "id": request_id}
        self._writer.write(encode_frame({**envelope, **fields}))
        return answer

    async def request(self, kind: str, **fields: Any) -> dict[str, Any]:
        result: dict[str, Any] = await self.post(kind, **fields)
        return result

    def close(self) -> None:
        self._writer.close()
        self._task.cancel()

    async def _read(self) -> None:
        try:
            while (body := await read_body(self._reader)) is not None:
                self._take(decode_daemon_frame(body))
        except (FrameError, ConnectionError):
            pass
        finally:
            self._writer.close()
            for answer in self._waiting.values():
                if not answer.done():
                    answer.set_exception(ConnectionError("the daemon connection closed"))
            self._waiting.clear()
            with contextlib.suppress(Exception):
                self._on_lost()

    def _take(self, frame: dict[str, Any]) -> None:
        kind = frame["type"]
        if kind == FrameKind.LAB:
            self._on_push(frame.get("messages", []))
            return
        answer = self._waiting.pop(frame.get("id"), None) if kind in _ANSWERS else None
        if answer is None or answer.done():
            return
        if kind == FrameKind.ERROR:
            answer.set_exception(refused(frame.get("error")))
        else:
            answer.set_result(frame.get("result", {}))


def refused(error: object) -> DaemonError:
    """The daemon's refusal, its code checked here; a malformed one says so."""
    try:
        refusal = from_wire(DaemonRefused, error)
    except NbstageError as exc:
        return DaemonError(ErrorCode.BAD_REPLY, f"the daemon sent a malformed refusal: {exc}")
    return DaemonError(refusal.code, refusal.message)


_ANSWERS = (FrameKind.RESULT, FrameKind.ERROR)
