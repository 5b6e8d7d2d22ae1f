"""The daemon's registry: UUID↔path bindings, persisted untitled notebooks, and the
inline dependency sets trusted for each path (keyed by their fingerprint).

A small sqlite database in the state dir. The Daemon actor owns the bindings;
a Room writes only its own untitled row and the trust rows of its path. WAL mode lets
both processes use it.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from pathlib import Path

from nbstage.actors.daemon.sqlite_space import give_back, reclaiming
from nbstage.protocol.common.offload import BlockingWorkDone
from nbstage.protocol.common.safe_files import private_database
from nbstage.protocol.daemon_actors.rooms import PathRecorded

log = logging.getLogger("nbstage.daemon")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS bindings (
    notebook_id TEXT PRIMARY KEY,
    path TEXT NOT NULL UNIQUE
);
CREATE TABLE IF NOT EXISTS trusted_deps (
    path TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    trusted_at REAL NOT NULL,
    PRIMARY KEY (path, fingerprint)
);
CREATE TABLE IF NOT EXISTS untitled (
    notebook_id TEXT PRIMARY KEY,
    content BLOB NOT NULL,
    updated_at REAL NOT NULL
);
"""


class Registry:
    def __init__(self, path: Path) -> None:
        self._db = sqlite3.connect(
            private_database(path), timeout=10, isolation_level=None, check_same_thread=False
        )
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")
        reclaiming(self._db)
        self._db.executescript(_SCHEMA)

    def close(self) -> None:
        self._db.close()

    def path_for(self, notebook_id: str) -> str | None:
        row = self._db.execute(
            "SELECT path FROM bindings WHERE notebook_id = ?", (notebook_id,)
        ).fetchone()
        return row[0] if row else None

    def id_for(self, path: str) -> str | None:
        row = self._db.execute(
            "SELECT notebook_id FROM bindings WHERE path = ?", (path,)
        ).fetchone()
        return row[0] if row else None

    def bind(self, notebook_id: str, path: str) -> None:
        """Bind the id to the path, replacing whatever either was bound to before."""
        with self._db:
            self._db.execute("BEGIN")
            self._db.execute(
                "DELETE FROM bindings WHERE path = ? OR notebook_id = ?", (path, notebook_id)
            )
            self._db.execute("INSERT INTO bindings VALUES (?, ?)", (notebook_id, path))
            self._db.execute("DELETE FROM untitled WHERE notebook_id = ?", (notebook_id,))
        give_back(self._db)

    def trusted_fingerprints(self, path: str) -> set[str]:
        """The dependency sets nbstage wrote or an agent approved for the notebook at path."""
        rows = self._db.execute("SELECT fingerprint FROM trusted_deps WHERE path = ?", (path,))
        return {row[0] for row in rows}

    def trust(self, path: str, fingerprint: str) -> None:
        with self._db:
            self._db.execute(
                "INSERT OR REPLACE INTO trusted_deps VALUES (?, ?, ?)",
                (path, fingerprint, time.time()),
            )

    def load_untitled(self, notebook_id: str) -> bytes | None:
        row = self._db.execute(
            "SELECT content FROM untitled WHERE notebook_id = ?", (notebook_id,)
        ).fetchone()
        return bytes(row[0]) if row else None

    def store_untitled(self, notebook_id: str, content: bytes) -> None:
        self._db.execute(
            "INSERT INTO untitled VALUES (?, ?, ?) ON CONFLICT(notebook_id) "
            "DO UPDATE SET content = excluded.content, updated_at = excluded.updated_at",
            (notebook_id, content, time.time()),
        )
        give_back(self._db)

    def forget_untitled(self, notebook_id: str) -> None:
        self._db.execute("DELETE FROM untitled WHERE notebook_id = ?", (notebook_id,))
        give_back(self._db)


def binding_recorded(done: BlockingWorkDone) -> PathRecorded:
    """What the room waiting for a binding (``BindingStored``) is told once it is written,
    or failed to be (logged)."""
    stored = done.token
    if not done.ok:
        log.error("could not record %s at %s: %s", stored.notebook_id, stored.path, done.error)
    problem = None if done.ok else f"the registry could not record the path: {done.error}"
    return PathRecorded(stored.path, stored.origin, problem)
