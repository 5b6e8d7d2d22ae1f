"""Disk writes a Room makes: notebook files, untitled journal rows, execution records."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

import orjson

PRUNE_EVERY = 50


def write_notebook_file(path: Path, notebook: dict[str, Any]) -> None:
    from nbstage.actors.notebook_files import serialize_notebook, write_atomic

    write_atomic(path, serialize_notebook(notebook))


def write_snapshot(path: Path, snapshot: bytes) -> None:
    """Worker-thread work: validate and write a notebook snapshot taken as orjson bytes."""
    write_notebook_file(path, orjson.loads(snapshot))


def record_execution(where: Path, execution_id: str, record: bytes, keep: int | None) -> None:
    """Worker-thread work: write one execution record, pruning old ones when asked."""
    target = record_path(where, execution_id)
    temp = target.with_suffix(".tmp")
    temp.write_bytes(record)
    os.replace(temp, target)
    if keep is not None:
        prune_executions(where, keep)


def record_path(executions_dir: Path, execution_id: str) -> Path:
    return executions_dir / f"{execution_id}.json"


def read_execution(executions_dir: Path, execution_id: str) -> dict[str, Any] | None:
    if len(execution_id) > 64 or not execution_id.replace("-", "").isalnum():
        return None
    try:
        return orjson.loads(record_path(executions_dir, execution_id).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None


def prune_executions(executions_dir: Path, keep: int) -> int:
    """Delete the oldest records beyond ``keep``; returns how many went."""
    records = sorted(executions_dir.glob("*.json"), key=lambda p: p.stat().st_mtime_ns)
    doomed = records[: max(0, len(records) - keep)]
    for path in doomed:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
    return len(doomed)
