"""Whether another open file holds a ``flock`` on a path: the state dir's daemon lock
(held by a running or starting daemon), ``autostart.lock`` (held by a daemon a client
launched, until it listens)."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from nbstage.protocol.common.safe_files import open_private


def held_elsewhere(path: Path) -> bool:
    """Asked with a shared lock, taken and let go at once, so that the question keeps no
    holder-to-be out for longer than the call; a missing file is held by nobody. The
    holders this asks about take their locks exclusive."""
    try:
        fd = open_private(path, os.O_RDWR)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False
