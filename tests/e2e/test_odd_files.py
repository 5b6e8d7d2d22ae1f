"""A notebook's file that is not what it seems, with a real daemon (issue 20 §4).

A FIFO put in an open notebook's place once held the save's worker thread until someone
wrote to it: the save never answered, ``daemon stop`` gave up after 40 s leaving the
daemon alive with its lock, and no daemon could start. A sparse file of a gigabyte took
the daemon to 2 GB before it was refused as not JSON. Now both are refused at once, as
they are opened, and the daemon's peak memory does not move.
"""

from __future__ import annotations

import fcntl
import os
import stat
from pathlib import Path

import nbformat
import pytest

from nbstage.entrypoints.common.statedir import prepare, state_paths
from nbstage.entrypoints.control.daemon_client import DaemonError
from tests.conftest import FAST_SETTINGS
from tests.support import daemon_running, run_cli

pytestmark = pytest.mark.e2e

PROMPT = 10.0
"""Every answer here is expected in milliseconds; this is the socket's limit."""


def a_notebook(path: Path) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.cells.append(nbformat.v4.new_code_cell("x = 1"))
    nbformat.write(nb, path)
    return path


def lock_is_free(state_dir: Path) -> bool:
    fd = os.open(state_paths(state_dir).lock, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    finally:
        os.close(fd)
    return True


def test_a_fifo_in_place_of_an_open_notebook(state_dir: Path, tmp_path: Path) -> None:
    path = a_notebook(tmp_path / "n.ipynb")
    with daemon_running(state_dir, FAST_SETTINGS) as daemon:
        with daemon.client(timeout=PROMPT) as client:
            joined = client.request("open", path=str(path))
            client.request("create_cell", notebook_id=joined["notebook_id"], source="y = 2")
            path.unlink()
            os.mkfifo(path)
            with pytest.raises(DaemonError) as refused:
                client.request("save", notebook_id=joined["notebook_id"])
        assert refused.value.code == "save_failed"
        assert f"Could not save {path}: it is a FIFO (named pipe)" in refused.value.message

        stopped = run_cli("daemon", "stop", state_dir=state_dir, timeout=PROMPT + 20)
        assert stopped.returncode == 0, stopped.stderr
        assert stopped.stdout == f"stopped daemon pid {daemon.pid}\n"
        assert lock_is_free(state_dir)

        started = run_cli("daemon", "start", state_dir=state_dir, timeout=60)
        assert started.returncode == 0, started.stderr
        assert started.stdout.startswith("started: "), started.stdout
    assert stat.S_ISFIFO(os.lstat(path).st_mode), "the FIFO is never replaced"


def peak_rss_kb(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(status.split("VmHWM:")[1].split()[0])


def test_a_sparse_notebook_over_the_limit_is_refused_before_it_is_read(
    state_dir: Path, tmp_path: Path
) -> None:
    """64 MiB that use no disk, against a limit of 1 MiB set through the setting: the
    daemon's peak memory (reset just before) must not grow by even half of it."""
    limit = 1 << 20
    sparse = tmp_path / "sparse.ipynb"
    with open(sparse, "wb") as f:
        f.truncate(64 << 20)
    env = {**FAST_SETTINGS, "NBSTAGE_MAX_FILE_BYTES": str(limit)}
    with daemon_running(state_dir, env) as daemon, daemon.client(timeout=PROMPT) as client:
        warm = client.request("open", path=str(a_notebook(tmp_path / "warm.ipynb")))
        client.request("leave", notebook_id=warm["notebook_id"], peer_id=warm["peer_id"])
        Path(f"/proc/{daemon.pid}/clear_refs").write_text("5")
        before = peak_rss_kb(daemon.pid)
        with pytest.raises(DaemonError) as refused:
            client.request("open", path=str(sparse))
        grown_kb = peak_rss_kb(daemon.pid) - before
    assert refused.value.code == "bad_request"
    assert refused.value.message == (
        f"{sparse} was not read as a notebook: it is 64.0 MiB (67,108,864 bytes), over the "
        f"limit of {limit:,} bytes (set by max_file_bytes in config.toml or "
        "NBSTAGE_MAX_FILE_BYTES)."
    )
    assert grown_kb < 32 * 1024, f"the daemon's peak grew by {grown_kb} kB"


def test_daemon_start_never_waits_on_a_fifo_where_a_daemon_s_output_goes(
    state_dir: Path,
) -> None:
    prepare(state_paths(state_dir))
    fifo = state_dir / "logs" / "daemon.out"
    os.mkfifo(fifo)
    started = run_cli("daemon", "start", state_dir=state_dir, timeout=PROMPT + 20)
    assert started.returncode == 1
    assert started.stderr == (
        f"Error: {fifo} was refused: it is a FIFO (named pipe), not a regular file\n"
    )


def test_a_fifo_where_the_sockets_are_recorded_is_replaced_unread(state_dir: Path) -> None:
    """socket-dir is the daemon's own record: a client asking whether a daemon runs takes
    the FIFO for no record, and the daemon that starts writes its record in its place."""
    prepare(state_paths(state_dir))
    record = state_dir / "socket-dir"
    os.mkfifo(record)
    started = run_cli("daemon", "start", state_dir=state_dir, timeout=PROMPT + 50)
    try:
        assert started.returncode == 0, started.stderr
        assert stat.S_ISREG(os.lstat(record).st_mode)
    finally:
        stopped = run_cli("daemon", "stop", state_dir=state_dir, timeout=PROMPT + 50)
    assert stopped.returncode == 0, stopped.stderr
