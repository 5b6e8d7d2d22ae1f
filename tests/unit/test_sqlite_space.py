"""The registry and the journal give their free pages back (actors/daemon/sqlite_space.py)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from nbstage.actors.daemon.notebook.journal_store import JournalStore
from nbstage.actors.daemon.registry import Registry
from nbstage.actors.daemon.sqlite_space import INCREMENTAL, should_give_back

BIG = 8 * 1024 * 1024


def size(path: Path) -> int:
    return path.stat().st_size


def auto_vacuum(path: Path) -> int:
    db = sqlite3.connect(path)
    try:
        return db.execute("PRAGMA auto_vacuum").fetchone()[0]
    finally:
        db.close()


@pytest.mark.parametrize(
    ("free", "total", "given"),
    [(0, 10, False), (255, 300, False), (256, 1024, False), (300, 1000, True), (900, 1000, True)],
)
def test_free_pages_are_given_back_when_they_are_many_and_a_good_part(free, total, given):
    assert should_give_back(free, total) is given


def test_the_registry_shrinks_after_a_large_untitled_notebook_is_saved_small(
    tmp_path: Path,
) -> None:
    path = tmp_path / "registry.sqlite3"
    registry = Registry(path)
    registry.store_untitled("nb", b"x" * BIG)
    registry.store_untitled("nb", b"small")
    registry.close()
    assert auto_vacuum(path) == INCREMENTAL
    assert size(path) < BIG // 8


def test_the_registry_shrinks_after_an_untitled_notebook_is_bound_to_a_file(
    tmp_path: Path,
) -> None:
    path = tmp_path / "registry.sqlite3"
    registry = Registry(path)
    registry.store_untitled("nb", b"x" * BIG)
    registry.bind("nb", str(tmp_path / "a.ipynb"))
    registry.close()
    assert size(path) < BIG // 8


def test_a_registry_made_without_incremental_vacuum_switches_and_shrinks_on_open(
    tmp_path: Path,
) -> None:
    path = tmp_path / "registry.sqlite3"
    old = sqlite3.connect(path, isolation_level=None)
    old.execute("PRAGMA journal_mode=WAL")
    old.execute("CREATE TABLE untitled (notebook_id TEXT PRIMARY KEY, content BLOB, t REAL)")
    old.execute("INSERT INTO untitled VALUES ('nb', ?, 0)", (b"x" * BIG,))
    old.execute("DELETE FROM untitled")
    old.close()
    assert size(path) > BIG

    Registry(path).close()

    assert auto_vacuum(path) == INCREMENTAL
    assert size(path) < BIG // 8


def test_the_journal_shrinks_after_its_records_are_truncated(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite3"
    store = JournalStore(path)
    for seq in range(8):
        store.append("nb", seq, b"r" * (BIG // 8))
    store.truncate("nb", 7)
    store.close()
    assert auto_vacuum(path) == INCREMENTAL
    assert size(path) < BIG // 8
    wal = path.with_name(path.name + "-wal")
    assert not wal.exists() or size(wal) <= 4 * 1024 * 1024
