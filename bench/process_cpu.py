"""CPU time of the processes a bench started, by the tag in their environment.

On a loaded machine latency says as much about the neighbours as about the code; the CPU
seconds a server's processes spend per call do not depend on how long they waited for a
core. A server's processes are those whose environment carries one of its tags
(bench/peers.py sets ``TAG_ENV`` on every process it spawns, and their children inherit
it) and their descendants, whatever environment those were given.
"""

from __future__ import annotations

import contextlib
from collections.abc import Collection

import psutil
from peers import TAG_ENV, descendants, environ_of


def cpu_by_pid(tags: Collection[str]) -> dict[int, float]:
    """User plus system seconds of every live process of these tags, by pid."""
    found: dict[int, psutil.Process] = {}
    for proc in psutil.process_iter():
        if environ_of(proc).get(TAG_ENV) in tags:
            found[proc.pid] = proc
            found.update((child.pid, child) for child in descendants(proc.pid))
    seconds = {}
    for pid, proc in found.items():
        with contextlib.suppress(psutil.Error):
            times = proc.cpu_times()
            seconds[pid] = times.user + times.system
    return seconds


def spent(before: dict[int, float], after: dict[int, float]) -> float:
    """Seconds spent between two readings by the processes alive at the second (a process
    that began in between counts whole; one that ended in between is lost)."""
    return sum(now - before.get(pid, 0.0) for pid, now in after.items())
