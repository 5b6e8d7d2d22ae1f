"""What kernels leave in the daemon's kernel dir, and how it is cleaned up.

Each kernel's IOPub pipe is an IPC socket named after the kernel's pid
(``kernel_launcher.py``); a kernel that is killed cannot remove it.
"""

from __future__ import annotations

from pathlib import Path

PIPE_PREFIX = "pipe-"


def pipe_socket(kernel_dir: Path, pid: int) -> Path:
    return kernel_dir / f"{PIPE_PREFIX}{pid}"


def sweep_kernel_dir(kernel_dir: Path) -> list[str]:
    """Remove the pipe sockets of kernels that no longer run; returns their names."""
    removed = []
    for pipe in kernel_dir.glob(f"{PIPE_PREFIX}*"):
        pid = pipe.name.removeprefix(PIPE_PREFIX)
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            pipe.unlink(missing_ok=True)
            removed.append(pipe.name)
    return removed
