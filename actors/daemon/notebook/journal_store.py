"""The journal's table: ``journal.sqlite3`` in the state dir, beside the registry.

Worker-thread work only: a Room uses its store on its own journal lane, one call at a
time. WAL with ``synchronous=NORMAL``: a commit is a write to the WAL, which the page
cache keeps when the daemon is killed (not when the machine loses power). Automatic
checkpoints are off, so their fsync never sits in front of an acknowledgement; a
passive checkpoint follows each truncation instead.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from nbstage.actors.daemon.sqlite_space import give_back, reclaiming
from nbstage.protocol.common.safe_files import private_database

_SCHEMA = """
CREATE TABLE IF NOT EXISTS journal (
    notebook_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    record BLOB NOT NULL,
    PRIMARY KEY (notebook_id, seq)
)
"""


class JournalStore:
    """Connects on first use, so it can be made on the actor thread."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._db: sqlite3.Connection | None = None

    def _conn(self) -> sqlite3.Connection:
        if self._db is None:
            db = sqlite3.connect(
                private_database(self.path),
                timeout=10,
                isolation_level=None,
                check_same_thread=False,
            )
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute("PRAGMA wal_autocheckpoint=0")
            reclaiming(db)
            db.execute(_SCHEMA)
            self._db = db
        return self._db

    def append(self, notebook_id: str, seq: int, record: bytes) -> None:
        self._conn().execute(
            "INSERT OR REPLACE INTO journal VALUES (?, ?, ?)", (notebook_id, seq, record)
        )

    def read(self, notebook_id: str) -> list[tuple[int, bytes]]:
        rows = self._conn().execute(
            "SELECT seq, record FROM journal WHERE notebook_id = ? ORDER BY seq", (notebook_id,)
        )
        return [(seq, bytes(record)) for seq, record in rows]

    def truncate(self, notebook_id: str, upto: int) -> None:
        db = self._conn()
        db.execute("DELETE FROM journal WHERE notebook_id = ? AND seq <= ?", (notebook_id, upto))
        if not give_back(db):
            db.execute("PRAGMA wal_checkpoint(PASSIVE)")

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None
