"""What kernels leave behind, swept as the daemon starts and once it has stopped.

Blocking: each reads /proc or the kernel dir; the edge runs them on worker threads.
"""

from __future__ import annotations

import contextlib
import logging
from pathlib import Path

import psutil

from nbstage.actors.daemon.kernel.kernel_files import sweep_kernel_dir
from nbstage.actors.daemon.kernel.process_tree import end_orphans_of
from nbstage.protocol.daemon_actors.rooms import EarlierDaemon

log = logging.getLogger("nbstage.edge")


def sweep_at_start(earlier: EarlierDaemon | None, kernel_dir: Path) -> None:
    """What a killed predecessor's kernels left, as this daemon starts."""
    if earlier is not None:
        ended = end_orphans_of(earlier.run.pid)
        if ended:
            log.warning(
                "ended %d processes the kernels of daemon %d left", len(ended), earlier.run.pid
            )
    swept = sweep_kernel_dir(kernel_dir)
    if swept:
        log.info("removed %d files of kernels that no longer run", len(swept))


def kill_leftover_kernels(pids: dict[int, tuple[str, float]]) -> None:
    """Last resort: SIGKILL any recorded kernel process (pid → its notebook and start
    time) still alive. A stop that went well finds none: each kernel's actor reported its
    process ended before its room closed."""
    for pid, (notebook_id, created) in pids.items():
        log.warning("leftover kernel of %s (pid %d): no actor reported it ended", notebook_id, pid)
        with contextlib.suppress(psutil.Error):
            proc = psutil.Process(pid)
            if abs(proc.create_time() - created) < 1.0:
                log.warning("killing the leftover kernel of %s (pid %d)", notebook_id, pid)
                proc.kill()
