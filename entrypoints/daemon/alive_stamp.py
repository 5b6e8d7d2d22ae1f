"""``daemon.alive`` in the state dir: which daemon incarnation runs there, and when it was
last seen alive (the file's mtime, touched at every heartbeat and once more at stop).

A daemon reads the one it replaces before writing its own, so it can tell an execution
lost with its predecessor, and when (``actors/daemon/room/executions.py`` ``stored_execution``).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import orjson

from nbstage.protocol.common.safe_files import SMALL_FILE_BYTES, read_regular, write_private
from nbstage.protocol.daemon_actors.rooms import DaemonRun, EarlierDaemon

ALIVE_FILE = "daemon.alive"


def take_over(state_dir: Path, run: DaemonRun) -> EarlierDaemon | None:
    """Blocking: the earlier incarnation's stamp, if there is one, then this one's."""
    path = state_dir / ALIVE_FILE
    earlier = None
    with contextlib.suppress(OSError, orjson.JSONDecodeError, KeyError, TypeError):
        data, info = read_regular(path, SMALL_FILE_BYTES)
        seen = orjson.loads(data)
        earlier = EarlierDaemon(DaemonRun(seen["pid"], seen["started_at"]), info.st_mtime_ns / 1e9)
    write_private(path, orjson.dumps({"pid": run.pid, "started_at": run.started_at}))
    return earlier


def touch(state_dir: Path) -> None:
    """Blocking: this incarnation is alive now."""
    with contextlib.suppress(OSError):
        os.utime(state_dir / ALIVE_FILE, follow_symlinks=False)
