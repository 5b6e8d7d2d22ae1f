"""Reads while the daemon is away (SPEC §6): a real daemon is stopped under a real
`nbstage mcp`, which then serves get_cell, get_all_cells and list_active_notebooks from
its last snapshot, marked stale, and refuses changes and runs as before."""

from __future__ import annotations

import re
from pathlib import Path

import anyio
import pytest

from tests.support import RunningDaemon, call_ok, mcp_client, run_bounded, texts_of

pytestmark = pytest.mark.e2e

MODES = pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])

STALE = re.compile(r"^\[nbstage\] daemon unreachable: showing the notebook as of \d\d:\d\d:\d\d$")
AS_OF = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d$")

UNREACHABLE = (
    "The notebook daemon is unreachable right now; nbstage is reconnecting and will "
    "rejoin your notebook. Try again in a moment."
)
"""The answer to a call whose request was already on its way when the link went down."""


def degraded(unavailable: str) -> str:
    return (
        f"The notebook daemon is unreachable, so {unavailable} right now. "
        "nbstage is reconnecting and will rejoin this notebook; try again shortly."
    )


def content_of(result) -> list[dict]:
    return [item.model_dump(exclude_none=True) for item in result.content]


@MODES
def test_reads_while_the_daemon_is_away_show_the_snapshot_and_changes_are_refused(
    daemon: RunningDaemon, tmp_path: Path, mode: str
) -> None:
    async def body() -> None:
        async with mcp_client(daemon, mode, label="sam", cwd=tmp_path, no_autostart=True) as c:
            created = await call_ok(c, "create_notebook")
            await call_ok(c, "create_cell", source="a = 1")
            ran = await call_ok(c, "create_cell", source="print('hi')", and_run=True)
            live = {
                "get_cell": await c.call_tool("get_cell", {"cell_id": ran["cell_id"]}),
                "get_all_cells": await c.call_tool("get_all_cells", {}),
                "list_active_notebooks": await c.call_tool("list_active_notebooks", {}),
            }
            assert "hi" in texts_of(live["get_cell"])[0]

            await anyio.to_thread.run_sync(daemon.stop)

            for name, before in live.items():
                arguments = {"cell_id": ran["cell_id"]} if name == "get_cell" else {}
                stale = await c.call_tool(name, arguments)
                assert not stale.is_error, texts_of(stale)
                first, *rest = content_of(stale)
                assert STALE.match(first["text"]), first
                assert rest == content_of(before), name
                data = stale.structured_content
                assert data["stale"] is True
                assert AS_OF.match(data["as_of"]), data["as_of"]
                (notice,) = data["notices"]
                assert notice["kind"] == "stale"
                assert first["text"] == f"[nbstage] {notice['message']}"
                marks = ("stale", "as_of", "notices")
                assert {k: v for k, v in data.items() if k not in marks} == (
                    before.structured_content
                )
            listed = live["list_active_notebooks"].structured_content["notebooks"]
            assert [n["notebook_id"] for n in listed] == [created["notebook_id"]]

            unread = await c.call_tool("get_all_cells", {"format": "json"})
            assert unread.is_error
            assert "has not read this notebook's cells in that format yet" in texts_of(unread)[0]

            for name, arguments, unavailable in [
                (
                    "set_cell",
                    {"cell_id": ran["cell_id"], "source": "2"},
                    "the notebook cannot be changed",
                ),
                ("execute_cell", {"cell_id": ran["cell_id"]}, "cells cannot run"),
            ]:
                refused = await c.call_tool(name, arguments)
                assert refused.is_error
                assert texts_of(refused) in ([degraded(unavailable)], [UNREACHABLE]), name
                assert not STALE.match(texts_of(refused)[0])

    run_bounded(body)


@MODES
def test_the_sessions_own_notebooks_are_listed_while_the_daemon_is_away(
    daemon: RunningDaemon, tmp_path: Path, mode: str
) -> None:
    async def body() -> None:
        async with mcp_client(daemon, mode, label="sam", cwd=tmp_path, no_autostart=True) as c:
            parked = await call_ok(c, "create_notebook")
            active = await call_ok(c, "create_notebook")

            await anyio.to_thread.run_sync(daemon.kill)

            listed = await c.call_tool("list_active_notebooks", {})
            assert not listed.is_error, texts_of(listed)
            assert STALE.match(texts_of(listed)[0])
            rows = {n["notebook_id"]: n for n in listed.structured_content["notebooks"]}
            assert set(rows) == {parked["notebook_id"], active["notebook_id"]}
            assert rows[active["notebook_id"]]["active"] is True
            assert rows[parked["notebook_id"]]["parked"] is True
            for row in rows.values():
                assert (row["peers"], row["kernel_status"]) == (None, "unknown")

    run_bounded(body)
