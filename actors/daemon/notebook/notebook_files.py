"""Reading and writing ``.ipynb`` files for a Room.

Loading upgrades any nbformat version to 4.5 and gives every cell a unique id before
nbformat validates, so nbformat never has to repair ids (and never warns about them).
Saving validates first and then replaces the file atomically, so a failed save leaves
the previous file byte-identical.

nbformat is imported on first use, not with this module: it brings jsonschema, and the
daemon should answer on its socket before paying for that (it warms the import on a
worker as soon as it listens; see ``warm_imports``).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import stat
from pathlib import Path
from typing import TYPE_CHECKING

from nbstage.actors.daemon.notebook.document import fresh_cell_id, valid_cell_id
from nbstage.protocol.common.errors import ErrorCode, NbstageError
from nbstage.protocol.common.safe_files import (
    DEFAULT_MAX_FILE_BYTES,
    MAX_FILE_SETTING,
    FileRefused,
    not_regular,
    read_regular,
)
from nbstage.protocol.daemon_actors.room_followups import DiskStamp, FileOnDisk

if TYPE_CHECKING:
    from nbstage.actors.daemon.notebook.save_target import SaveTarget

NEW_FILE_MODE = 0o666
"""Asked for when a file is created; the process umask takes its bits off, as for any editor."""
_PLAIN_PARSE_ERRORS = (ValueError, KeyError, TypeError, AttributeError)


def warm_imports() -> None:
    """Import what reading and writing notebooks needs (call it off the actor thread)."""
    import nbformat  # noqa: F401


def _parse_errors() -> tuple[type[BaseException], ...]:
    import nbformat

    return (*_PLAIN_PARSE_ERRORS, nbformat.ValidationError)


def canonical_path(path: str | Path, base: Path | None = None) -> Path:
    """Absolute path with ``~`` expanded and symlinks resolved; the file need not exist."""
    if not str(path):
        raise NbstageError(ErrorCode.BAD_REQUEST, "The path is empty. Pass a notebook path.")
    expanded = Path(path).expanduser()
    if not expanded.is_absolute():
        expanded = (base or Path.cwd()) / expanded
    return expanded.resolve(strict=False)


def absolute_notebook_path(path: str) -> str:
    """The canonical form of a path a client sent; the daemon never guesses a working dir."""
    if not Path(path).expanduser().is_absolute():
        raise NbstageError(ErrorCode.BAD_REQUEST, f"path must be absolute, not {path!r}")
    return str(canonical_path(path))


def look_at_save_target(
    given: Path, target: Path, max_bytes: int = DEFAULT_MAX_FILE_BYTES
) -> SaveTarget:
    """What is at ``target`` (``given`` with its links resolved), for ``save_target``'s rules."""
    from nbstage.actors.daemon.notebook.save_target import SaveTarget, TargetKind

    def seen(kind: TargetKind, stamp: DiskStamp | None = None, problem: str | None = None):
        return SaveTarget(str(given), str(target), kind, stamp, problem)

    if os.path.islink(given) and not os.path.exists(given):
        return seen(TargetKind.DANGLING_LINK)
    try:
        info = os.stat(target)
    except FileNotFoundError:
        return seen(TargetKind.ABSENT)
    except OSError as exc:
        return seen(TargetKind.NOT_A_NOTEBOOK, None, f"it cannot be read ({exc.strerror})")
    if stat.S_ISDIR(info.st_mode):
        return seen(TargetKind.DIRECTORY, _stamp(info))
    if not stat.S_ISREG(info.st_mode):
        return seen(TargetKind.NOT_A_NOTEBOOK, _stamp(info), "it is not a regular file")
    on_disk = read_on_disk(target, max_bytes)
    if on_disk.notebook is not None:
        return seen(TargetKind.NOTEBOOK, on_disk.stamp)
    if on_disk.stamp is None and on_disk.problem is None:
        return seen(TargetKind.ABSENT)
    problem = (on_disk.problem or "").removeprefix(f"{target} is not a Jupyter notebook: ")
    return seen(TargetKind.NOT_A_NOTEBOOK, on_disk.stamp, problem.rstrip("."))


def load_notebook(path: Path, max_bytes: int = DEFAULT_MAX_FILE_BYTES) -> dict:
    """Read a notebook of any nbformat version as a plain, valid v4.5 notebook dict."""
    return load_notebook_stamped(path, max_bytes)[0]


def load_notebook_stamped(
    path: Path, max_bytes: int = DEFAULT_MAX_FILE_BYTES
) -> tuple[dict, DiskStamp]:
    """``load_notebook``, with the stamp of the very file that was read."""
    text, stamp = _read_text(path, max_bytes)
    return _upgraded(_parse(text, path), path), stamp


def stamp_of(path: Path) -> DiskStamp | None:
    """The file's stamp now, or None when there is no file. A link put in the file's
    place has a stamp of its own, so it shows as a change (and is refused when read)."""
    try:
        return _stamp(os.lstat(path))
    except FileNotFoundError:
        return None


def read_on_disk(path: Path, max_bytes: int = DEFAULT_MAX_FILE_BYTES) -> FileOnDisk:
    """The file as it is now, for a merge; what is wrong with it is reported, not raised.

    Cells that had no valid id of their own in the file come back with ``id`` None, so
    the merge can match them to the cells they stand for.
    """
    try:
        text, stamp = _read_text(path, max_bytes)
    except NbstageError as exc:
        if exc.code is ErrorCode.NOT_FOUND:
            return FileOnDisk(None, None)
        return FileOnDisk(stamp_of(path), None, exc.message)
    given: set[str] = set()
    try:
        raw = _parse(text, path, given)
        notebook = _upgraded(raw, path)
    except NbstageError as exc:
        return FileOnDisk(stamp, None, exc.message)
    if raw.get("nbformat") != 4:
        given = {c["id"] for c in notebook["cells"]}
    for cell in notebook["cells"]:
        if cell["id"] in given:
            cell["id"] = None
    return FileOnDisk(stamp, notebook)


def _upgraded(raw: dict, path: Path) -> dict:
    import nbformat

    try:
        node = nbformat.convert(nbformat.from_dict(raw), 4)
        node.nbformat_minor = max(node.get("nbformat_minor", 0), 5)
        nbformat.validate(node)
    except _parse_errors() as exc:
        raise _not_a_notebook(path, exc) from None
    return json.loads(json.dumps(node))


def serialize_notebook(nb: dict) -> bytes:
    """Validate ``nb`` as nbformat 4 and return its file content (UTF-8, final newline).

    Writes with ``nbformat.v4.writes``, the writer ``nbformat.writes`` ends in, so the
    notebook is validated once rather than twice.
    """
    import nbformat

    try:
        _check_ids(nb)
        node = nbformat.from_dict(nb)
        nbformat.validate(node)
        text = nbformat.v4.writes(node)
    except _parse_errors() as exc:
        raise NbstageError(
            ErrorCode.SAVE_FAILED,
            f"The notebook was not saved because it is not valid nbformat: {_reason(exc)}. "
            "The file on disk was not changed.",
        ) from None
    return (text if text.endswith("\n") else text + "\n").encode("utf-8")


def save_notebook(path: Path, nb: dict) -> None:
    """Validate and atomically write ``nb`` to ``path``."""
    write_atomic(path, serialize_notebook(nb))


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


# Loading


def _read_text(path: Path, max_bytes: int) -> tuple[str, DiskStamp]:
    """The file's text and the stamp of the file opened (FileNotFoundError as NOT_FOUND).

    A link, a FIFO or anything but a regular file, and a file over ``max_bytes``, are
    refused before anything is read (``safe_files.read_regular``)."""
    try:
        data, info = read_regular(path, max_bytes, MAX_FILE_SETTING)
        return data.decode("utf-8"), _stamp(info)
    except FileNotFoundError:
        raise NbstageError(
            ErrorCode.NOT_FOUND,
            f"There is no file at {path}. Check the path, or call create_notebook() to start "
            "a new notebook.",
        ) from None
    except IsADirectoryError:
        raise _not_a_notebook(path, "it is a directory") from None
    except UnicodeDecodeError:
        raise _not_a_notebook(path, "it is not UTF-8 text") from None
    except FileRefused as exc:
        raise NbstageError(
            ErrorCode.BAD_REQUEST, f"{path} was not read as a notebook: {exc.reason}."
        ) from None
    except OSError as exc:
        raise _not_a_notebook(path, f"it cannot be read ({exc.strerror})") from None


def _stamp(info: os.stat_result) -> DiskStamp:
    return DiskStamp(info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)


def _parse(text: str, path: Path, given: set[str] | None = None) -> dict:
    import nbformat

    try:
        raw = json.loads(text)
    except ValueError as exc:
        raise _not_a_notebook(path, f"it is not valid JSON ({exc})") from None
    if not isinstance(raw, dict) or "nbformat" not in raw:
        raise _not_a_notebook(path, "it has no 'nbformat' version field")
    version = raw["nbformat"]
    if not isinstance(version, int) or version not in nbformat.versions:
        raise _not_a_notebook(path, f"nbformat version {_clip(version)} is not supported")
    if version == 4:
        _give_ids(raw, set() if given is None else given)
    return raw


def _give_ids(raw: dict, given: set[str]) -> None:
    """Give cells a unique valid id where they have none, a bad one or a repeated one;
    the ids given are added to ``given``."""
    cells = raw.get("cells")
    if not isinstance(cells, list):
        return
    cells = [c for c in cells if isinstance(c, dict)]
    taken = {c["id"] for c in cells if isinstance(c.get("id"), str)}
    seen: set[str] = set()
    for cell in cells:
        if not valid_cell_id(cell.get("id")) or cell["id"] in seen:
            cell["id"] = fresh_cell_id(taken)
            taken.add(cell["id"])
            given.add(cell["id"])
        seen.add(cell["id"])


def _clip(value: object, limit: int = 40) -> str:
    shown = repr(value)
    return shown if len(shown) <= limit else shown[: limit - 3] + "..."


def _not_a_notebook(path: Path, why: object) -> NbstageError:
    reason = why if isinstance(why, str) else _reason(why)
    return NbstageError(ErrorCode.BAD_REQUEST, f"{path} is not a Jupyter notebook: {reason}.")


def _reason(exc: object, limit: int = 300) -> str:
    text = str(getattr(exc, "message", None) or exc).strip().rstrip(".")
    return text if len(text) <= limit else text[: limit - 3] + "..."


# Saving


def _check_ids(nb: dict) -> None:
    ids = [c.get("id") for c in nb.get("cells", []) if isinstance(c, dict)]
    if not all(valid_cell_id(i) for i in ids):
        raise ValueError("a cell has a missing or malformed id")
    if len(set(ids)) != len(ids):
        raise ValueError("two cells share an id")
    if nb.get("nbformat") != 4:
        raise ValueError(f"nbformat is {nb.get('nbformat')!r}, expected 4")


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


TEMP_TOKEN_BYTES = 6
STALE_TEMP_SECS = 3600.0
"""A save's temp file lives for the length of one write; one this old was left by a
process killed in the middle of a save."""


def _temp_name(path: Path) -> str:
    return f".{path.name}.{secrets.token_hex(TEMP_TOKEN_BYTES)}.tmp"


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
            stamp = _stamp(os.fstat(f.fileno()))
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
