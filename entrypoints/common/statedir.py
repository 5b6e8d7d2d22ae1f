"""Where a daemon keeps its files, and where its sockets go when the path is too long.

A Unix socket path holds at most 107 bytes. When ``<state dir>/daemon.sock`` (or a
kernel's IPC socket below it) would be longer, sockets move to a short per-user
runtime dir named after a hash of the state dir, and the state dir records where.

That short dir sits at a path any user can compute, so every dir here is made
atomically or accepted only when it is this user's alone (``ownership.py``), and
clients go where the daemon recorded rather than recomputing the path.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import BinaryIO

from nbstage.entrypoints.common.ownership import check_private_dir, make_private_dir
from nbstage.protocol.common.frozen import frozen
from nbstage.protocol.common.safe_files import (
    SMALL_FILE_BYTES,
    FileRefused,
    open_private,
    read_regular,
    write_private,
)

STATE_DIR_ENV = "NBSTAGE_STATE_DIR"
LINK_STATE_DIR_ENV = "NBSTAGE_LINK_STATE_DIR"
"""Set by the MCP edge for its session child: the state dir whose socket record each of
the child's daemon links follows (:func:`followed_socket`)."""
_SOCKET_PATH_LIMIT = 107
_KERNEL_SOCKET_ALLOWANCE = 48
"""Room left for a kernel's IPC socket name (<kernel dir>/<uuid>-<port>)."""


def default_state_dir() -> Path:
    if os.environ.get(STATE_DIR_ENV):
        return Path(os.environ[STATE_DIR_ENV])
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "nbstage"


@frozen
class StatePaths:
    root: Path
    socket_dir: Path

    @property
    def socket(self) -> Path:
        return self.socket_dir / "daemon.sock"

    @property
    def session_zygote(self) -> Path:
        """Where the session fork server listens (session_zygote.py)."""
        return self.socket_dir / "session-zygote.sock"

    @property
    def forks_wanted(self) -> Path:
        """Left by a client that waits for the session fork server: the daemon then starts
        it as soon as it serves, not a second later (ADR 0009)."""
        return self.root / "session-forks-wanted"

    @property
    def kernel_dir(self) -> Path:
        return self.socket_dir / "kernels"

    @property
    def lock(self) -> Path:
        return self.root / "daemon.lock"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def executions(self) -> Path:
        return self.root / "executions"

    @property
    def socket_record(self) -> Path:
        return self.root / "socket-dir"


def _short_socket_dir(root: Path) -> Path:
    import hashlib
    import tempfile

    digest = hashlib.sha256(str(root).encode()).hexdigest()[:16]
    base = os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()
    return Path(base) / f"nbstage-{os.getuid()}-{digest}"


def state_paths(state_dir: str | Path | None = None) -> StatePaths:
    root = Path(state_dir).expanduser().absolute() if state_dir else default_state_dir().absolute()
    longest = len(str(root / "kernels")) + _KERNEL_SOCKET_ALLOWANCE
    socket_dir = root if longest <= _SOCKET_PATH_LIMIT else _short_socket_dir(root)
    return StatePaths(root, socket_dir)


def prepare(paths: StatePaths) -> None:
    """Create the state dir and its parts, each readable by this user alone; where one
    already exists, accept it only if it is (raises ownership.Untrusted otherwise). A
    short socket dir outside the state dir is the daemon's to settle (runtime_dir.py)."""
    parts = [paths.root, paths.logs, paths.executions]
    if paths.socket_dir == paths.root:
        parts.append(paths.kernel_dir)
    for path in parts:
        make_private_dir(path)
    with contextlib.suppress(FileExistsError):
        os.mkdir(paths.root / "envs", 0o700)


def record_socket_dir(paths: StatePaths) -> None:
    """Write where the sockets are, for clients; the daemon does this holding its lock."""
    write_private(paths.socket_record, f"{paths.socket_dir}\n".encode())


def daemon_output(paths: StatePaths) -> BinaryIO:
    """``logs/daemon.out`` opened to append, for a daemon's stdout and stderr (0600)."""
    fd = open_private(paths.logs / "daemon.out", os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    return os.fdopen(fd, "ab")


def recorded_paths(paths: StatePaths) -> StatePaths:
    """``paths`` with the socket dir the daemon recorded, which clients use instead of
    recomputing it (the daemon's environment may differ from theirs). The record is
    believed only once the state dir passes the private-dir check; with no state dir or
    no record, ``paths`` stay as computed (and a client still checks the dir it uses)."""
    try:
        check_private_dir(paths.root)
        recorded = read_regular(paths.socket_record, SMALL_FILE_BYTES)[0].decode().strip()
    except (FileNotFoundError, FileRefused):
        return paths
    if not os.path.isabs(recorded):
        return paths
    return StatePaths(paths.root, Path(recorded))


def followed_socket(state_dir: str | None, socket_path: str) -> str:
    """The socket a link to the daemon connects to: the one ``state_dir`` records now (a
    daemon that started after the client, or fell back to a fresh dir, recorded where),
    else ``socket_path``. Raises ownership.Untrusted if the state dir is not private."""
    if not state_dir:
        return socket_path
    given = StatePaths(Path(state_dir), Path(socket_path).parent)
    return str(recorded_paths(given).socket)


def client_paths(state_dir: str | Path | None = None) -> StatePaths:
    """The paths a client of the daemon on ``state_dir`` uses: see :func:`recorded_paths`."""
    return recorded_paths(state_paths(state_dir))
