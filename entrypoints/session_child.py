"""The session child: one MCP client's SessionManager and WatchLoop, in a process of
their own so that a crash here never reaches the client's stdio.

`nbstage mcp` starts this module (``python -m nbstage.entrypoints.session_child``)
with one end of a socketpair in ``NBSTAGE_SESSION_FD``. Frames from it become
messages to the SessionManager; whatever the actors address to this edge goes back
as frames. The process ends when the supervisor says stop, when the socketpair
closes (its parent died), or, after a handoff request, with exit code 75.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import sys
from pathlib import Path
from typing import Any

from nbstage.entrypoints.actor_host import ActorHost
from nbstage.entrypoints.logs import setup_logging
from nbstage.entrypoints.mcp_edge import SESSION_FD_ENV
from nbstage.protocol import session_frames
from nbstage.protocol.frames import FrameError
from nbstage.protocol.supervision import (
    HANDOFF_EXIT_CODE,
    HandoffRequested,
    SessionConfig,
    StopSessionManager,
)

log = logging.getLogger("nbstage.session")


class SessionChildEdge:
    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._writer: asyncio.StreamWriter | None = None
        self._host: ActorHost | None = None
        self.exit_code = 0

    async def run(self) -> None:
        from nbstage.actors.session_manager import SessionManager

        reader, self._writer = await asyncio.open_unix_connection(sock=self._sock)
        self._host = ActorHost(self._on_actor_message)
        manager = self._host.create(SessionManager)
        try:
            while (message := await session_frames.read(reader)) is not None:
                if isinstance(message, SessionConfig):
                    setup_logging(Path(message.state_dir) / "logs", "session")
                self._host.tell(manager, message)
                if isinstance(message, StopSessionManager) or self.exit_code:
                    break
        except (FrameError, ConnectionError) as exc:
            log.warning("the link to nbstage mcp failed: %s", exc)
        self._host.tell(manager, StopSessionManager())
        self._host.close()
        with contextlib.suppress(ConnectionError):
            await self._writer.drain()
        self._writer.close()

    def _on_actor_message(self, message: Any) -> None:
        if not isinstance(message, session_frames.FROM_CHILD):
            log.warning("the session child ignored %s", type(message).__name__)
            return
        if not self._writer.is_closing():
            self._writer.write(session_frames.encode(message))
        if isinstance(message, HandoffRequested):
            self.exit_code = HANDOFF_EXIT_CODE


def main() -> None:
    from nbstage.entrypoints.lifelines import die_with_parent

    die_with_parent()
    sock = socket.socket(fileno=int(os.environ.pop(SESSION_FD_ENV)))
    edge = SessionChildEdge(sock)
    asyncio.run(edge.run())
    sys.exit(edge.exit_code)


if __name__ == "__main__":
    main()
