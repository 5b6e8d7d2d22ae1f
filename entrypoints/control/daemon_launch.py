"""Starting a daemon for a client that finds none: `nbstage mcp`'s autostart.

It runs before the client loads its own code, so the daemon's start-up overlaps the
client's. The daemon runs in its foreground mode, with no `nbstage daemon start`
process in between, and is launched through `sh`, which exits at once: the daemon is
nobody's child here, and it outlives the client that started it.

Many clients started at once on a state dir with no daemon (32 agents, say) would each
launch one, and all but one would fail on the daemon's lock, each a Python start for
nothing. So the client that launches takes ``autostart.lock`` and hands it to the
daemon it launches, which lets it go once it listens; the lock also goes with a daemon
that dies before that (settings it refuses, a crash), so a later start is never kept
waiting by a launch that came to nothing. A client that finds the lock held launches
nothing and says ``Autostart.STARTING``: its edge then waits for the daemon's session
fork server rather than start its session child meanwhile (ADR 0009).
"""

from __future__ import annotations

import contextlib
import enum
import fcntl
import logging
import os
import socket
import subprocess
from collections.abc import Mapping

from nbstage.entrypoints.common.file_locks import held_elsewhere
from nbstage.entrypoints.common.ownership import Untrusted
from nbstage.entrypoints.common.python_command import module_command
from nbstage.entrypoints.common.runtime_dir import own_recorded
from nbstage.entrypoints.common.statedir import StatePaths, daemon_output, prepare
from nbstage.protocol.common.safe_files import open_private

log = logging.getLogger("nbstage.mcp")

WARM_KERNEL_ENV = "NBSTAGE_WARM_KERNEL"
"""Tells the daemon to launch a spare kernel at once (actors/daemon/kernel/spare_kernel.py): the
client
that starts it will most likely ask for a kernel next. Not passed on to kernels."""


AUTOSTART_LOCK_ENV = "NBSTAGE_AUTOSTART_LOCK_FD"
"""The descriptor of ``autostart.lock`` a launched daemon holds until it listens."""


class Autostart(enum.Enum):
    RUNNING = "running"
    """A daemon answers."""
    LAUNCHED = "launched"
    """This process launched one."""
    STARTING = "starting"
    """Another client is launching one now."""
    FAILED = "failed"
    """None answers and none could be launched."""


def daemon_answers(paths: StatePaths) -> bool:
    """Whether something listens on the socket the state dir records, in a dir that is
    this user's alone (a planted dir holds no daemon of ours)."""
    try:
        recorded = own_recorded(paths)
    except (OSError, Untrusted):
        return False
    if recorded is None:
        return False
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        try:
            probe.connect(str(recorded.socket))
        except OSError:
            return False
    return True


def start_daemon_unless_running(
    paths: StatePaths, environ: Mapping[str, str] | None = None
) -> Autostart:
    """Launch a detached daemon if nothing answers on the socket and no other client is
    launching one; never waits for it. ``environ``: the daemon's environment (default:
    this process's)."""
    if daemon_answers(paths):
        return Autostart.RUNNING
    try:
        prepare(paths)
        held = _launcher_lock(paths)
        if held is None:
            return Autostart.STARTING
        if daemon_answers(paths):
            os.close(held)
            return Autostart.RUNNING
        out = daemon_output(paths)
    except (OSError, Untrusted) as exc:
        log.error("could not start the daemon: %s", exc)
        return Autostart.FAILED
    daemon = [*module_command("nbstage.entrypoints.cli"), "daemon", "start", "--foreground"]
    base = os.environ if environ is None else environ
    try:
        with out:
            subprocess.run(
                ["/bin/sh", "-c", '"$@" &', "sh", *daemon, "--state-dir", str(paths.root)],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=out,
                start_new_session=True,
                env={**base, WARM_KERNEL_ENV: "1", AUTOSTART_LOCK_ENV: str(held)},
                pass_fds=(held,),
                check=False,
            )
    finally:
        os.close(held)
    return Autostart.LAUNCHED


def inherited_autostart_lock() -> int | None:
    """In a launched daemon, first of all: the descriptor of the launcher's
    ``autostart.lock``, kept from every process the daemon starts; None if the daemon
    was not launched by a client."""
    held = os.environ.pop(AUTOSTART_LOCK_ENV, "")
    if not held.isdigit():
        return None
    try:
        os.set_inheritable(int(held), False)
    except OSError:
        return None
    return int(held)


def let_autostart_go(held: int | None) -> None:
    """In a launched daemon that listens now: the lock goes, and so the next start."""
    if held is not None:
        with contextlib.suppress(OSError):
            os.close(held)


def launch_came_to_nothing(paths: StatePaths) -> bool:
    """For a client that found the launch under way: whether it ended with no daemon (the
    launched one died before it listened, taking ``autostart.lock`` with it)."""
    try:
        launching = held_elsewhere(paths.root / "autostart.lock")
    except (OSError, Untrusted):
        return False
    return not launching and not daemon_answers(paths)


def _launcher_lock(paths: StatePaths) -> int | None:
    """``autostart.lock`` taken, or None when another client holds it."""
    fd = open_private(paths.root / "autostart.lock", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    os.set_inheritable(fd, False)
    return fd
