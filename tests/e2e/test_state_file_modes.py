"""Everything nbstage writes in its state dir is its user's alone, whatever the umask
(issue 20 §5): the journal holds every edited source, execution records hold full
outputs, and the logs name paths and errors.

A daemon and an ``nbstage mcp`` session run under umask 022, which would give a file
0644; the session creates a notebook, edits it and runs a cell, and then every file
under the state dir (and the socket dir, where that lies elsewhere) must be closed to
group and others. Two kinds are judged apart: a socket is reached by connecting, which
needs its write bit, so a kernel's IPC socket (made by ZMQ in the kernel, under the
umask) must only be closed to writing; and what ``envs/`` holds are Python environments
(installed packages, made by uv and venv and changed by ``%pip``), behind ``envs/``'s own
0700.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import FAST_SETTINGS
from tests.support import call_ok, daemon_running, mcp_client, run_bounded

pytestmark = pytest.mark.e2e

OPEN_TO_OTHERS = stat.S_IRWXG | stat.S_IRWXO
WRITABLE_BY_OTHERS = stat.S_IWGRP | stat.S_IWOTH


def everything_under(root: Path) -> Iterator[tuple[Path, os.stat_result]]:
    for folder, dirs, files in os.walk(root):
        if Path(folder) == root / "envs":
            dirs.clear()
        for name in dirs + files:
            path = Path(folder) / name
            yield path, os.lstat(path)


def open_to_others(info: os.stat_result) -> bool:
    if stat.S_ISSOCK(info.st_mode):
        return bool(info.st_mode & WRITABLE_BY_OTHERS)
    return bool(info.st_mode & OPEN_TO_OTHERS)


def test_state_files_are_private_under_umask_022(state_dir: Path, tmp_path: Path) -> None:
    before = os.umask(0o022)
    try:
        with daemon_running(state_dir, FAST_SETTINGS) as daemon:

            async def body() -> None:
                async with mcp_client(daemon, "legacy", cwd=tmp_path) as client:
                    await call_ok(client, "create_notebook", ephemeral=False)
                    cell = await call_ok(client, "create_cell", source="print('secret')")
                    ran = await call_ok(client, "execute_cell", cell_id=cell["cell_id"])
                    assert ran["execution"]["status"] == "done", ran

            run_bounded(body)
            roots = {daemon.paths.root, daemon.paths.socket_dir}
            seen = [(path, info) for root in roots for path, info in everything_under(root)]
    finally:
        os.umask(before)
    names = {path.name for path, _ in seen}
    assert {"journal.sqlite3", "registry.sqlite3", "daemon.log", "envs"} <= names, names
    assert any(path.parent.name == "executions" for path, _ in seen), names
    loose = [
        f"{path} {stat.filemode(info.st_mode)}"
        for path, info in seen
        if not stat.S_ISLNK(info.st_mode) and open_to_others(info)
    ]
    assert loose == [], "\n".join(loose)
