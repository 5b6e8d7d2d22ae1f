"""What /proc says of the processes running now; the one place nbstage reads it.

Blocking: every call reads /proc. A process that ends while it is read is skipped.
"""

from __future__ import annotations

import os
from collections.abc import Iterator


def each_process(file: str, uid: int | None = None) -> Iterator[tuple[int, bytes]]:
    """The pid and ``/proc/<pid>/<file>`` of each running process (of the user ``uid``
    alone, when given); one that cannot be read is left out."""
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            if uid is not None and entry.stat().st_uid != uid:
                continue
            with open(f"/proc/{entry.name}/{file}", "rb") as opened:
                content = opened.read()
        except OSError:
            continue
        yield int(entry.name), content


def exists(pid: int) -> bool:
    """Whether ``pid`` names a process, a zombie included."""
    return os.path.exists(f"/proc/{pid}")


def running(pid: int) -> bool:
    """Whether ``pid`` names a process that has not ended (a zombie has)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as file:
            state = file.read().rpartition(b")")[2].split()[0]
    except (OSError, IndexError):
        return False
    return state not in (b"Z", b"X")
