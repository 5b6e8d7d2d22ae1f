"""Parent-death guards: no nbstage process or kernel outlives the process that owns it."""

from __future__ import annotations

import os
import signal

_PR_SET_PDEATHSIG = 1
EDGE_PID_ENV = "NBSTAGE_EDGE_PID"
"""Set by an edge for the processes it starts (kernels, the session child): kernels end
when that process does (kernel_launcher.py), and teardown and tests find every process of
one tree by it."""


def die_with_parent(parent: int) -> None:
    """Ask Linux to SIGKILL this process when ``parent``, the process that started it,
    dies; exit at once if it already has.

    ``parent`` comes from the starter (the edge passes its pid in ``EDGE_PID_ENV``), not
    from ``os.getppid()`` here: a parent that died before this call has had its orphans
    adopted, and ``getppid()`` would name the adopter. The signal follows the parent
    *thread* that started this process, so only processes started from an edge's main
    thread may rely on it.
    """
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)
