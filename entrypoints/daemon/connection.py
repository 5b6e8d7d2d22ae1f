"""One client's connection to the daemon, and the frames the edge writes to it.

A connection whose client does not read what it is sent is dropped past
``max_unsent_bytes``; a reply over the frame limit is answered ``result_too_large``.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import Any

from nbstage.protocol.common.codec import to_wire
from nbstage.protocol.common.errors import ErrorCode
from nbstage.protocol.daemon.frames import (
    MAX_FRAME_BYTES,
    WIRE_VERSION,
    FrameKind,
    FrameTooLarge,
    encode_frame,
)
from nbstage.protocol.daemon.notices import Notice
from nbstage.protocol.daemon.replies import DaemonRefused

log = logging.getLogger("nbstage.edge")


@dataclass
class Connection:
    conn_id: int
    writer: asyncio.StreamWriter
    max_unsent: int
    """Past this many bytes written and not yet taken by the client, it is dropped."""
    watch_id: int | str | None = None
    client: dict[str, Any] | None = None
    peers: set[tuple[str, str]] = field(default_factory=set)

    def send(self, payload: dict[str, Any]) -> None:
        try:
            frame = encode_frame({"v": WIRE_VERSION, **payload})
        except FrameTooLarge as exc:
            frame = too_large_frame(payload.get("id"), exc.size)
        self.send_raw(frame)

    def send_raw(self, frame: bytes) -> None:
        if self.writer.is_closing():
            return
        self.writer.write(frame)
        unsent = self.writer.transport.get_write_buffer_size()
        if unsent > self.max_unsent:
            self._drop_unread(unsent)

    def _drop_unread(self, unsent: int) -> None:
        """Close a connection whose client does not read what it is sent (a watcher that
        never reads would hold every event and heartbeat in the daemon), discarding what
        is queued; its serving task then ends it as any closed connection."""
        label = (self.client or {}).get("label")
        log.warning(
            "dropped connection %d%s: %d bytes were waiting for it to read, over the "
            "limit of %d (max_unsent_bytes); it reads too slowly or not at all",
            self.conn_id,
            f" ({label})" if label else "",
            unsent,
            self.max_unsent,
        )
        self.writer.transport.abort()


def error_frame(
    request_id: Any, code: ErrorCode, message: str, notices: tuple[Notice, ...] = ()
) -> dict[str, Any]:
    frame = {
        "id": request_id,
        "type": FrameKind.ERROR,
        "error": to_wire(DaemonRefused(code, message)),
    }
    if notices:
        frame["notices"] = [notice.to_json() for notice in notices]
    return frame


def too_large_frame(request_id: Any, size: int) -> bytes:
    """The small ``result_too_large`` error sent instead of a reply over the frame limit."""
    log.warning("a reply of %d bytes is over the frame limit; sent result_too_large", size)
    message = (
        f"The reply is {size:,} bytes, over the {MAX_FRAME_BYTES // (1024 * 1024)} MiB limit "
        "of one frame, so it was not sent. Ask for less: page with start and count, or "
        "leave outputs out."
    )
    frame = error_frame(request_id, ErrorCode.RESULT_TOO_LARGE, message)
    try:
        return encode_frame({"v": WIRE_VERSION, **frame})
    except FrameTooLarge:
        return encode_frame({"v": WIRE_VERSION, **frame, "id": None})


def result_frame(request_id: Any, reply: object) -> dict[str, Any]:
    return {"id": request_id, "type": FrameKind.RESULT, "result": to_wire(reply)}
