"""Disk work a Room hands to its edge: notebook files (written only over the version the
Room last saw), untitled journal rows, execution records."""

from __future__ import annotations

import contextlib
import logging
import os
from pathlib import Path
from typing import Any

import orjson

from nbstage.protocol.common.errors import ErrorCode, NbstageError
from nbstage.protocol.common.safe_files import (
    DEFAULT_MAX_FILE_BYTES,
    MAX_FILE_SETTING,
    FileRefused,
    read_regular,
    write_private,
)
from nbstage.protocol.daemon_actors.room_followups import DiskStamp, FileOnDisk, FileWritten

log = logging.getLogger("nbstage.persistence")

PRUNE_EVERY = 50


def write_notebook_file(path: Path, notebook: dict[str, Any]) -> DiskStamp:
    from nbstage.actors.daemon.notebook.notebook_files import serialize_notebook, write_atomic

    return write_atomic(path, serialize_notebook(notebook))


def save_to_new_path(
    given: Path,
    target: Path,
    snapshot: bytes,
    own_path: str | None,
    overwrite: bool,
    max_bytes: int = DEFAULT_MAX_FILE_BYTES,
) -> FileWritten:
    """Worker-thread work: write the snapshot at a path the room does not hold yet, if
    ``save_target``'s rules allow it for what is there; raises the refusal otherwise.

    What was looked at must still be there just before the rename, or nothing is written.
    """
    from nbstage.actors.daemon.notebook.notebook_files import (
        look_at_save_target,
        refuse_unless_regular,
        serialize_notebook,
        write_atomic,
        write_atomic_over,
    )
    from nbstage.actors.daemon.notebook.save_target import existing_refusal

    seen = look_at_save_target(given, target, max_bytes)
    refusal = existing_refusal(seen, own_path, overwrite)
    if refusal is not None:
        raise refusal
    data = serialize_notebook(orjson.loads(snapshot))
    if seen.target == own_path:
        refuse_unless_regular(target)
        return FileWritten(write_atomic(target, data))
    stamp = write_atomic_over(target, data, seen.stamp)
    if stamp is None:
        raise NbstageError(
            ErrorCode.PATH_EXISTS,
            f"{target} changed while the notebook was being saved there; nothing was written. "
            "Save again to look at it anew.",
        )
    return FileWritten(stamp)


def save_checked(
    path: Path,
    snapshot: bytes,
    expected: DiskStamp | None,
    explicit: bool,
    max_bytes: int = DEFAULT_MAX_FILE_BYTES,
) -> FileWritten | FileOnDisk:
    """Worker-thread work: write the snapshot unless the file changed from outside.

    ``expected`` is the stamp the Room last read or wrote (None: it knows there is no
    file). A file that differs is read and handed back instead, for the Room to merge,
    and nothing is written. An ``explicit`` save (the agent's save_notebook) writes over
    a file that is gone or is not a notebook; a notebook it would still merge first. It
    never replaces what is not a regular file (a FIFO or a link put in the file's place).
    """
    from nbstage.actors.daemon.notebook.notebook_files import (
        read_on_disk,
        refuse_unless_regular,
        serialize_notebook,
        write_atomic,
        write_atomic_over,
    )

    data = serialize_notebook(orjson.loads(snapshot))
    stamp = write_atomic_over(path, data, expected)
    if stamp is not None:
        return FileWritten(stamp)
    seen = read_on_disk(path, max_bytes)
    if seen.notebook is not None or not explicit:
        return seen
    refuse_unless_regular(path)
    return FileWritten(write_atomic(path, data))


def look_at_file(
    path: Path, known: tuple[DiskStamp | None, ...], max_bytes: int = DEFAULT_MAX_FILE_BYTES
) -> FileOnDisk | None:
    """Worker-thread work: None while the file's stamp is one of ``known``, else the file."""
    from nbstage.actors.daemon.notebook.notebook_files import read_on_disk, stamp_of

    if stamp_of(path) in known:
        return None
    return read_on_disk(path, max_bytes)


def record_execution(where: Path, execution_id: str, record: bytes, keep: int | None) -> None:
    """Worker-thread work: write one execution record (0600), pruning old ones when asked."""
    write_private(record_path(where, execution_id), record)
    if keep is not None:
        prune_executions(where, keep)


def record_path(executions_dir: Path, execution_id: str) -> Path:
    return executions_dir / f"{execution_id}.json"


def read_execution(
    executions_dir: Path, execution_id: str, max_bytes: int = DEFAULT_MAX_FILE_BYTES
) -> dict[str, Any] | None:
    if len(execution_id) > 64 or not execution_id.replace("-", "").isalnum():
        return None
    try:
        path = record_path(executions_dir, execution_id)
        data, _ = read_regular(path, max_bytes, MAX_FILE_SETTING)
        return orjson.loads(data)
    except FileRefused as exc:
        log.warning("execution record not read: %s", exc)
        return None
    except (OSError, orjson.JSONDecodeError):
        return None


def prune_executions(executions_dir: Path, keep: int) -> int:
    """Delete the oldest records beyond ``keep``; returns how many went."""
    with os.scandir(executions_dir) as listing:
        records = [entry for entry in listing if entry.name.endswith(".json")]
    if len(records) <= keep:
        return 0
    records.sort(key=_modified_ns)
    doomed = records[: len(records) - keep]
    for entry in doomed:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(entry.path)
    return len(doomed)


def _modified_ns(entry: os.DirEntry) -> int:
    try:
        return entry.stat().st_mtime_ns
    except FileNotFoundError:
        return 0
