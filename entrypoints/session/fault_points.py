"""A fault point for the tests: a session child that dies at the worst moment.

``NBSTAGE_FAULT_DIE_AFTER_ANSWER=<wire type>:<marker file>`` makes the session child
SIGKILL itself as soon as the daemon's answer to a request of that type arrives, before
the answer is used: the daemon has carried the request out, and nobody upstream knows.
The marker file is created first, so only the first child to get there dies and the
supervisor's retry runs on a successor that does not. Unset, it costs one check at
start-up and nothing per frame.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import orjson

from nbstage.protocol.daemon.frames import HEADER_BYTES

FAULT_ENV = "NBSTAGE_FAULT_DIE_AFTER_ANSWER"


class DieAfterAnswer:
    def __init__(self, wire_type: str, marker: Path) -> None:
        self.wire_type = wire_type
        self.marker = marker
        self.watched: set[tuple[int, object]] = set()

    def sent(self, link_id: int, frame: bytes) -> None:
        payload = orjson.loads(frame[HEADER_BYTES:])
        if payload.get("type") == self.wire_type:
            self.watched.add((link_id, payload.get("id")))

    def arrived(self, link_id: int, body: bytes) -> None:
        if not self.watched:
            return
        payload = orjson.loads(body)
        if (link_id, payload.get("id")) not in self.watched:
            return
        try:
            self.marker.touch(exist_ok=False)
        except FileExistsError:
            self.watched.clear()
            return
        os.kill(os.getpid(), signal.SIGKILL)


def from_environment() -> DieAfterAnswer | None:
    spec = os.environ.get(FAULT_ENV)
    if not spec or ":" not in spec:
        return None
    wire_type, marker = spec.split(":", 1)
    return DieAfterAnswer(wire_type, Path(marker))
