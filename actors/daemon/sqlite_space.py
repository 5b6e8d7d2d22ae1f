"""Free pages given back to the file system by the registry and the journal.

sqlite reuses the pages a deleted or rewritten row leaves, but never shrinks its file
unless asked: an untitled notebook saved large once kept the registry that large. Both
databases run with ``auto_vacuum=INCREMENTAL``, and after a write that may free pages
``give_back`` returns them once they are a good part of the file, so a steady cycle of
rewrites (autosaves, journal truncations) reuses its pages instead of moving them. A
database made without it switches with one VACUUM on its first open; that copy costs
time in proportion to its size, once. In WAL mode the file shrinks at the checkpoint
that follows, and ``journal_size_limit`` cuts the WAL back after each checkpoint.

Worker-thread work, like every other use of these connections.
"""

from __future__ import annotations

import logging
import sqlite3
from typing import Final

log = logging.getLogger("nbstage.sqlite")

INCREMENTAL: Final = 2
"""``PRAGMA auto_vacuum``'s value for INCREMENTAL."""
WAL_LIMIT_BYTES: Final = 4 * 1024 * 1024
MIN_FREE_PAGES: Final = 256
FREE_SHARE: Final = 4
"""Free pages are given back when they are over a quarter of the file."""


def reclaiming(db: sqlite3.Connection) -> sqlite3.Connection:
    """Set up a fresh connection, before its schema is made, to give free pages back."""
    db.execute(f"PRAGMA journal_size_limit={WAL_LIMIT_BYTES}")
    if db.execute("PRAGMA auto_vacuum").fetchone()[0] != INCREMENTAL:
        db.execute(f"PRAGMA auto_vacuum={INCREMENTAL}")
        try:
            db.execute("VACUUM")
        except sqlite3.OperationalError as exc:
            log.warning("could not switch %s to incremental vacuum yet: %s", _name(db), exc)
    return db


def should_give_back(free_pages: int, total_pages: int) -> bool:
    return free_pages >= MIN_FREE_PAGES and free_pages * FREE_SHARE > total_pages


def give_back(db: sqlite3.Connection) -> int:
    """Return the free pages to the file system when there are many; how many were.

    ``executescript`` steps the pragma to its end: ``execute`` would free a single page."""
    free: int = db.execute("PRAGMA freelist_count").fetchone()[0]
    total = db.execute("PRAGMA page_count").fetchone()[0]
    if not should_give_back(free, total):
        return 0
    db.executescript("PRAGMA incremental_vacuum")
    db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
    return free


def _name(db: sqlite3.Connection) -> str:
    row = db.execute("PRAGMA database_list").fetchone()
    return row[2] if row else "a database"
