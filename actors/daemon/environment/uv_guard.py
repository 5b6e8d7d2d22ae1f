"""Run one command for no longer than the process that asked for it: nbstage's uv runs.

``python -I -S uv_guard.py OWNER_PID COMMAND...`` starts COMMAND in a process group of its
own and waits, on two pidfds, for whichever ends first: COMMAND, or OWNER_PID (the
daemon). If the owner goes first, however it died, the guard kills COMMAND's whole group,
so a ``uv pip install`` and the build backends it started stop with the daemon. SIGTERM
to the guard does the same (a build given up on).

uv runs start on the daemon's worker threads, and PR_SET_PDEATHSIG fires when the parent
*thread* ends, not the process: it could not tie uv to the daemon directly. Here it ties
COMMAND to this single-threaded guard, so COMMAND dies too if the guard is killed
outright.

Run by its path under nbstage's own interpreter; it imports nothing of nbstage.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import select
import signal
import subprocess
import sys

_PR_SET_PDEATHSIG = 1
OWNER_GONE = 1


def _end_group(group: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(group, signal.SIGKILL)


def _exit_code(returncode: int) -> int:
    return returncode if returncode >= 0 else 128 - returncode


def main(argv: list[str]) -> int:
    owner, command = int(argv[1]), argv[2:]
    try:
        owner_fd = os.pidfd_open(owner)
    except ProcessLookupError:
        return OWNER_GONE
    prctl = ctypes.CDLL(None, use_errno=True).prctl
    guard = os.getpid()
    started: list[int] = []

    def tied_to_guard() -> None:
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != guard:
            os._exit(OWNER_GONE)

    def stop(signum: int, frame: object) -> None:
        for group in started:
            _end_group(group)
        os._exit(128 + signum)

    signal.signal(signal.SIGTERM, stop)
    child = subprocess.Popen(
        command, stdin=subprocess.DEVNULL, start_new_session=True, preexec_fn=tied_to_guard
    )
    started.append(child.pid)
    child_fd = os.pidfd_open(child.pid)
    ready, _, _ = select.select([owner_fd, child_fd], [], [])
    if child_fd not in ready:
        _end_group(child.pid)
        child.wait()
        return OWNER_GONE
    # Waited for without reaping: while it is a zombie, its group id cannot be reused, so
    # what it left running in its group is ended and nothing else.
    os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)
    _end_group(child.pid)
    return _exit_code(child.wait())


if __name__ == "__main__":
    sys.exit(main(sys.argv))
