"""The README's tour, followed literally: an agent registered with the plain
``nbstage mcp`` line and the console run with no ``--state-dir`` meet in one state dir,
so the console shows the notebook the agent just made."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.support import NBSTAGE, call_ok, run_bounded

pytestmark = pytest.mark.e2e


def nbstage(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*NBSTAGE, *args], env=env, capture_output=True, text=True, check=False, timeout=90
    )


def test_the_console_shows_what_an_agent_registered_as_the_readme_says_made(
    tmp_path: Path,
) -> None:
    from mcp import Client, StdioServerParameters
    from mcp_types import Implementation

    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "xdg")}
    env.pop("NBSTAGE_STATE_DIR", None)
    registered = StdioServerParameters(
        command=NBSTAGE[0], args=[*NBSTAGE[1:], "mcp"], env=env, cwd=str(tmp_path)
    )

    async def body() -> str:
        info = Implementation(name="agent", title="agent", version="1")
        async with Client(registered, mode="legacy", client_info=info) as client:
            made = await call_ok(client, "create_notebook")
            rooms = nbstage(env, "admin", "rooms", "--json")
            assert rooms.returncode == 0, rooms.stderr
            listed = [room["notebook_id"] for room in json.loads(rooms.stdout)["rooms"]]
            assert made["notebook_id"] in listed
            return made["notebook_id"]

    try:
        run_bounded(body)
        assert (tmp_path / "xdg" / "nbstage" / "registry.sqlite3").exists(), "the default dir"
    finally:
        stopped = nbstage(env, "daemon", "stop")
        assert stopped.returncode == 0, stopped.stderr
