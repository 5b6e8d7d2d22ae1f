"""How `nbstage mcp` starts its session child: forked by the daemon's session fork server
(``session_zygote.py``, ADR 0009) when there is one, else the plain way.

A forked child has its modules imported already. A child that is not the
edge's own cannot be waited for, so the edge holds it by a pidfd (to signal it, and to
learn that it ended) and reads its exit status from a pipe the child writes as it exits.
Any failure to get one (no daemon, no fork server yet, a refusal) returns None, and the
edge starts its child the plain way.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
import sys
import time

import orjson

from nbstage.entrypoints.common.lifelines import EDGE_PID_ENV
from nbstage.entrypoints.common.ownership import Untrusted, check_peer
from nbstage.entrypoints.common.python_command import isolation_flags, module_command
from nbstage.entrypoints.common.statedir import LINK_STATE_DIR_ENV, StatePaths, recorded_paths
from nbstage.entrypoints.control.daemon_launch import launch_came_to_nothing
from nbstage.entrypoints.session.session_zygote import PACKAGE
from nbstage.protocol.common.safe_files import write_private
from nbstage.protocol.session.session_frames import SESSION_FD_ENV

log = logging.getLogger("nbstage.edge")

REPLY_SECS = 5.0
"""A fork takes milliseconds; many edges at once queue at the one fork server."""
KILLED = -int(signal.SIGKILL)
"""The status of a child that ended without writing one: a signal ended it (which one is
its parent's to know, the fork server's)."""
SESSION_MAIN = "nbstage.entrypoints.session.session_main"
FORK_SERVER_WAIT_SECS = 15.0
"""How long the first child of a client that found another client starting the daemon
waits for the daemon's fork server: the daemon's start, then its fork server's, under
the load of the clients starting beside it."""
FORK_SERVER_POLL_SECS = 0.05


class ForkedSessionChild:
    """What the edge uses of ``asyncio.subprocess.Process`` (``pid``, ``wait``, ``kill``),
    for a child the fork server made."""

    def __init__(self, pid: int, pidfd: int, exits: int) -> None:
        self.pid = pid
        self.returncode: int | None = None
        self._pidfd = pidfd
        self._exits = exits
        self._ended: asyncio.Future[int] | None = None

    async def wait(self) -> int:
        """The child's exit status, once it has ended; any number of callers may wait."""
        if self._ended is None:
            loop = asyncio.get_running_loop()
            self._ended = loop.create_future()
            loop.add_reader(self._pidfd, self._on_end)
        return await asyncio.shield(self._ended)

    def _on_end(self) -> None:
        asyncio.get_running_loop().remove_reader(self._pidfd)
        os.close(self._pidfd)
        self.returncode = self._status()
        if self._ended is not None and not self._ended.done():
            self._ended.set_result(self.returncode)

    def _status(self) -> int:
        try:
            written = os.read(self._exits, 16)
        except BlockingIOError:
            written = b""
        finally:
            os.close(self._exits)
        try:
            return int(written)
        except ValueError:
            return KILLED

    def kill(self) -> None:
        if self.returncode is None:
            with contextlib.suppress(ProcessLookupError, OSError):
                signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)


ChildProcess = asyncio.subprocess.Process | ForkedSessionChild


async def start(
    paths: StatePaths, await_fork_server: bool = False
) -> tuple[ChildProcess, socket.socket] | None:
    """A session child and the edge's end of its socketpair, or None if none could start.
    ``await_fork_server``: another client is starting the daemon; wait (at most
    ``FORK_SERVER_WAIT_SECS``) for its fork server to listen."""
    if await_fork_server:
        await _fork_server_listens(paths)
    return await _forked(paths) or await _plain(paths)


async def _fork_server_listens(paths: StatePaths) -> None:
    with contextlib.suppress(OSError):
        await asyncio.to_thread(write_private, paths.forks_wanted, b"")
    deadline = time.monotonic() + FORK_SERVER_WAIT_SECS
    while time.monotonic() < deadline:
        if await asyncio.to_thread(_listens, paths):
            return
        if await asyncio.to_thread(launch_came_to_nothing, paths):
            log.info("the daemon another client launched is gone: the child starts plainly")
            return
        await asyncio.sleep(FORK_SERVER_POLL_SECS)
    log.info("no session fork server after %.0f s: the child starts plainly", FORK_SERVER_WAIT_SECS)


def _listens(paths: StatePaths) -> bool:
    try:
        return recorded_paths(paths).session_zygote.exists()
    except (OSError, Untrusted):
        return False


def _child_env(paths: StatePaths) -> dict[str, str]:
    return {**os.environ, EDGE_PID_ENV: str(os.getpid()), LINK_STATE_DIR_ENV: str(paths.root)}


async def _forked(paths: StatePaths) -> tuple[ChildProcess, socket.socket] | None:
    ours, theirs = socket.socketpair()
    try:
        process = await forked_child(paths, module_command(SESSION_MAIN), _child_env(paths), theirs)
    finally:
        theirs.close()
    if process is None:
        ours.close()
        return None
    return process, ours


async def _plain(paths: StatePaths) -> tuple[ChildProcess, socket.socket] | None:
    ours, theirs = socket.socketpair()
    env = {**_child_env(paths), SESSION_FD_ENV: str(theirs.fileno())}
    try:
        process = await asyncio.create_subprocess_exec(
            *module_command(SESSION_MAIN),
            stdin=asyncio.subprocess.DEVNULL,
            pass_fds=(theirs.fileno(),),
            env=env,
        )
    except OSError:
        log.exception("could not start the session child")
        ours.close()
        return None
    finally:
        theirs.close()
    return process, ours


async def forked_child(
    paths: StatePaths, argv: list[str], env: dict[str, str], theirs: socket.socket
) -> ForkedSessionChild | None:
    """A session child forked for this edge, serving ``theirs``, or None."""
    exits, exit_w = os.pipe()
    try:
        found = await asyncio.to_thread(_ask, paths, argv, env, [theirs.fileno(), 2, exit_w])
    except (OSError, ValueError, KeyError, TypeError, Untrusted) as exc:
        log.debug("no forked session child: %r", exc)
        found = None
    finally:
        os.close(exit_w)
    if found is None:
        os.close(exits)
        return None
    os.set_blocking(exits, False)
    pid, pidfd = found
    return ForkedSessionChild(pid, pidfd, exits)


def _ask(
    paths: StatePaths, argv: list[str], env: dict[str, str], fds: list[int]
) -> tuple[int, int] | None:
    request = {
        "argv": argv,
        "env": env,
        "cwd": os.getcwd(),
        "python": sys.executable,
        "package": str(PACKAGE),
        "flags": isolation_flags(sys.flags),
    }
    with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as channel:
        channel.settimeout(REPLY_SECS)
        channel.connect(str(recorded_paths(paths).session_zygote))
        check_peer(channel, "the session fork server")
        socket.send_fds(channel, [orjson.dumps(request)], fds)
        reply, got, _, _ = socket.recv_fds(channel, 4096, 1)
    answer = orjson.loads(reply) if reply else {"refused": "no reply"}
    if "pid" not in answer or len(got) != 1:
        for fd in got:
            os.close(fd)
        log.info("the session fork server refused: %s", answer.get("refused"))
        return None
    return int(answer["pid"]), got[0]
