"""Files that are not what they seem (issue 20 §4, §5): a FIFO, a link or an oversized
file where nbstage expects a notebook, a record or its config is refused at once and
says why; what nbstage writes in its state dir is 0600 whatever the umask.

Work that would block on a FIFO runs on a thread of its own: a test that finds it still
blocked after a few seconds opens the FIFO's other end to release it, then fails.
"""

from __future__ import annotations

import os
import stat
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import nbformat
import orjson
import pytest

from nbstage.actors.daemon.notebook import persistence
from nbstage.actors.daemon.notebook.atomic_writes import stamp_of
from nbstage.actors.daemon.notebook.notebook_files import load_notebook, read_on_disk
from nbstage.protocol.common.errors import ErrorCode, NbstageError
from nbstage.protocol.common.safe_files import (
    FileRefused,
    open_private,
    private_database,
    read_regular,
    write_private,
)
from nbstage.protocol.common.settings import load_settings
from tests.sqlite_locks import unheld_locks

BLOCKED_AFTER = 5.0


def promptly(work: Callable[[], Any], fifo: Path) -> Any:
    """``work()``'s result, or the exception it raised, if it finishes without waiting
    on ``fifo``; a failure naming the FIFO otherwise."""
    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append(work())
        except Exception as exc:
            outcome.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(BLOCKED_AFTER)
    if thread.is_alive():
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        thread.join(BLOCKED_AFTER)
        pytest.fail(f"the work waited on the FIFO {fifo} until its other end was opened")
    return outcome[0]


def a_notebook(path: Path, source: str = "x = 1") -> Path:
    nb = nbformat.v4.new_notebook()
    nb.cells.append(nbformat.v4.new_code_cell(source))
    nbformat.write(nb, path)
    return path


def source_of(path: Path, *limit: int) -> str:
    return "".join(load_notebook(path, *limit)["cells"][0]["source"])


@contextmanager
def umask(mask: int) -> Iterator[None]:
    before = os.umask(mask)
    try:
        yield
    finally:
        os.umask(before)


def mode_of(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


# --- reading --------------------------------------------------------------------------------


def test_a_fifo_in_a_notebook_s_place_is_reported_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "n.ipynb"
    os.mkfifo(fifo)
    seen = promptly(lambda: read_on_disk(fifo), fifo)
    assert seen.notebook is None
    assert seen.problem == (
        f"{fifo} was not read as a notebook: it is a FIFO (named pipe), not a regular file."
    )


def test_opening_a_fifo_as_a_notebook_is_refused_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "n.ipynb"
    os.mkfifo(fifo)
    refused = promptly(lambda: load_notebook(fifo), fifo)
    assert isinstance(refused, NbstageError)
    assert refused.code is ErrorCode.BAD_REQUEST
    assert "FIFO" in refused.message


def test_a_link_in_a_notebook_s_place_is_not_followed(tmp_path: Path) -> None:
    """A room's path is resolved when it is opened; a link found there later is one
    someone put in the file's place."""
    real = a_notebook(tmp_path / "real.ipynb")
    link = tmp_path / "n.ipynb"
    link.symlink_to(real)
    with pytest.raises(NbstageError) as refused:
        load_notebook(link)
    assert refused.value.message == (
        f"{link} was not read as a notebook: it is a symbolic link, which nbstage does not "
        "follow here."
    )
    assert "symbolic link" in read_on_disk(link).problem


def test_a_notebook_over_the_limit_is_refused_before_it_is_read(tmp_path: Path) -> None:
    path = a_notebook(tmp_path / "n.ipynb", "y = 2" * 1000)
    size = path.stat().st_size
    with pytest.raises(NbstageError) as refused:
        load_notebook(path, size - 1)
    assert refused.value.message == (
        f"{path} was not read as a notebook: it is {size / 1024:.1f} KiB ({size:,} bytes), "
        f"over the limit of {size - 1:,} bytes (set by max_file_bytes in config.toml or "
        "NBSTAGE_MAX_FILE_BYTES)."
    )
    assert source_of(path, size) == "y = 2" * 1000


def test_a_sparse_file_far_over_the_limit_is_refused_without_reading(tmp_path: Path) -> None:
    sparse = tmp_path / "big.ipynb"
    with open(sparse, "wb") as f:
        f.truncate(1 << 40)
    with pytest.raises(FileRefused, match=r"1024\.0 GiB"):
        read_regular(sparse, 1 << 20)


def test_an_execution_record_that_is_a_fifo_is_not_waited_on(tmp_path: Path) -> None:
    fifo = tmp_path / "abc.json"
    os.mkfifo(fifo)
    assert promptly(lambda: persistence.read_execution(tmp_path, "abc"), fifo) is None


def test_a_config_toml_that_is_a_fifo_is_refused_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "config.toml"
    os.mkfifo(fifo)
    refused = promptly(lambda: load_settings(tmp_path, {}), fifo)
    assert isinstance(refused, FileRefused)
    assert str(refused) == f"{fifo} was refused: it is a FIFO (named pipe), not a regular file"


def test_the_file_limit_is_a_setting(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text("max_file_bytes = 1000\n")
    assert load_settings(tmp_path, {}).max_file_bytes == 1000
    env = {"NBSTAGE_MAX_FILE_BYTES": "2000"}
    assert load_settings(tmp_path, env).max_file_bytes == 2000


# --- saving over what is not a notebook's file --------------------------------------------


@pytest.mark.parametrize("explicit", [True, False], ids=["save_notebook", "autosave"])
def test_a_save_never_replaces_a_fifo_and_answers_at_once(tmp_path: Path, explicit: bool) -> None:
    path = a_notebook(tmp_path / "n.ipynb")
    expected = stamp_of(path)
    snapshot = orjson.dumps(load_notebook(path))
    path.unlink()
    os.mkfifo(path)
    saved = promptly(
        lambda: persistence.save_checked(path, snapshot, expected, explicit),
        path,
    )
    if explicit:
        assert isinstance(saved, NbstageError)
        assert saved.code is ErrorCode.SAVE_FAILED
        assert "it is a FIFO (named pipe), not a regular file" in saved.message
    else:
        assert saved.notebook is None
        assert "FIFO" in saved.problem
    assert stat.S_ISFIFO(os.lstat(path).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["n.ipynb"]


def test_an_explicit_save_never_replaces_a_link_put_in_the_file_s_place(tmp_path: Path) -> None:
    path = a_notebook(tmp_path / "n.ipynb")
    snapshot = orjson.dumps(load_notebook(path))
    elsewhere = a_notebook(tmp_path / "elsewhere.ipynb", "kept = True")
    path.unlink()
    path.symlink_to(elsewhere)
    with pytest.raises(NbstageError) as refused:
        persistence.save_checked(path, snapshot, None, True)
    assert refused.value.code is ErrorCode.SAVE_FAILED
    assert "symbolic link" in refused.value.message
    assert path.is_symlink()
    assert source_of(elsewhere) == "kept = True"


# --- files the state dir holds ------------------------------------------------------------


def test_a_private_file_is_0600_under_umask_022_and_an_old_one_is_narrowed(
    tmp_path: Path,
) -> None:
    made, old = tmp_path / "made.log", tmp_path / "old.log"
    old.write_text("before\n")
    old.chmod(0o644)
    with umask(0o022):
        for path in (made, old):
            os.close(open_private(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT))
    assert (mode_of(made), mode_of(old)) == (0o600, 0o600)
    assert old.read_text() == "before\n"


def test_a_private_file_is_never_opened_through_a_link_or_on_a_fifo(tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.write_text("theirs\n")
    target.chmod(0o644)
    (tmp_path / "link.log").symlink_to(target)
    with pytest.raises(FileRefused, match="symbolic link"):
        open_private(tmp_path / "link.log", os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    assert (target.read_text(), mode_of(target)) == ("theirs\n", 0o644)

    fifo = tmp_path / "fifo.log"
    os.mkfifo(fifo)
    refused = promptly(lambda: open_private(fifo, os.O_WRONLY | os.O_APPEND | os.O_CREAT), fifo)
    assert isinstance(refused, FileRefused)
    assert "FIFO" in refused.reason


def test_a_private_write_replaces_a_link_without_writing_through_it(tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.write_text("theirs\n")
    record = tmp_path / "daemon.alive"
    record.symlink_to(target)
    with umask(0o022):
        write_private(record, b"mine\n")
    assert target.read_text() == "theirs\n"
    assert (record.is_symlink(), record.read_bytes(), mode_of(record)) == (False, b"mine\n", 0o600)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["daemon.alive", "target"]


def test_a_database_and_its_side_files_are_0600(tmp_path: Path) -> None:
    import sqlite3

    db_path = tmp_path / "registry.sqlite3"
    with umask(0o022):
        db = sqlite3.connect(private_database(db_path), isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("CREATE TABLE t (x)")
        db.execute("INSERT INTO t VALUES (1)")
        modes = {path.name: mode_of(path) for path in tmp_path.iterdir()}
        db.close()
    assert modes == {
        "registry.sqlite3": 0o600,
        "registry.sqlite3-wal": 0o600,
        "registry.sqlite3-shm": 0o600,
    }


def test_an_old_database_and_its_side_files_are_narrowed_and_a_link_refused(
    tmp_path: Path,
) -> None:
    import sqlite3

    db_path = tmp_path / "registry.sqlite3"
    with umask(0o022):
        db = sqlite3.connect(db_path, isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("CREATE TABLE t (x)")
        try:
            assert {mode_of(path) for path in tmp_path.iterdir()} == {0o644}
            private_database(db_path)
            modes = {path.name: mode_of(path) for path in tmp_path.iterdir()}
        finally:
            db.close()
    assert set(modes.values()) == {0o600}, modes
    assert len(modes) == 3
    linked = tmp_path / "linked.sqlite3"
    linked.symlink_to(db_path)
    with pytest.raises(FileRefused, match="symbolic link"):
        private_database(linked)


def test_a_second_connection_to_a_database_leaves_the_first_ones_locks_in_place(
    tmp_path: Path,
) -> None:
    """A Room's registry connection opens beside the Daemon actor's, in one process. When
    that second open dropped the first's locks, a read-only reader in another process (a
    test polling the registry) truncated the -shm file under the daemon's mapping, and
    the daemon's next write died of SIGBUS."""
    import sqlite3

    db_path = tmp_path / "registry.sqlite3"
    first = sqlite3.connect(private_database(db_path), isolation_level=None)
    second = None
    try:
        first.execute("PRAGMA journal_mode=WAL")
        first.execute("CREATE TABLE t (x)")
        first.execute("INSERT INTO t VALUES (1)")
        assert unheld_locks(db_path) == []
        second = sqlite3.connect(private_database(db_path), isolation_level=None)
        assert unheld_locks(db_path) == []
        second.execute("INSERT INTO t VALUES (2)")
        assert first.execute("SELECT count(*) FROM t").fetchone()[0] == 2
    finally:
        first.close()
        if second is not None:
            second.close()
    assert unheld_locks(db_path) == ["registry.sqlite3-shm", "registry.sqlite3"]


def test_a_registry_refused_for_what_it_is_trusts_nothing(tmp_path: Path) -> None:
    from nbstage.actors.daemon.room.environment import trusted_for as _trusted_for

    fifo = tmp_path / "registry.sqlite3"
    os.mkfifo(fifo)
    assert promptly(lambda: _trusted_for(fifo, str(tmp_path / "n.ipynb")), fifo) == set()


def test_a_file_longer_than_fstat_said_is_read_only_to_one_past_the_limit(
    tmp_path: Path,
) -> None:
    """A file that grew between the ``fstat`` and the read: 3 MiB where 10 bytes were."""
    from nbstage.protocol.common import safe_files

    path = tmp_path / "growing.ipynb"
    path.write_bytes(b"x" * (3 << 20))
    fd = os.open(path, os.O_RDONLY)
    try:
        assert len(safe_files._read_bounded(fd, 10, 2 << 20)) == (2 << 20) + 1
        os.lseek(fd, 0, os.SEEK_SET)
        assert len(safe_files._read_bounded(fd, 10, 4 << 20)) == 3 << 20
    finally:
        os.close(fd)
