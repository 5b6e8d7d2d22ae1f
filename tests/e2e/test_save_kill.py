"""A daemon SIGKILLed around a save never leaves an invalid notebook, nor loses an
acknowledged save (issue 11, §8)."""

from __future__ import annotations

import os
import random
import time
from pathlib import Path

import nbformat
import pytest

from nbstage.actors.daemon.notebook import notebook_files
from nbstage.entrypoints.control.daemon_client import DaemonClient
from tests.conftest import FAST_SETTINGS
from tests.support import (
    RunningDaemon,
    assert_daemon_gone,
    pid_gone,
    start_daemon,
    wait_until,
)

pytestmark = pytest.mark.e2e

CYCLES = int(os.environ.get("NBSTAGE_SAVE_KILL_CYCLES", "30"))
SEED = int(os.environ.get("NBSTAGE_SAVE_KILL_SEED", "11"))
BALLAST_CHARS = 600_000
NO_KERNEL = {"name": "no-such-kernel", "language": "no-such-language", "display_name": "none"}


def marker(cycle: int) -> str:
    return f"acknowledged edit of cycle {cycle}"


def write_start(path: Path) -> None:
    ballast = nbformat.v4.new_code_cell("# " + "x" * BALLAST_CHARS)
    notebook = nbformat.v4.new_notebook(cells=[ballast], metadata={"kernelspec": NO_KERNEL})
    path.write_text(nbformat.writes(notebook))


def sources_on_disk(path: Path) -> list[str]:
    """The notebook's cell sources; fails unless the file is a complete, valid notebook."""
    notebook = nbformat.reads(path.read_text(), as_version=4)
    nbformat.validate(notebook)
    return [cell.source for cell in notebook.cells]


def answers_sent(client: DaemonClient) -> dict[int, dict]:
    """Every frame the killed daemon wrote before it died, by request id."""
    frames = {}
    while True:
        try:
            frame = client.receive()
        except (ConnectionError, OSError):
            return frames
        frames[frame.get("id")] = frame


@pytest.mark.timeout(60 + 5 * CYCLES)
def test_a_daemon_killed_around_saves_never_leaves_an_invalid_file_or_loses_a_save(
    state_dir: Path, tmp_path: Path
) -> None:
    """Each cycle opens the file in a fresh daemon, makes an acknowledged edit, sends
    `save` and SIGKILLs the daemon after a seeded random wait of 0 to 30 ms (the kill's
    timing, not a stand-in for a condition): before the save starts, while its temp file
    is written, or after its answer.

    A save counts as acknowledged when its answer was sent at all: after the kill the
    socket is drained, so an answer the daemon wrote just before dying counts too. After
    every kill the file must parse and validate, hold every acknowledged save, and be the
    only non-hidden entry in its directory (a killed write may leave a hidden temp file
    beside it, never in its place).

    The notebook carries 600 kB of ballast so a save takes about 15 ms and a kill lands
    inside the write in some cycles, and names no installed kernelspec so no kernel
    starts. Still, a cycle costs a daemon start (about 1 s, most of it `nbstage daemon
    start`) and an open: 100 cycles took 153 s on 2 cores, too long for `make test`,
    which runs 30 (about 50 s). ``NBSTAGE_SAVE_KILL_CYCLES=100`` runs the issue's 100, and
    ``NBSTAGE_SAVE_KILL_SEED`` picks other kill points; the same seed gives the same waits.
    """
    rng = random.Random(SEED)
    notebook = tmp_path / "saved.ipynb"
    write_start(notebook)
    acknowledged: list[int] = []
    left_behind: set[str] = set()
    kills = {"answered": 0, "unanswered": 0, "mid_write": 0}
    daemon = start_daemon(state_dir, FAST_SETTINGS)
    try:
        for cycle in range(CYCLES):
            with daemon.client(timeout=30) as client:
                opened = client.request("open", path=str(notebook))
                assert opened["kernel_status"] == "none"
                notebook_id = opened["notebook_id"]
                client.request("create_cell", notebook_id=notebook_id, source=marker(cycle))
                save_id = client.send("save", notebook_id=notebook_id)
                time.sleep(rng.uniform(0, 0.03))
                killed = daemon.pid
                daemon.kill()
                wait_until(lambda k=killed: pid_gone(k), 10, f"daemon {killed} to die")
                answer = answers_sent(client).get(save_id)
            if answer is not None:
                assert answer["type"] == "result", answer
                acknowledged.append(cycle)
                kills["answered"] += 1
            else:
                kills["unanswered"] += 1
            sources = sources_on_disk(notebook)
            missing = [c for c in acknowledged if marker(c) not in sources]
            assert not missing, f"cycle {cycle}: acknowledged saves of cycles {missing} lost"
            visible = [p.name for p in tmp_path.iterdir() if not p.name.startswith(".")]
            assert visible == [notebook.name], f"cycle {cycle}: {visible}"
            temps = {p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")}
            kills["mid_write"] += bool(temps - left_behind)
            left_behind |= temps
            daemon = start_daemon(state_dir, FAST_SETTINGS)
    finally:
        assert_daemon_gone(daemon)
    assert sources_on_disk(notebook)[0].startswith("# xxx"), "the ballast cell stayed first"
    assert kills["answered"], f"no kill came after a save's answer: {kills}"
    assert kills["unanswered"], f"no kill came before a save's answer: {kills}"
    print(f"{CYCLES} cycles, seed {SEED}: {kills}; hidden temp files left: {len(left_behind)}")


def test_a_room_that_opens_removes_the_temp_files_killed_saves_left(
    daemon: RunningDaemon, tmp_path: Path
) -> None:
    """What the kills above leave behind goes when the notebook is next opened, once it is
    old enough that no save in flight can own it."""
    notebook = tmp_path / "swept.ipynb"
    notebook.write_text(
        nbformat.writes(nbformat.v4.new_notebook(metadata={"kernelspec": NO_KERNEL}))
    )
    long_ago = time.time() - notebook_files.STALE_TEMP_SECS - 60
    stale = tmp_path / f".{notebook.name}.0123456789ab.tmp"
    stale.write_text("a save killed in the middle")
    os.utime(stale, (long_ago, long_ago))
    in_flight = tmp_path / f".{notebook.name}.ba9876543210.tmp"
    in_flight.write_text("a save still being written")
    daemon.request("open", path=str(notebook))
    wait_until(lambda: not stale.exists(), 10, "the old temp file to be removed")
    assert in_flight.exists()
    assert nbformat.reads(notebook.read_text(), as_version=4).metadata.kernelspec == NO_KERNEL
