"""Whether a process holds its sqlite locks on a database, seen from another process.

sqlite's unix locks are POSIX record locks: a connection in WAL mode holds a read lock
on byte 128 of the ``-shm`` file (the "DMS" byte) and on the database file's shared
range for as long as it is open. A process that can lock either exclusively takes
itself for the database's only user: on its open it truncates the ``-shm`` file (under
every other process's mapping of it), and on its close it may checkpoint and delete the
WAL. The probe runs in a process of its own, as POSIX locks never conflict within one.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

_PROBE = r"""
import fcntl, os, sys
db, free = sys.argv[1], []
for path, start, length in ((db + "-shm", 128, 1), (db, 0x40000002, 510)):
    try:
        fd = os.open(path, os.O_RDWR)
    except FileNotFoundError:
        free.append(os.path.basename(path))
        continue
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, length, start)
        free.append(os.path.basename(path))
    except OSError:
        pass
    finally:
        os.close(fd)
print(",".join(free))
"""


def unheld_locks(db_path: Path) -> list[str]:
    """The files of the WAL database ``db_path`` (its ``-shm``, itself) whose sqlite lock
    no process holds (a file that is not there holds none): none while any connection to
    it is open."""
    probe = [sys.executable, "-c", _PROBE, str(db_path)]
    out = subprocess.run(probe, capture_output=True, text=True, check=True, timeout=30).stdout
    return [name for name in out.strip().split(",") if name]
