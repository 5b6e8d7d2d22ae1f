"""Writing a file so that a failure never leaves half of it: a temp file beside it,
fsynced, renamed over it, the directory fsynced; and the stamps (device, inode, size,
mtime) that tell whether a file changed since it was read or written."""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import stat
from pathlib import Path

from nbstage.protocol.common.errors import ErrorCode, NbstageError
from nbstage.protocol.common.safe_files import not_regular
from nbstage.protocol.daemon_actors.room_followups import DiskStamp

NEW_FILE_MODE = 0o666
"""Asked for when a file is created; the process umask takes its bits off, as for any editor."""


TEMP_TOKEN_BYTES = 6


STALE_TEMP_SECS = 3600.0
"""A save's temp file lives for the length of one write; one this old was left by a
process killed in the middle of a save."""


def stamp_of(path: Path) -> DiskStamp | None:
    """The file's stamp now, or None when there is no file. A link put in the file's
    place has a stamp of its own, so it shows as a change (and is refused when read)."""
    try:
        return file_stamp(os.lstat(path))
    except FileNotFoundError:
        return None


def write_atomic(path: Path, data: bytes) -> DiskStamp:
    """Replace ``path`` with ``data``: temp file, fsync, rename, fsync the directory.

    The file keeps its permission bits (a new file follows the umask). On failure the temp
    file is removed and the previous file is untouched. Returns the stamp of the file
    written, taken before the rename (which keeps inode, size and mtime), so a change
    made by anyone right after the rename still shows.
    """
    tmp, stamp = _write_temp(path, data, _mode_for(path))
    _replace(path, tmp)
    return stamp


def write_atomic_over(path: Path, data: bytes, expected: DiskStamp | None) -> DiskStamp | None:
    """``write_atomic``, but only over the file whose stamp is ``expected`` (None: no file).

    The stamp is compared just before the rename, once the slow part (the temp file and
    its fsync) is done; when it differs nothing is written and None is returned.
    """
    tmp, stamp = _write_temp(path, data, _mode_for(path))
    try:
        unchanged = stamp_of(path) == expected
    except OSError as exc:
        _remove_quietly(tmp)
        raise _save_failed(path, exc, "The file on disk was not changed.") from None
    if not unchanged:
        _remove_quietly(tmp)
        return None
    _replace(path, tmp)
    return stamp


def refuse_unless_regular(path: Path) -> None:
    """Raise SAVE_FAILED when something other than a regular file (a link, a FIFO, a
    device) stands at ``path``: a save never replaces it. No file at all is fine."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise _save_failed(path, exc, "The file on disk was not changed.") from None
    if not stat.S_ISREG(info.st_mode):
        reason = not_regular(path, info.st_mode).reason
        raise NbstageError(
            ErrorCode.SAVE_FAILED,
            f"Could not save {path}: {reason}, and a save never replaces one. Remove it, "
            "or save the notebook to another path. The file on disk was not changed.",
        )


def sweep_stale_temps(path: Path, now: float, older_than: float = STALE_TEMP_SECS) -> int:
    """Remove the temp files that saves of ``path`` left behind when their process was
    killed (SIGKILL between the write and the rename): files named as ``_temp_name``
    makes them, unchanged for ``older_than`` seconds. Returns how many were removed.
    A save in flight, by this daemon or by any other process, has a younger file."""
    own = re.compile(rf"\.{re.escape(path.name)}\.[0-9a-f]{{{2 * TEMP_TOKEN_BYTES}}}\.tmp")
    removed = 0
    try:
        entries = list(os.scandir(path.parent))
    except OSError:
        return 0
    for entry in entries:
        if not own.fullmatch(entry.name):
            continue
        try:
            if not entry.is_file(follow_symlinks=False):
                continue
            if now - entry.stat(follow_symlinks=False).st_mtime > older_than:
                os.unlink(entry.path)
                removed += 1
        except OSError:
            continue
    return removed


def file_stamp(info: os.stat_result) -> DiskStamp:
    return DiskStamp(info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)


def _replace(path: Path, tmp: str) -> None:
    try:
        os.replace(tmp, path)
    except OSError as exc:
        _remove_quietly(tmp)
        raise _save_failed(path, exc, "The file on disk was not changed.") from None
    try:
        _fsync_directory(path.parent)
    except OSError as exc:
        raise _save_failed(
            path, exc, "The new content is in place but may not be on disk yet."
        ) from None


def _mode_for(path: Path) -> int | None:
    """The bits of the file there now; None when there is none, or it is not a regular
    file (the umask decides)."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise _save_failed(path, exc, "The file on disk was not changed.") from None
    return stat.S_IMODE(info.st_mode) if stat.S_ISREG(info.st_mode) else None


def _temp_name(path: Path) -> str:
    return f".{path.name}.{secrets.token_hex(TEMP_TOKEN_BYTES)}.tmp"


def _create_temp(path: Path) -> tuple[int, str]:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    while True:
        tmp = str(path.parent / _temp_name(path))
        try:
            return os.open(tmp, flags, NEW_FILE_MODE), tmp
        except FileExistsError:
            continue


def _write_temp(path: Path, data: bytes, mode: int | None) -> tuple[str, DiskStamp]:
    """Write ``data`` to a fsynced hidden temp file beside ``path``; return its name and stamp."""
    try:
        fd, tmp = _create_temp(path)
    except OSError as exc:
        raise _save_failed(path, exc, "The file on disk was not changed.") from None
    try:
        with os.fdopen(fd, "wb") as f:
            if mode is not None:
                os.fchmod(f.fileno(), mode)
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
            stamp = file_stamp(os.fstat(f.fileno()))
    except OSError as exc:
        _remove_quietly(tmp)
        raise _save_failed(path, exc, "The file on disk was not changed.") from None
    return tmp, stamp


def _remove_quietly(name: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(name)


def _fsync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _save_failed(path: Path, exc: OSError, outcome: str) -> NbstageError:
    reason = exc.strerror or str(exc)
    return NbstageError(ErrorCode.SAVE_FAILED, f"Could not save {path}: {reason}. {outcome}")
