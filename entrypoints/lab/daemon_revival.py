"""The Lab edge brings back a daemon that died under it (issue 24 §5, ADR 0004).

When a room websocket's daemon connection ends, or a page asks for a notebook and no
daemon answers, the edge probes the state dir's socket. A socket file nobody listens
on is a daemon that died without cleaning up (SIGKILL, a crash, the OOM killer): the
edge starts one as ``nbstage mcp`` does (daemon_launch.py: detached, nobody's child),
waits until it answers, and opens again the notebooks its websockets had open, so the
rooms are back (journal replayed, ids kept) before any page reloads. A missing socket
is a daemon stopped on purpose (its stop removes it): a lost connection then leaves it
stopped, and only a page's own new request starts one again, as a new ``nbstage mcp``
would. Concurrent asks share one revival. Settings a daemon would refuse start none
(the page is told why). A revival that started a daemon which did not come up (a crash
at start) rests the edge, as it does a session child (``Rest``): for ``REST_SECS`` no
websocket or page starts one; a daemon someone else starts meanwhile is found all the
same.

The websockets' Y history cannot be merged into the room the new daemon builds, so
each one is still closed with Jupyter's reloadable 1003 (handlers.py), after the
revival, so that the reload finds the daemon and the room up.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable

from nbstage.entrypoints.common.ownership import Untrusted
from nbstage.entrypoints.common.revival_rest import Rest
from nbstage.entrypoints.common.statedir import state_paths
from nbstage.entrypoints.control.daemon_revival import Asker, revive
from nbstage.entrypoints.lab.room_link import RoomLink, socket_path

log = logging.getLogger("nbstage.lab")


class DaemonRevival:
    """One per Lab process: the revival under way, which every ask awaits, and the
    notebooks to open again once the daemon answers."""

    def __init__(self) -> None:
        self._running: asyncio.Task[bool] | None = None
        self._asker = Asker.LINK_LOST
        self._notebooks: dict[str, None] = {}
        self.rest = Rest(time.monotonic)
        self.stopping = threading.Event()
        self.problem: str | None = None
        """Why the last revival started no daemon: settings it would refuse."""

    async def ensure(self, asker: Asker, notebooks: Iterable[str] = ()) -> bool:
        """Whether a daemon answers, after starting one if it died (or, for a page, if
        none runs); the ``notebooks`` (paths) are opened again in a daemon just started."""
        if self.stopping.is_set():
            return False
        self._notebooks.update(dict.fromkeys(notebooks))
        running = self._running
        if running is not None and not running.done():
            alive = await asyncio.shield(running)
            if alive or asker is not Asker.PAGE or self._asker is Asker.PAGE:
                return alive
        running = self._running = asyncio.ensure_future(self._run(asker))
        self._asker = asker
        return await asyncio.shield(running)

    async def stop(self) -> None:
        """At the server's stop: the revival under way ends its wait (its thread would
        hold the process's exit for up to a minute) and starts nothing more."""
        self.stopping.set()
        if self._running is not None:
            await asyncio.gather(self._running, return_exceptions=True)

    async def _run(self, asker: Asker) -> bool:
        paths = state_paths(os.environ.get("NBSTAGE_STATE_DIR") or None)
        revived = await asyncio.to_thread(revive, paths, asker, self.rest.on, self.stopping)
        if revived.rest:
            self.rest.begin()
        self.problem = revived.problem
        notebooks, self._notebooks = list(self._notebooks), {}
        if revived.alive and not self.stopping.is_set():
            await reopen(notebooks)
        return revived.alive


async def reopen(notebooks: Iterable[str]) -> None:
    """Open each notebook in the daemon again (its room starts, from the file and the
    journal); a failure is logged, the page's reload will say it again."""
    from nbstage.entrypoints.control.daemon_client import DaemonError
    from nbstage.entrypoints.lab.execution import PERSON_LABEL

    for path in dict.fromkeys(notebooks):
        try:
            link = await RoomLink.open(socket_path())
        except (OSError, Untrusted) as exc:
            log.warning("could not reopen %s: %s", path, exc)
            return
        try:
            await link.request("open", path=path, peer_label=PERSON_LABEL)
        except (DaemonError, ConnectionError) as exc:
            log.warning("could not reopen %s: %s", path, exc)
        finally:
            link.close()


REVIVAL = DaemonRevival()


async def open_link(
    on_push: Callable[[list[str]], None] = lambda _: None,
    on_lost: Callable[[], None] = lambda: None,
) -> RoomLink:
    """A daemon link for a page's request; a daemon is started first if none answers.
    Raises OSError or Untrusted, as RoomLink.open does, when none can be had."""
    try:
        return await RoomLink.open(socket_path(), on_push, on_lost)
    except (FileNotFoundError, ConnectionRefusedError) as exc:
        if not await REVIVAL.ensure(Asker.PAGE):
            if REVIVAL.problem is not None:
                raise ConnectionRefusedError(f"it cannot start: {REVIVAL.problem}") from exc
            raise
    return await RoomLink.open(socket_path(), on_push, on_lost)
