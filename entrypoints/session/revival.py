"""A session child brings back a daemon that died under it, when its `nbstage mcp` was
started with autostart on (the default).

The link to the daemon is tried again every few hundred ms (actors/session/
daemon_upkeep.py). A refusal whose socket file is there but takes no connection is a
daemon that may have died (SIGKILL, a crash, the OOM killer): the same revival as the
Lab edge's (entrypoints/control/daemon_revival.py) looks closer and starts one only if
the daemon the state dir last stamped is gone, detached and one for all clients, as
autostart does. A missing socket is a daemon stopped on purpose and stays stopped, as a
daemon another `nbstage mcp --no-autostart` client (the harness's) finds. The next link
try after the start rejoins as after any restart.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading

log = logging.getLogger("nbstage.session")


REST_SECS = 60.0
"""After a revival that started a daemon and found it dead again (one that dies as it
starts), how long refusals start no other: a crash at start is not relaunched every
few seconds for as long as the client runs. A revival that started nothing (the daemon
was stopped on purpose meanwhile, or is still stopping) does not rest."""


def wants_revival(refusal: BaseException, autostart: bool, reviving: bool, resting: bool) -> bool:
    """Whether a refused link calls for a look at the daemon (and maybe a start)."""
    if not autostart or reviving or resting:
        return False
    return isinstance(refusal, ConnectionRefusedError)


class Revival:
    """At most one revival at a time, on a thread of its own: it may wait up to a minute
    for a daemon to answer, and a child that stops must not wait for it."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.running = False
        self.rest_until = 0.0

    @property
    def resting(self) -> bool:
        return self.loop.time() < self.rest_until

    def start(self, state_dir: str) -> None:
        self.running = True
        thread = threading.Thread(target=self._run, args=(state_dir,), daemon=True)
        thread.name = "daemon-revival"
        thread.start()

    def _run(self, state_dir: str) -> None:
        from nbstage.entrypoints.common.statedir import state_paths
        from nbstage.entrypoints.control.daemon_revival import Asker, SocketState, probe, revive

        failed = False
        try:
            paths = state_paths(state_dir)
            alive = revive(paths, Asker.LINK_LOST)
            log.info("after a refused link the daemon %s", "answers" if alive else "is away")
            # Started and dead again (not stopped on purpose, not still stopping): rest.
            failed = not alive and probe(paths) is SocketState.DEAD
        except Exception:
            log.exception("the daemon's revival failed")
            failed = True
        finally:
            with contextlib.suppress(RuntimeError):  # the child ended meanwhile
                self.loop.call_soon_threadsafe(self._ended, failed)

    def _ended(self, failed: bool) -> None:
        self.running = False
        if failed:
            self.rest_until = self.loop.time() + REST_SECS
