"""An agent's steady stream of edits is saved about once per ``autosave_max_delay_secs``.

Before, every autosave after the first was due at once (the cap counted from the
stream's first edit), so the daemon wrote the notebook back to back for as long as the
edits went on. Each save replaces the file, so each one shows as a new (inode, mtime).
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import orjson
import pytest

from tests.conftest import FAST_SETTINGS
from tests.support import daemon_running

pytestmark = pytest.mark.e2e

CAP_SECS = 1.0
EDITING_SECS = 4.0
STREAM = {
    **FAST_SETTINGS,
    "NBSTAGE_AUTOSAVE_DELAY_SECS": "0.5",
    "NBSTAGE_AUTOSAVE_MAX_DELAY_SECS": str(CAP_SECS),
    "NBSTAGE_FILE_CHECK_SECS": "0",
}


def _version(path: Path) -> tuple[int, int]:
    stat = path.stat()
    return stat.st_ino, stat.st_mtime_ns


def _versions(path: Path, stop: threading.Event, seen: set[tuple[int, int]]) -> None:
    while not stop.is_set():
        seen.add(_version(path))
        stop.wait(0.002)


def test_a_steady_stream_of_edits_is_saved_once_per_cap_not_back_to_back(
    state_dir: Path, tmp_path: Path
) -> None:
    path = tmp_path / "stream.ipynb"
    cells = [
        {
            "id": f"c{i}",
            "cell_type": "code",
            "metadata": {},
            "source": f"x = {i}",
            "outputs": [],
            "execution_count": None,
        }
        for i in range(300)
    ]
    path.write_bytes(
        orjson.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    )
    with daemon_running(state_dir, STREAM) as daemon, daemon.client() as client:
        notebook_id = client.request("open", path=str(path))["notebook_id"]
        seen = {_version(path)}
        stop = threading.Event()
        watcher = threading.Thread(target=_versions, args=(path, stop, seen))
        watcher.start()
        try:
            edits = 0
            end = time.monotonic() + EDITING_SECS
            while time.monotonic() < end:
                client.request(
                    "set_cell", notebook_id=notebook_id, cell_id="c150", source=f"y = {edits}"
                )
                edits += 1
        finally:
            stop.set()
            watcher.join()
    saves = len(seen) - 1
    assert edits > 100, f"only {edits} edits in {EDITING_SECS} s: the stream was not steady"
    assert 2 <= saves <= EDITING_SECS / CAP_SECS + 1, f"{saves} saves in {EDITING_SECS} s"
