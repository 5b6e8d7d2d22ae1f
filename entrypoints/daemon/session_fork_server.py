"""The daemon's side of the session fork server (``session_zygote.py``, ADR 0009).

The daemon starts it once it serves and ends it as it stops; the fork server also ends by
itself when the daemon is gone. Edges talk to it directly, on its own socket: the daemon
only owns its life. A fork server that ends early is not started again: edges then start
their children the plain way.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os

from nbstage.entrypoints.common.lifelines import EDGE_PID_ENV
from nbstage.entrypoints.common.python_command import module_command
from nbstage.entrypoints.common.statedir import StatePaths
from nbstage.entrypoints.session.session_zygote import OWNER_ENV, PAD_ENV, ROOM, SOCKET_ENV

log = logging.getLogger("nbstage.edge")

STOP_GRACE = 2.0
ZYGOTE = "nbstage.entrypoints.session.session_zygote"


class SessionForkServer:
    def __init__(self, paths: StatePaths) -> None:
        self.paths = paths
        self.process: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        env = {
            **os.environ,
            EDGE_PID_ENV: str(os.getpid()),
            OWNER_ENV: str(os.getpid()),
            SOCKET_ENV: str(self.paths.session_zygote),
            PAD_ENV: " " * ROOM,
        }
        try:
            self.process = await asyncio.create_subprocess_exec(
                *module_command(ZYGOTE),
                " " * ROOM,
                stdin=asyncio.subprocess.DEVNULL,
                env=env,
                start_new_session=True,
            )
        except OSError as exc:
            log.warning("no session fork server: %s", exc)
            return
        log.info("session fork server started (pid %d)", self.process.pid)

    async def stop(self) -> None:
        process, self.process = self.process, None
        if process is None or process.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            process.terminate()
        try:
            await asyncio.wait_for(process.wait(), STOP_GRACE)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await process.wait()
