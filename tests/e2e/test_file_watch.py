"""A room watches its file: outside edits merge by cell id and the agent's next result
says so; a file that does not parse, or is deleted, is never written over by autosave
(issue 11 §2, SPEC §5 "File watch").

Each test runs a real daemon in a temp state dir and a real ``nbstage mcp`` driven by
the official MCP SDK client, and edits the notebook with nbformat while the room is open.
The daemon looks at open files every 0.2 s here.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import nbformat
import pytest

from nbstage.actors.daemon.notebook.notebook_merge import is_conflict_copy
from tests.conftest import FAST_SETTINGS
from tests.support import (
    RunningDaemon,
    daemon_running,
    mcp_client,
    run_bounded,
    texts_of,
    wait_until,
)

pytestmark = pytest.mark.e2e

LOOK_EVERY = {"NBSTAGE_FILE_CHECK_SECS": "0.2"}
QUIET_HEARTBEATS = 8
"""Heartbeats (0.2 s each) that cover well over the 1.0 s longest autosave delay."""


@pytest.fixture
def daemon(state_dir: Path) -> Iterator[RunningDaemon]:
    with daemon_running(state_dir, {**FAST_SETTINGS, **LOOK_EVERY}) as running:
        yield running


@pytest.fixture
def slow_autosave_daemon(state_dir: Path) -> Iterator[RunningDaemon]:
    """Autosave waits a minute, so the room's edits stay unsaved while the file changes."""
    env = {
        **FAST_SETTINGS,
        **LOOK_EVERY,
        "NBSTAGE_AUTOSAVE_DELAY_SECS": "60",
        "NBSTAGE_AUTOSAVE_MAX_DELAY_SECS": "120",
    }
    with daemon_running(state_dir, env) as running:
        yield running


def write_notebook(path: Path, cells: list[tuple[str, str]]) -> Path:
    nb = nbformat.v4.new_notebook()
    for cell_id, source in cells:
        cell = nbformat.v4.new_code_cell(source)
        cell["id"] = cell_id
        nb.cells.append(cell)
    nbformat.write(nb, path)
    return path


def edit_on_disk(path: Path, change: Any) -> None:
    """What a person's editor does: read the notebook, change it, write it back."""
    nb = nbformat.read(path, as_version=4)
    change(nb)
    nbformat.write(nb, path)


async def call(client: Any, name: str, **arguments: Any) -> Any:
    result = await client.call_tool(name, arguments)
    assert not result.is_error, f"{name}({arguments}) failed: {texts_of(result)}"
    return result


async def first_result_with(client: Any, prefix: str, within: float = 20.0) -> Any:
    """Call get_all_cells until a result carries a line starting with ``prefix``."""
    deadline = time.monotonic() + within
    while True:
        result = await call(client, "get_all_cells")
        if any(line.startswith(prefix) for line in texts_of(result)):
            return result
        assert time.monotonic() < deadline, f"no result carried {prefix!r} within {within}s"
        await anyio.sleep(0.05)


def notice_lines(result: Any) -> list[str]:
    return [line for line in texts_of(result) if line.startswith("[nbstage]")]


class Saves:
    """A watch subscription on the daemon socket: saved events, heartbeats as the clock."""

    def __init__(self, daemon: RunningDaemon) -> None:
        self.client = daemon.client(timeout=15)
        self.client.send("watch", client={"label": "file-watch-test"})
        assert self.client.receive()["type"] == "heartbeat"

    def during_quiet(self, notebook_id: str) -> list[dict[str, Any]]:
        beats, saved = 0, []
        while beats < QUIET_HEARTBEATS:
            frame = self.client.receive()
            if frame["type"] == "heartbeat":
                beats += 1
            elif frame["event"]["kind"] == "saved" and frame["event"]["notebook_id"] == notebook_id:
                saved.append(frame["event"])
        return saved

    def close(self) -> None:
        self.client.close()


def test_outside_edits_merge_by_cell_id_and_the_next_result_says_so(
    slow_autosave_daemon: RunningDaemon, tmp_path: Path
) -> None:
    path = write_notebook(
        tmp_path / "shared.ipynb", [("a", "a = 1"), ("b", "b = 2"), ("c", "c = 3")]
    )

    async def body() -> None:
        async with mcp_client(slow_autosave_daemon, "legacy") as client:
            await call(client, "connect_notebook", path=str(path))
            await call(client, "set_cell", cell_id="b", source="b = 'agent'")

            def person(nb: Any) -> None:
                nb.cells[0].source = "a = 'person'"
                nb.cells[1].source = "b = 'person'"
                del nb.cells[2]
                added = nbformat.v4.new_code_cell("d = 4")
                added["id"] = "d"
                nb.cells.append(added)

            edit_on_disk(path, person)
            merged = await first_result_with(client, f"[nbstage] {path} changed on disk")
            assert notice_lines(merged) == [
                f"[nbstage] {path} changed on disk: 1 cell updated, 1 added, 1 conflict, 1 deleted"
            ]
            cells = (await call(client, "get_all_cells", format="json")).structured_content
            shape = [(c["id"], c["source"]) for c in cells["cells"]]
            copy_id = shape[2][0]
            assert shape == [
                ("a", "a = 'person'"),
                ("b", "b = 'agent'"),
                (copy_id, "# nbstage: conflict copy from disk\nb = 'person'"),
                ("d", "d = 4"),
            ]
            assert notice_lines(await call(client, "get_all_cells")) == []

            await call(client, "save_notebook")
            on_disk = nbformat.read(path, as_version=4)
            assert [(c.id, c.source) for c in on_disk.cells] == shape
            assert [is_conflict_copy(c) for c in on_disk.cells] == [False, False, True, False]
            assert on_disk.cells[2].metadata["nbstage"] == {"conflict_copy": True}

    run_bounded(body)


def test_a_half_written_file_is_never_overwritten_until_it_parses_or_is_saved(
    daemon: RunningDaemon, tmp_path: Path
) -> None:
    path = write_notebook(tmp_path / "draft.ipynb", [("a", "a = 1"), ("b", "b = 2")])
    saves = Saves(daemon)

    async def body() -> None:
        async with mcp_client(daemon, "legacy") as client:
            joined = (await call(client, "connect_notebook", path=str(path))).structured_content
            notebook_id = joined["notebook_id"]
            whole = path.read_bytes()
            path.write_bytes(whole[: len(whole) // 2])
            half = path.read_bytes()
            paused = await first_result_with(client, "[nbstage] Autosave is paused")
            (line,) = notice_lines(paused)
            assert f"{path} is not a Jupyter notebook" in line
            assert "save_notebook" in line

            edited = await call(client, "set_cell", cell_id="a", source="a = 'agent'")
            assert notice_lines(edited) == [line], "every result says why, while it lasts"
            quiet = await anyio.to_thread.run_sync(saves.during_quiet, notebook_id)
            assert quiet == []
            await call(client, "get_all_cells")
            assert path.read_bytes() == half

            write_notebook(path, [("a", "a = 1"), ("b", "b = 'person'")])
            resumed = await first_result_with(client, f"[nbstage] {path} changed on disk")
            assert notice_lines(resumed) == [
                f"[nbstage] {path} changed on disk: 1 cell updated, 0 added, 0 conflicts"
            ]

            def merged_on_disk() -> bool:
                try:
                    cells = nbformat.read(path, as_version=4).cells
                except Exception:
                    return False
                return [c.source for c in cells] == ["a = 'agent'", "b = 'person'"]

            await anyio.to_thread.run_sync(wait_until, merged_on_disk, 10, "autosave to resume")

            path.write_text("{ not a notebook", encoding="utf-8")
            await first_result_with(client, "[nbstage] Autosave is paused")
            saved = await call(client, "save_notebook")
            assert notice_lines(saved) == [], "an explicit save writes, and ends the pause"
            assert [c.source for c in nbformat.read(path, as_version=4).cells] == [
                "a = 'agent'",
                "b = 'person'",
            ]

    try:
        run_bounded(body)
    finally:
        saves.close()


def test_a_file_deleted_under_an_open_room_is_written_again_by_the_next_save(
    daemon: RunningDaemon, tmp_path: Path
) -> None:
    path = write_notebook(tmp_path / "gone.ipynb", [("a", "a = 1")])
    saves = Saves(daemon)

    async def body() -> None:
        async with mcp_client(daemon, "legacy") as client:
            joined = (await call(client, "connect_notebook", path=str(path))).structured_content
            path.unlink()
            deleted = await first_result_with(client, f"[nbstage] {path} was deleted on disk")
            assert "the next save" in notice_lines(deleted)[0]
            cells = (await call(client, "get_all_cells", format="json")).structured_content
            assert [c["source"] for c in cells["cells"]] == ["a = 1"]
            quiet = await anyio.to_thread.run_sync(saves.during_quiet, joined["notebook_id"])
            assert quiet == []
            await call(client, "get_all_cells")
            assert not path.exists(), "nothing was edited since, so nothing brings it back"

            await call(client, "create_cell", source="b = 2")
            await anyio.to_thread.run_sync(wait_until, path.exists, 10, "autosave to recreate it")
            assert [c.source for c in nbformat.read(path, as_version=4).cells] == ["a = 1", "b = 2"]

    try:
        run_bounded(body)
    finally:
        saves.close()
