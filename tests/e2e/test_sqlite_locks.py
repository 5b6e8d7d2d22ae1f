"""The daemon's sqlite databases stay locked while it runs, as sqlite locks them, when its
rooms open connections of their own beside the Daemon actor's: another process that
opens them (a person's sqlite3, a test that polls the registry, the next daemon of an
upgrade) must never take them for unused (tests/sqlite_locks.py)."""

from __future__ import annotations

import pytest

from tests.sqlite_locks import unheld_locks
from tests.support import RunningDaemon

pytestmark = pytest.mark.e2e


def test_the_daemon_keeps_its_sqlite_locks_as_its_rooms_connect(daemon: RunningDaemon) -> None:
    """Each persisted untitled room writes its row on a registry connection of its own
    before ``create`` answers, and journals an edit before answering it; two rooms make a
    second journal connection as well."""
    for n in range(2):
        notebook_id = daemon.request("create", runtime=None, ephemeral=False)["notebook_id"]
        daemon.request("create_cell", notebook_id=notebook_id, source=f"cell {n}")
    for name in ("registry.sqlite3", "journal.sqlite3"):
        assert unheld_locks(daemon.paths.root / name) == [], name
