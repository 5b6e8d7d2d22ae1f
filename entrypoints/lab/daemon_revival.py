"""The Lab edge brings back a daemon that died under it (issue 24 §5, ADR 0004).

When a room websocket's daemon connection ends, or a page asks for a notebook and no
daemon answers, the edge probes the state dir's socket. A socket file nobody listens
on is a daemon that died without cleaning up (SIGKILL, a crash, the OOM killer): the
edge starts one as ``nbstage mcp`` does (daemon_launch.py: detached, nobody's child),
waits until it answers, and opens again the notebooks its websockets had open, so the
rooms are back (journal replayed, ids kept) before any page reloads. A missing socket
is a daemon stopped on purpose (its stop removes it): a lost connection then leaves it
stopped, and only a page's own new request starts one again, as a new ``nbstage mcp``
would. Concurrent asks share one revival.

The websockets' Y history cannot be merged into the room the new daemon builds, so
each one is still closed with Jupyter's reloadable 1003 (handlers.py), after the
revival, so that the reload finds the daemon and the room up.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Callable, Iterable, Mapping
from enum import StrEnum

import orjson
import psutil

from nbstage.entrypoints.common.ownership import Untrusted
from nbstage.entrypoints.common.runtime_dir import own_recorded
from nbstage.entrypoints.common.statedir import StatePaths, state_paths
from nbstage.entrypoints.control.daemon_control import query_status
from nbstage.entrypoints.control.daemon_launch import start_daemon_unless_running
from nbstage.entrypoints.daemon.alive_stamp import ALIVE_FILE
from nbstage.entrypoints.lab.room_link import RoomLink, socket_path
from nbstage.protocol.common.safe_files import SMALL_FILE_BYTES, FileRefused, read_regular

log = logging.getLogger("nbstage.lab")

START_WAIT_SECS = 60.0
RESTART_SECS = 3.0
ANSWER_SECS = 2.0
POLL_SECS = 0.05


class SocketState(StrEnum):
    ANSWERS = "answers"
    DEAD = "dead"
    """The socket file is there and refuses: its daemon died without cleaning up."""
    ABSENT = "absent"
    """No socket (or none recorded): no daemon, or one stopped on purpose."""
    PENDING = "pending"
    """It does not answer, but the daemon the state dir last stamped still runs: it is
    stopping (a stop closes its connections before it removes its socket), starting,
    or being torn down by a SIGKILL. Waited for."""


class Asker(StrEnum):
    LINK_LOST = "link_lost"
    """A room websocket's daemon connection ended."""
    PAGE = "page"
    """A page asked for something (a session, a room, a run) and found no daemon."""


def should_start(state: SocketState, asker: Asker) -> bool:
    """Whether the edge starts a daemon."""
    if state is SocketState.DEAD:
        return True
    return state is SocketState.ABSENT and asker is Asker.PAGE


def probe(paths: StatePaths) -> SocketState:
    """Blocking: the state of the socket the state dir records. Only a daemon that
    answers a request counts as one: a SIGKILLed daemon's listening socket may still
    take a connection for a moment while its process is torn down."""
    try:
        recorded = own_recorded(paths)
    except (OSError, Untrusted):
        return SocketState.ABSENT
    if recorded is not None and recorded.socket.is_socket():
        try:
            if query_status(paths, timeout=ANSWER_SECS) is not None:
                return SocketState.ANSWERS
        except (OSError, Untrusted):
            pass
    if stamped_daemon_runs(paths):
        return SocketState.PENDING
    if recorded is None or not recorded.socket.is_socket():
        return SocketState.ABSENT
    return SocketState.DEAD


def stamped_daemon_runs(paths: StatePaths) -> bool:
    """Blocking: whether the daemon ``daemon.alive`` names is still a live process (not
    a zombie, and not another process that took its pid later)."""
    try:
        stamp = orjson.loads(read_regular(paths.root / ALIVE_FILE, SMALL_FILE_BYTES)[0])
        process = psutil.Process(int(stamp["pid"]))
        if process.status() == psutil.STATUS_ZOMBIE:
            return False
        return bool(process.create_time() <= float(stamp["started_at"]) + 1.0)
    except (OSError, FileRefused, psutil.Error, KeyError, TypeError, ValueError):
        return False


def _revive(paths: StatePaths, asker: Asker) -> bool:
    """Blocking: start a daemon if ``should_start`` says so and wait until it answers;
    whether one answers at the end. The start is tried again every few seconds while
    nothing answers (one whose socket was still taking connections as it died is not
    started over by daemon_launch; a second start loses the state dir's lock and exits)."""
    deadline = time.monotonic() + START_WAIT_SECS
    while (state := probe(paths)) is SocketState.PENDING and time.monotonic() < deadline:
        time.sleep(POLL_SECS)
    if state is SocketState.ANSWERS:
        return True
    if not should_start(state, asker):
        log.info("the daemon is %s; not starting one for a %s", state, asker)
        return False
    log.warning("the daemon's socket is %s; starting a daemon", state)
    next_start = 0.0
    while (now := time.monotonic()) < deadline:
        if now >= next_start:
            start_daemon_unless_running(paths, daemon_environ(os.environ))
            next_start = now + RESTART_SECS
        if probe(paths) is SocketState.ANSWERS:
            log.info("the daemon answers again")
            return True
        time.sleep(POLL_SECS)
    log.error("no daemon answered within %.0fs", START_WAIT_SECS)
    return False


LAB_SECRETS = ("JUPYTER_TOKEN", "JPY_API_TOKEN")
"""Lab's own secrets in its environment, which a daemon it starts (and the kernels that
daemon starts, where an agent's code runs) must not inherit."""


def daemon_environ(environ: Mapping[str, str]) -> dict[str, str]:
    return {name: value for name, value in environ.items() if name not in LAB_SECRETS}


class DaemonRevival:
    """One per Lab process: the revival under way, which every ask awaits, and the
    notebooks to open again once the daemon answers."""

    def __init__(self) -> None:
        self._running: asyncio.Task[bool] | None = None
        self._asker = Asker.LINK_LOST
        self._notebooks: dict[str, None] = {}

    async def ensure(self, asker: Asker, notebooks: Iterable[str] = ()) -> bool:
        """Whether a daemon answers, after starting one if it died (or, for a page, if
        none runs); the ``notebooks`` (paths) are opened again in a daemon just started."""
        self._notebooks.update(dict.fromkeys(notebooks))
        running = self._running
        if running is not None and not running.done():
            alive = await asyncio.shield(running)
            if alive or asker is not Asker.PAGE or self._asker is Asker.PAGE:
                return alive
        running = self._running = asyncio.ensure_future(self._run(asker))
        self._asker = asker
        return await asyncio.shield(running)

    async def _run(self, asker: Asker) -> bool:
        paths = state_paths(os.environ.get("NBSTAGE_STATE_DIR") or None)
        alive = await asyncio.to_thread(_revive, paths, asker)
        notebooks, self._notebooks = list(self._notebooks), {}
        if alive:
            await reopen(notebooks)
        return alive


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
    except (FileNotFoundError, ConnectionRefusedError):
        if not await REVIVAL.ensure(Asker.PAGE):
            raise
    return await RoomLink.open(socket_path(), on_push, on_lost)
