"""What kernels leave in the daemon's kernel dir, and how it is cleaned up.

Each kernel's IOPub pipe is an IPC socket named after the kernel's pid
(``kernel_launcher.py``); a kernel that is killed cannot remove it. Nor can a killed
daemon remove its kernels' connection files (``<kernel id>.json``, which hold the key
that signs every message to the kernel) or their IPC sockets (``<kernel id>-<n>``).

A kernel is alive while some process names its connection file on its command line
(``-f FILE``: the kernel itself, or the ``uv run`` in front of it). The sweep keeps
those files whoever started the kernel: a daemon that starts while its predecessor's
kernels are still ending, or the spare kernel this daemon launched before the sweep.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Collection
from pathlib import Path

from nbstage.actors.daemon.kernel.running_processes import each_process, exists

PIPE_PREFIX = "pipe-"
CONNECTION_SUFFIX = ".json"


def pipe_socket(kernel_dir: Path, pid: int) -> Path:
    return kernel_dir / f"{PIPE_PREFIX}{pid}"


def sweep_kernel_dir(kernel_dir: Path) -> list[str]:
    """Remove what kernels that no longer run left in ``kernel_dir``; returns the names."""
    removed = []
    for pipe in kernel_dir.glob(f"{PIPE_PREFIX}*"):
        pid = pipe.name.removeprefix(PIPE_PREFIX)
        if pid.isdigit() and not exists(int(pid)):
            pipe.unlink(missing_ok=True)
            removed.append(pipe.name)
    names = _names(kernel_dir)
    for name in files_of_dead_kernels(names, named_on_command_lines(kernel_dir)):
        (kernel_dir / name).unlink(missing_ok=True)
        removed.append(name)
    return removed


def files_of_dead_kernels(names: Collection[str], alive: Collection[str]) -> list[str]:
    """Of the file ``names`` in a kernel dir, the connection files not in ``alive`` and the
    IPC sockets (``<stem>-<port>``) of each."""
    dead = {
        name.removesuffix(CONNECTION_SUFFIX)
        for name in names
        if name.endswith(CONNECTION_SUFFIX) and name not in alive
    }
    return sorted(name for name in names if _kernel_of(name) in dead)


def _kernel_of(name: str) -> str:
    if name.endswith(CONNECTION_SUFFIX):
        return name.removesuffix(CONNECTION_SUFFIX)
    stem, _, port = name.rpartition("-")
    return stem if port.isdigit() else ""


def named_on_command_lines(kernel_dir: Path) -> set[str]:
    """The names of the files in ``kernel_dir`` that a running process has on its command
    line (alone, or as ``--f=FILE``)."""
    inside = f"{kernel_dir}/".encode()
    found = set()
    for _, command_line in each_process("cmdline"):
        for arg in command_line.split(b"\0"):
            at = arg.find(inside)
            if at == 0 or (at > 0 and arg[at - 1 : at] == b"="):
                found.add(os.fsdecode(arg[at + len(inside) :]))
    return found


def _names(kernel_dir: Path) -> list[str]:
    with contextlib.suppress(FileNotFoundError):
        return [entry.name for entry in os.scandir(kernel_dir) if not entry.is_dir()]
    return []
