"""CPU time of the processes a bench started, by the tag in their environment.

On a loaded machine latency says as much about the neighbours as about the code; the CPU
seconds a server's processes spend per call do not depend on how long they waited for a
core. A server's processes are those whose environment carries one of its tags
(bench/peers.py sets ``TAG_ENV`` on every process it spawns, and their children inherit
it) and their descendants, whatever environment those were given. Each is put in a kind
by its command line, which names its role in any revision's layout.
"""

from __future__ import annotations

import contextlib
from collections.abc import Collection
from pathlib import Path

import psutil
from peers import TAG_ENV, descendants, environ_of


def kind_of(args: list[str]) -> str:
    """The role a command line names, by whole arguments (a kernel's paths may hold the
    word "daemon"): the edge, the session child, the daemon, jupymcp's server; any other
    process of a server is a kernel (or its zygote)."""
    if "mcp" in args or any(a.endswith("mcp_main") for a in args):
        return "edge"
    if any(a.endswith(("session_main", "session_zygote")) for a in args):
        return "session"
    if "daemon" in args:
        return "daemon"
    if any(Path(a).name == "jupymcp" for a in args):
        return "jupymcp"
    return "kernel"


def cpu_by_pid(tags: Collection[str]) -> dict[int, tuple[str, float]]:
    """The kind and user plus system seconds of every live process of these tags."""
    found: dict[int, psutil.Process] = {}
    for proc in psutil.process_iter():
        if environ_of(proc).get(TAG_ENV) in tags:
            found[proc.pid] = proc
            found.update((child.pid, child) for child in descendants(proc.pid))
    seconds = {}
    for pid, proc in found.items():
        with contextlib.suppress(psutil.Error):
            times = proc.cpu_times()
            seconds[pid] = (kind_of(proc.cmdline()), times.user + times.system)
    return seconds


def spent(
    before: dict[int, tuple[str, float]], after: dict[int, tuple[str, float]]
) -> dict[str, float]:
    """Seconds spent between two readings by kind, by the processes alive at the second (a
    process that began in between counts whole; one that ended in between is lost)."""
    by_kind: dict[str, float] = {}
    for pid, (kind, now) in after.items():
        by_kind[kind] = by_kind.get(kind, 0.0) + now - before.get(pid, (kind, 0.0))[1]
    return by_kind
