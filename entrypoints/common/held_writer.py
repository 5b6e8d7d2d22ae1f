"""A stream that may be written to before it is connected.

Both client-side edges start a connection (the session child's socketpair, a daemon
link) and may be asked to send on it before it exists. Bytes written before then are
held and go out first, in order, once the stream is attached.
"""

from __future__ import annotations

import asyncio


class HeldWriter:
    def __init__(self) -> None:
        self.writer: asyncio.StreamWriter | None = None
        self._held: list[bytes] = []

    def attach(self, writer: asyncio.StreamWriter) -> None:
        self.writer = writer
        for data in self._held:
            writer.write(data)
        self._held.clear()

    def write(self, data: bytes) -> None:
        if self.writer is None:
            self._held.append(data)
        elif not self.writer.is_closing():
            self.writer.write(data)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
