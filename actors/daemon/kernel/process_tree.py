"""Every process a kernel started, found and ended with it.

jupyter_client ends a kernel by killing its process group, and a cell's child in a
session of its own (``subprocess.Popen(..., start_new_session=True)``) is not in it; once
the kernel is gone, that child is adopted by init and is nobody's descendant. So every
kernel runs with ``NBSTAGE_KERNEL_TAG`` in its environment, which its children inherit,
and ending a kernel ends every process of this user whose environment carries its tag,
as well as the kernel's descendants of the moment (a child may have cleared its
environment). A process that both left the session and cleared its environment escapes;
cgroups would catch it, but nbstage does not assume a delegated cgroup.

Blocking: it reads /proc. It runs on a Kernel's blocking lane.
"""

from __future__ import annotations

import contextlib
import os
import signal

from nbstage.actors.daemon.kernel.running_processes import each_process, running

TAG_ENV = "NBSTAGE_KERNEL_TAG"
ROUNDS = 10
"""Kill rounds before giving up: a round kills what it found, the next finds what they
forked meanwhile."""


def kernel_tag(kernel_id: str) -> str:
    """The tag of one kernel of this daemon: its pid makes it unique among daemons."""
    return f"{os.getpid()}-{kernel_id}"


def tagged_environ(tag: str, environ: dict[str, str] | None = None) -> dict[str, str]:
    return {**(os.environ if environ is None else environ), TAG_ENV: tag}


def tagged(tag: str, *, prefix: bool = False) -> set[int]:
    """The running processes of this user whose environment carries ``tag`` (or, with
    ``prefix``, a tag that starts so)."""
    ends = "" if prefix else "\0"
    marker = f"\0{TAG_ENV}={tag}{ends}".encode()
    return {
        pid for pid, environ in each_process("environ", os.getuid()) if marker in b"\0" + environ
    }


def descendants(pid: int | None) -> set[int]:
    if pid is None:
        return set()
    import psutil

    with contextlib.suppress(psutil.Error):
        return {child.pid for child in psutil.Process(pid).children(recursive=True)}
    return set()


def end_orphans_of(daemon_pid: int) -> set[int]:
    """SIGKILL what the kernels of the daemon ``daemon_pid``, SIGKILLed, left running. Only
    once that pid has ended (a zombie has: its kernels end with it): while it runs, so may
    its kernels, or the pid may be another daemon's now."""
    if running(daemon_pid):
        return set()
    return end_tree(f"{daemon_pid}-", None, prefix=True)


def end_tree(tag: str, root: int | None, *, prefix: bool = False) -> set[int]:
    """SIGKILL the kernel ``root`` (its caller reaps it), its descendants and every process
    tagged ``tag``, round after round until none is left; returns the pids killed."""
    killed: set[int] = set()
    for _ in range(ROUNDS):
        found = (tagged(tag, prefix=prefix) | descendants(root)) - killed
        if root is not None and root not in killed:
            found.add(root)
        if not found:
            break
        for pid in found:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        killed |= found
    return killed
