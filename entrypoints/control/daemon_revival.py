"""A daemon that died brought back by a client of it: the Lab edge (issue 24 §5, ADR
0004) and the session child of an `nbstage mcp` with autostart on.

A client probes the state dir's socket. A socket file nobody listens on is a daemon that
died without cleaning up (SIGKILL, a crash, the OOM killer): the client starts one as
``nbstage mcp`` does (daemon_launch.py: detached, nobody's child, one launch for many
clients through ``autostart.lock``) and waits until it answers. A missing socket is a
daemon stopped on purpose (its stop removes it): a lost link then leaves it stopped; only
a page's own new request starts one again, as a new ``nbstage mcp`` would. A daemon that
does not answer while the one the state dir last stamped still runs is stopping or
starting: it is waited for, never started over. Settings the daemon would refuse (it
exits 78 before it listens) start none, and the revival says why. A revival that
started a daemon and found none answering at its end (one that dies as it starts) puts
its client at rest for ``REST_SECS``: that client starts none meanwhile, so a daemon
that cannot start is not launched again at every refused link or page.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

import orjson
import psutil

from nbstage.entrypoints.common.lifelines import EDGE_PID_ENV
from nbstage.entrypoints.common.ownership import Untrusted
from nbstage.entrypoints.common.revival_rest import REST_SECS
from nbstage.entrypoints.common.runtime_dir import own_recorded
from nbstage.entrypoints.common.statedir import LINK_STATE_DIR_ENV, StatePaths
from nbstage.entrypoints.control.daemon_control import query_status
from nbstage.entrypoints.control.daemon_launch import start_daemon_unless_running
from nbstage.entrypoints.daemon.alive_stamp import ALIVE_FILE
from nbstage.protocol.common.safe_files import SMALL_FILE_BYTES, FileRefused, read_regular
from nbstage.protocol.session.session_frames import SESSION_FD_ENV

log = logging.getLogger("nbstage.revival")


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
    """A client's daemon connection ended or was refused: a room websocket's in Lab, a
    session child's."""
    PAGE = "page"
    """A page asked for something (a session, a room, a run) and found no daemon."""


@dataclass(frozen=True)
class Revived:
    alive: bool
    """A daemon answers at the end."""
    rest: bool
    """A daemon was started and none answers at the end, nor is one coming up: its
    client rests (entrypoints/common/revival_rest.py)."""
    problem: str | None = None
    """Why none was started: the settings a daemon would refuse (config.toml, say)."""


def should_start(state: SocketState, asker: Asker, resting: bool = False) -> bool:
    """Whether the client starts a daemon."""
    if resting:
        return False
    if state is SocketState.DEAD:
        return True
    return state is SocketState.ABSENT and asker is Asker.PAGE


def rests_after_start(state: SocketState) -> bool:
    """Whether a daemon started and waited for, with the socket in ``state`` at the end of
    the wait, puts its client at rest. A dead socket is one that died again; a missing one
    is a daemon that exited before it listened (a page's start begins from no socket); a
    pending one is still coming up, and one that answers is up."""
    return state in (SocketState.DEAD, SocketState.ABSENT)


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


def revive(
    paths: StatePaths,
    asker: Asker,
    resting: bool = False,
    stopping: threading.Event | None = None,
) -> Revived:
    """Blocking: start a daemon if ``should_start`` says so and wait until it answers.
    The start is tried again every few seconds while nothing answers (one whose socket
    was still taking connections as it died is not started over by daemon_launch; a
    second start loses the state dir's lock and exits). ``stopping``, once set, ends the
    wait within a poll (the client is stopping: a thread still waiting would hold its
    process's exit)."""
    stopping = stopping or threading.Event()
    deadline = time.monotonic() + START_WAIT_SECS
    while (state := probe(paths)) is SocketState.PENDING and time.monotonic() < deadline:
        if stopping.wait(POLL_SECS):
            return Revived(alive=False, rest=False)
    if state is SocketState.ANSWERS:
        return Revived(alive=True, rest=False)
    if not should_start(state, asker, resting):
        at_rest = " (at rest after a daemon that did not start)" if resting else ""
        log.info("the daemon is %s; not starting one for a %s%s", state, asker, at_rest)
        return Revived(alive=False, rest=False)
    if (problem := _settings_problem(paths)) is not None:
        log.error("not starting a daemon: it would refuse its settings: %s", problem)
        return Revived(alive=False, rest=False, problem=problem)
    log.warning("the daemon's socket is %s; starting a daemon", state)
    next_start = 0.0
    while (now := time.monotonic()) < deadline:
        if now >= next_start:
            start_daemon_unless_running(paths, daemon_environ(os.environ))
            next_start = now + RESTART_SECS
        if probe(paths) is SocketState.ANSWERS:
            log.info("the daemon answers again")
            return Revived(alive=True, rest=False)
        if stopping.wait(POLL_SECS):
            log.info("the client stops; no longer waiting for a daemon")
            return Revived(alive=False, rest=False)
    state = probe(paths)
    if state is SocketState.ANSWERS:
        return Revived(alive=True, rest=False)
    rest = rests_after_start(state)
    log.error(
        "no daemon answered within %.0fs%s",
        START_WAIT_SECS,
        f"; none is started again for {REST_SECS:.0f}s" if rest else "",
    )
    return Revived(alive=False, rest=rest)


def _settings_problem(paths: StatePaths) -> str | None:
    """Why a daemon started here would refuse its settings (it exits 78 before it
    listens), read as the daemon would read them; a client tells its person that."""
    from nbstage.protocol.common.settings import settings_problem

    return settings_problem(paths.root, daemon_environ(os.environ))


NOT_FOR_A_DAEMON = (
    "JUPYTER_TOKEN",
    "JPY_API_TOKEN",
    EDGE_PID_ENV,
    LINK_STATE_DIR_ENV,
    SESSION_FD_ENV,
)
"""What a client that starts a daemon holds in its environment that the daemon must not
inherit: Lab's own secrets (the daemon's kernels, where an agent's code runs, inherit its
environment), and the marks of the client's own process tree: its edge's pid, by which
parent-death guards and sweeps find that tree's processes, and its links' state dir and
socket."""


def daemon_environ(environ: Mapping[str, str]) -> dict[str, str]:
    return {name: value for name, value in environ.items() if name not in NOT_FOR_A_DAEMON}
