"""Opening files that may not be what they seem.

Every file nbstage reads (notebooks, execution records, ``config.toml``, a project's
``pyproject.toml``, its own state files) is opened with ``O_NOFOLLOW`` and
``O_NONBLOCK``, looked at with ``fstat`` on the descriptor, and refused unless it is a
regular file within a size limit. So a FIFO put in a notebook's place answers at once
instead of holding a worker thread until someone writes to it, a link planted at the
last step of a path is never followed, and a sparse file of a gigabyte is refused
before a byte of it is read.

Files nbstage writes in its state dir are created 0600 whatever the umask, the same way
(``open_private``, ``write_private``): the journal holds every edited source, and the
execution records and logs hold outputs and paths.

Only the last component of a path is checked; the folders above it are the caller's
(a notebook's path is resolved once, when it is opened, so its real path is used).
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

DEFAULT_MAX_FILE_BYTES = 256 * 1024 * 1024
"""``Settings.max_file_bytes`` unless set: the largest notebook or execution record read."""
MAX_FILE_SETTING = "max_file_bytes in config.toml or NBSTAGE_MAX_FILE_BYTES"
SMALL_FILE_BYTES = 16 * 1024 * 1024
"""The limit for files that are small by nature: config.toml, pyproject.toml, uv.lock,
and the state dir's own records (a notebook's limit is ``Settings.max_file_bytes``)."""
PRIVATE_MODE = 0o600

_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_KINDS = (
    (stat.S_ISLNK, "a symbolic link"),
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


class FileRefused(OSError):
    """A file that is there but is not one nbstage reads or writes: ``reason`` says why."""

    def __init__(self, path: str | Path, reason: str) -> None:
        super().__init__(reason)
        self.strerror = reason
        self.filename = str(path)
        self.reason = reason

    def __str__(self) -> str:
        return f"{self.filename} was refused: {self.reason}"


def kind_of(mode: int) -> str:
    """What a file that is not a regular file is, in words (for messages)."""
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def not_regular(path: str | Path, mode: int) -> FileRefused:
    return FileRefused(path, f"it is {kind_of(mode)}, not a regular file")


def size_words(size: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size} bytes"


def too_large(path: str | Path, size: int, limit: int, setting: str | None) -> FileRefused:
    reason = f"it is {size_words(size)} ({size:,} bytes), over the limit of {limit:,} bytes"
    if setting:
        reason += f" (set by {setting})"
    return FileRefused(path, reason)


def open_regular(
    path: str | Path, max_bytes: int, setting: str | None = None
) -> tuple[int, os.stat_result]:
    """A read-only descriptor on the regular file at ``path`` and its ``fstat``.

    Raises FileRefused for a link, a FIFO, a device, a directory or a file over
    ``max_bytes`` (``setting`` names the setting that sets the limit, for the message);
    FileNotFoundError and other OSErrors pass as they are.
    """
    fd, info = _open_checked(path, _READ_FLAGS)
    if info.st_size > max_bytes:
        os.close(fd)
        raise too_large(path, info.st_size, max_bytes, setting)
    return fd, info


def _open_checked(path: str | Path, flags: int) -> tuple[int, os.stat_result]:
    """``os.open`` with ``flags`` (which hold ``O_NOFOLLOW`` and ``O_NONBLOCK``), refused
    unless what it opened is a regular file; the descriptor and its ``fstat``."""
    try:
        fd = os.open(path, flags, PRIVATE_MODE)
    except OSError as exc:
        raise _refusal_for(path, exc) from None
    try:
        info = os.fstat(fd)
    except BaseException:
        os.close(fd)
        raise
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise not_regular(path, info.st_mode)
    return fd, info


def read_regular(
    path: str | Path, max_bytes: int, setting: str | None = None
) -> tuple[bytes, os.stat_result]:
    """The bytes of the regular file at ``path`` (see ``open_regular``) and its ``fstat``.
    A file that grows past the limit while it is read is refused too."""
    fd, info = open_regular(path, max_bytes, setting)
    try:
        data = _read_bounded(fd, info.st_size, max_bytes)
    finally:
        os.close(fd)
    if len(data) > max_bytes:
        raise too_large(path, len(data), max_bytes, setting)
    return data, info


def _read_bounded(fd: int, size: int, most: int) -> bytes:
    """Up to ``most + 1`` bytes: first as many as ``fstat`` said (a read of n bytes
    reserves n, so never ``most``), then in steps of 1 MiB while the file still grows."""
    parts: list[bytes] = []
    total = 0
    want = min(size, most) + 1
    while total <= most:
        chunk = os.read(fd, want)
        if not chunk:
            break
        parts.append(chunk)
        total += len(chunk)
        want = min(1 << 20, most + 1 - total)
    return parts[0] if len(parts) == 1 else b"".join(parts)


def open_private(path: str | Path, flags: int) -> int:
    """A descriptor on the regular file at ``path``, created 0600 when ``flags`` has
    ``O_CREAT``, never through a link and never waiting on a FIFO. A file an older
    version left with wider bits is narrowed to 0600."""
    fd, info = _open_checked(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if stat.S_IMODE(info.st_mode) != PRIVATE_MODE:
            os.fchmod(fd, PRIVATE_MODE)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def write_private(path: str | Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` through a fresh 0600 temp file beside it and a rename
    (no fsync: state records, not a user's files). The rename replaces whatever is at
    ``path``, a link or a FIFO included, without following or opening it."""
    path = Path(path)
    temp = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    fd = open_private(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


def narrow_unopened(path: str | Path) -> None:
    """Narrow the regular file at ``path`` to 0600 without opening it: through an
    ``O_PATH`` descriptor, whose close leaves the process's locks on the file alone.
    Refuses a link or anything but a regular file."""
    fd = os.open(path, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise not_regular(path, info.st_mode)
        if stat.S_IMODE(info.st_mode) != PRIVATE_MODE:
            os.chmod(f"/proc/self/fd/{fd}", PRIVATE_MODE)
    finally:
        os.close(fd)


def private_database(path: str | Path) -> str:
    """Make a sqlite database and the files sqlite keeps beside it 0600 before sqlite
    opens them by name; returns the path for ``sqlite3.connect``. sqlite gives the
    ``-wal``, ``-shm`` and ``-journal`` files it creates the database's own bits.

    Files that are there are never opened here (``narrow_unopened``). sqlite's locks
    are POSIX record locks, which the close of any descriptor of the file drops for the
    whole process: a plain open and close for a second connection took the first one's
    locks away, and the next process to open the database took the ``-shm`` file for
    unused and truncated it under the first one's mapping, which died of SIGBUS."""
    try:
        os.close(open_private(path, os.O_RDONLY | os.O_CREAT | os.O_EXCL))
    except FileExistsError:
        narrow_unopened(path)
    for suffix in ("-wal", "-shm", "-journal"):
        with contextlib.suppress(FileNotFoundError):
            narrow_unopened(f"{path}{suffix}")
    return str(path)


def _refusal_for(path: str | Path, exc: OSError) -> OSError:
    """What an ``open`` with O_NOFOLLOW and O_NONBLOCK failed for, as its caller shows it."""
    import errno

    if exc.errno == errno.ELOOP:
        return FileRefused(path, "it is a symbolic link, which nbstage does not follow here")
    if exc.errno == errno.ENXIO:
        with contextlib.suppress(OSError):
            return not_regular(path, os.lstat(path).st_mode)
    return exc
