"""Giving back to the system the pages malloc keeps after the shared document's big frees.

glibc keeps what a process frees in its arenas (one per thread that allocated) and gives
whole free pages back only at the top of a heap; the daemon's allocations interleave, so
the temporaries of a build on a worker, and a frozen document's live form (about 5 MB of
yrs's items for 1,000 short cells), stayed in the daemon's RSS once freed (ADR 0004,
item 17). ``malloc_trim`` gives those pages back; the Room asks a worker for it once a
build is taken and once a freeze is kept, off its own thread. Elsewhere than glibc there
is no such call, and nothing is done.
"""

from __future__ import annotations

import ctypes
import logging
from collections.abc import Callable
from functools import cache

from nbstage.protocol.common.offload import BlockingWorkDone

log = logging.getLogger("nbstage.room")


@cache
def _malloc_trim() -> Callable[[int], int] | None:
    try:
        process = ctypes.CDLL(None)
    except OSError:
        return None
    return getattr(process, "malloc_trim", None)


def release() -> bool:
    """Give the free pages of every arena back; whether this C library can."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True


def released(done: BlockingWorkDone) -> None:
    if not done.ok:
        log.warning("could not give the freed pages back to the system: %s", done.error)
