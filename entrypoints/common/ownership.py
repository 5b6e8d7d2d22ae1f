"""Whether a directory, or the process at the other end of a socket, is this user's alone.

The daemon's sockets may live in a short dir under the system temp dir, at a path any
user can compute (statedir.py). So nothing there is taken on trust (SPEC §3.3, §12): a
private dir is created atomically, or accepted only when ``lstat`` shows a real
directory of this uid with mode 0700; and each end of a daemon connection checks the
other's uid with ``SO_PEERCRED`` before anything else passes.
"""

from __future__ import annotations

import os
import socket
import stat
import struct
from pathlib import Path
from typing import Any

_PRIVATE_MODE = 0o700
_PEERCRED = struct.Struct("3i")
"""struct ucred: pid, uid, gid."""


class Untrusted(Exception):
    """A dir or a socket peer that another user could control; nbstage refuses to use it."""


def check_private_dir(path: Path) -> None:
    """Raise Untrusted unless ``path`` is a directory, not a symlink, owned by this uid, with
    mode 0700. A missing path raises FileNotFoundError."""
    info = os.lstat(path)
    uid = os.getuid()
    mode = stat.S_IMODE(info.st_mode) & 0o777
    if stat.S_ISLNK(info.st_mode):
        problem = "it is a symlink, which nbstage never follows here; remove it"
    elif not stat.S_ISDIR(info.st_mode):
        problem = "it is not a directory; remove it"
    elif info.st_uid != uid:
        problem = (
            f"it is owned by uid {info.st_uid}, not by this user (uid {uid}); another user "
            "may have created it to intercept nbstage. Remove it"
        )
    elif mode != _PRIVATE_MODE:
        problem = f"it has mode {mode:04o}, not 0700; if it is yours, chmod 700 it"
    else:
        return
    raise Untrusted(
        f"nbstage refuses to use {path}: {problem}. Until then no daemon starts there "
        "and no client connects."
    )


def make_private_dir(path: Path) -> None:
    """Create ``path`` with mode 0700 (its parents as usual), atomically; if it already
    exists, accept it only as :func:`check_private_dir` does, and change nothing."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.mkdir(path, _PRIVATE_MODE)
    except FileExistsError:
        pass
    else:
        # The umask may have narrowed the mode; widen it back on the dir just made.
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        try:
            os.fchmod(fd, _PRIVATE_MODE)
        finally:
            os.close(fd)
    check_private_dir(path)


def peer_credentials(sock: socket.socket | Any) -> tuple[int, int, int]:
    """(pid, uid, gid) of the process at the other end of a connected Unix socket."""
    raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _PEERCRED.size)
    return _PEERCRED.unpack(raw)


def check_peer(sock: socket.socket | Any, peer: str) -> None:
    """Raise Untrusted unless ``peer`` (described for the message), the process at the other
    end of ``sock``, runs as this user. ``sock`` may be an asyncio transport's socket."""
    pid, uid, _ = peer_credentials(sock)
    own = os.getuid()
    if uid != own:
        raise Untrusted(
            f"{peer} runs as uid {uid} (pid {pid}), not as this user (uid {own}); "
            "nbstage talks to its own user's processes alone"
        )
