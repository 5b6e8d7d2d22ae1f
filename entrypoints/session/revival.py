"""A session child brings back a daemon that died under it, when its `nbstage mcp` was
started with autostart on (the default).

The link to the daemon is tried again every few hundred ms (actors/session/
daemon_upkeep.py). A refusal whose socket file is there but takes no connection is a
daemon that may have died (SIGKILL, a crash, the OOM killer): the same revival as the
Lab edge's (entrypoints/control/daemon_revival.py) looks closer and starts one only if
the daemon the state dir last stamped is gone, detached and one for all clients, as
autostart does. A missing socket is a daemon stopped on purpose and stays stopped, as a
daemon another `nbstage mcp --no-autostart` client (the harness's) finds. A daemon that
refused its settings at its start is started once they read again (a person mended
`config.toml`), as the client's autostart would have. The next link try after a start
rejoins as after any restart. A revival that started a daemon which did not come up
rests the child (``Rest``, shared with the Lab edge): refusals start none for a while.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from enum import StrEnum

from nbstage.entrypoints.common.revival_rest import Rest

log = logging.getLogger("nbstage.session")


class Why(StrEnum):
    DIED = "died"
    """The socket refuses: the daemon may have died; it is started only if it did."""
    MENDED = "mended"
    """The settings a daemon refused at its start read now: one is started."""


def wants_revival(
    refusal: BaseException, autostart: bool, reviving: bool, resting: bool, mended: bool
) -> Why | None:
    """Whether a refused link calls for a look at the daemon (and maybe a start), and why."""
    if not autostart or reviving:
        return None
    if mended:
        return Why.MENDED
    if resting or not isinstance(refusal, ConnectionRefusedError):
        return None
    return Why.DIED


class Revival:
    """At most one revival at a time, on a thread of its own: it may wait up to a minute
    for a daemon to answer, and a child that stops must not wait for it."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.running = False
        self.rest = Rest(loop.time)

    @property
    def resting(self) -> bool:
        return self.rest.on

    def start(self, state_dir: str, why: Why) -> None:
        self.running = True
        thread = threading.Thread(target=self._run, args=(state_dir, why), daemon=True)
        thread.name = "daemon-revival"
        thread.start()

    def _run(self, state_dir: str, why: Why = Why.DIED) -> None:
        from nbstage.entrypoints.common.statedir import state_paths
        from nbstage.entrypoints.control.daemon_revival import Asker, revive

        failed = False
        try:
            paths = state_paths(state_dir)
            revived = revive(paths, Asker.PAGE if why is Why.MENDED else Asker.LINK_LOST)
            word = "answers" if revived.alive else "is away"
            log.info("after a refused link the daemon %s", word)
            failed = revived.rest
        except Exception:
            log.exception("the daemon's revival failed")
            failed = True
        finally:
            with contextlib.suppress(RuntimeError):  # the child ended meanwhile
                self.loop.call_soon_threadsafe(self._ended, failed)

    def _ended(self, failed: bool) -> None:
        self.running = False
        if failed:
            self.rest.begin()
