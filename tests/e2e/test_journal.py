"""A SIGKILLed daemon loses no acknowledged edit (issue 11 §10): the journal brings it back.

Autosave is an hour away, so each edit the daemon acknowledged is only in its journal
when the daemon is killed. The daemon started again restores it: a persisted untitled
notebook has it, and a file-backed one has it unsaved, its file untouched until a save.
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from tests.conftest import FAST_SETTINGS
from tests.support import daemon_running, pid_gone, start_daemon, wait_until

pytestmark = pytest.mark.e2e

NO_AUTOSAVE = {
    **FAST_SETTINGS,
    "NBSTAGE_AUTOSAVE_DELAY_SECS": "3600",
    "NBSTAGE_AUTOSAVE_MAX_DELAY_SECS": "3600",
    "NBSTAGE_FILE_CHECK_SECS": "0",
}
NOBODY_S_KERNEL = {"kernelspec": {"name": "nosuch", "display_name": "x", "language": "nosuch"}}


def sources(client, notebook_id: str) -> list[str]:
    cells = client.request("get_cells", notebook_id=notebook_id, format="json")["cells"]
    return [cell["source"] for cell in cells]


def test_edits_acknowledged_just_before_a_sigkill_survive_it(
    state_dir: Path, tmp_path: Path
) -> None:
    path = tmp_path / "work.ipynb"
    first = {"id": "first", "cell_type": "markdown", "metadata": {}, "source": "before"}
    notebook = {"cells": [first], "metadata": NOBODY_S_KERNEL, "nbformat": 4, "nbformat_minor": 5}
    path.write_bytes(orjson.dumps(notebook))
    on_disk = path.read_bytes()

    with daemon_running(state_dir, NO_AUTOSAVE) as daemon:
        with daemon.client() as client:
            file_id = client.request("open", path=str(path))["notebook_id"]
            untitled_id = client.request("create", runtime=None, ephemeral=False)["notebook_id"]
            client.request("create_cell", notebook_id=untitled_id, source="untitled = 1")
            client.request("set_cell", notebook_id=file_id, cell_id="first", source="after")
            client.request("create_cell", notebook_id=file_id, source="acked = 1")
            killed = daemon.pid
            daemon.kill()
        wait_until(lambda: pid_gone(killed), 10, "the killed daemon to be gone")
        assert path.read_bytes() == on_disk

        daemon.pid = start_daemon(state_dir, NO_AUTOSAVE).pid
        with daemon.client() as client:
            assert client.request("open", path=str(path))["notebook_id"] == file_id
            assert sources(client, file_id) == ["after", "acked = 1"]
            described = client.request("describe_room", notebook_id=file_id)
            assert described["unsaved"] is True
            assert path.read_bytes() == on_disk

            client.request("attach", notebook_id=untitled_id)
            assert sources(client, untitled_id) == ["untitled = 1"]

            client.request("save", notebook_id=file_id)
            saved = orjson.loads(path.read_bytes())
            assert ["".join(c["source"]) for c in saved["cells"]] == ["after", "acked = 1"]
            assert client.request("describe_room", notebook_id=file_id)["unsaved"] is False
