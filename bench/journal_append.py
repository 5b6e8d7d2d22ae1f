"""What one journal append would cost an acknowledged edit (issue 11 §10, item 4).

Appends a typical edit record (a set_cell of about 200 bytes of source) to an sqlite
table in the state dir's filesystem, one transaction per edit, in the modes a journal
could use, beside an fsynced append to a plain file. The numbers feed
docs/notes/journal.md.

    .venv/bin/python bench/journal_append.py [--runs 2000] [--dir DIR]
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import orjson
from common import summarize

RECORD = orjson.dumps(
    {
        "op": "set_cell",
        "cell_id": "3f2a9c1e",
        "source": "df = load(path)\n" * 12,
        "key": "call-0123456789abcdef",
    }
)


def sqlite_appender(path: Path, synchronous: str) -> tuple[Callable[[int], None], Callable]:
    db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute(f"PRAGMA synchronous={synchronous}")
    db.execute("CREATE TABLE journal (notebook_id TEXT, seq INTEGER, record BLOB)")

    def append(seq: int) -> None:
        db.execute("INSERT INTO journal VALUES (?, ?, ?)", ("nb", seq, RECORD))

    return append, db.close


def file_appender(path: Path, fsync: bool) -> tuple[Callable[[int], None], Callable]:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)

    def append(seq: int) -> None:
        os.write(fd, RECORD + b"\n")
        if fsync:
            os.fdatasync(fd)

    return append, lambda: os.close(fd)


def measure(append: Callable[[int], None], runs: int) -> list[float]:
    samples = []
    for seq in range(runs):
        start = time.perf_counter()
        append(seq)
        samples.append(time.perf_counter() - start)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--dir", type=Path, default=None, help="where to write (a state dir's fs)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        work = Path(tmp)
        modes = {
            "sqlite WAL, synchronous=NORMAL": sqlite_appender(work / "n.sqlite3", "NORMAL"),
            "sqlite WAL, synchronous=FULL": sqlite_appender(work / "f.sqlite3", "FULL"),
            "file append, fdatasync": file_appender(work / "s.log", fsync=True),
            "file append, no sync": file_appender(work / "u.log", fsync=False),
        }
        print(f"{len(RECORD)}-byte record, {args.runs} appends each, in {work}")
        for name, (append, close) in modes.items():
            samples = measure(append, args.runs)
            median, p90 = summarize(samples)
            ordered = sorted(samples)
            p99, worst = ordered[int(len(ordered) * 0.99)] * 1000, ordered[-1] * 1000
            print(
                f"{name:31} median {median:6.3f}  p90 {p90:6.3f}  p99 {p99:6.3f}  "
                f"max {worst:6.3f} ms"
            )
            close()


if __name__ == "__main__":
    main()
