"""Every MCP tool through the official SDK client, in both protocol eras (SPEC §4, §6, §8).

Each test starts its own daemon (the ``daemon`` fixture) and one or two real
``nbstage mcp`` processes driven by ``mcp.Client`` in legacy (``initialize``) or
2026-07-28 (per-request ``_meta``) mode. Within a test one client and one notebook
are shared, so a kernel starts at most once or twice per test.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import mcp
import nbformat
import pytest

from nbstage.protocol.mcp.page_links import APP_ONLY_TOOLS
from nbstage.protocol.mcp.tools import TOOLS
from tests.e2e.test_kernels import wait_for_file
from tests.support import RunningDaemon, mcp_client

pytestmark = pytest.mark.e2e

MODES = pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])

NO_SESSION = "No active notebook session. Call connect_notebook or create_notebook first."

TEST_BUDGET_SECS = 90
"""No test's client side may take longer than this; a hang fails instead of stalling."""

TINY_PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC"
)
"""A 1x1 PNG, base64; small enough to embed in a cell's source."""

# A valid call of every tool that needs an active session.
SESSION_TOOL_CALLS: dict[str, dict[str, Any]] = {
    "get_cell": {"cell_id": "c1"},
    "get_all_cells": {},
    "create_cell": {"source": "1"},
    "set_cell": {"cell_id": "c1", "source": "2"},
    "delete_cell": {"cell_id": "c1"},
    "move_cell": {"cell_id": "c1"},
    "execute_cell": {"cell_id": "c1"},
    "run_all_cells": {},
    "get_results": {"execution_id": "e1"},
    "interrupt_kernel": {},
    "restart_kernel": {},
    "replace_match": {"cell_id": "c1", "match": "a", "content": "b"},
    "replace_regex": {"cell_id": "c1", "pattern": "a", "content": "b"},
    "save_notebook": {"path": "somewhere.ipynb"},
    "manage_dependencies": {},
    "show_notebook": {},
    "clear_outputs": {},
    "add_cell_tags": {"cell_id": "c1", "tags": ["t"]},
    "remove_cell_tags": {"cell_id": "c1", "tags": ["t"]},
}


def run(body: Callable[..., Awaitable[None]], *args: Any) -> None:
    """Run one test's async body under a time budget; a lone failure is raised unwrapped."""

    async def bounded() -> None:
        with anyio.fail_after(TEST_BUDGET_SECS):
            await body(*args)

    try:
        anyio.run(bounded)
    except BaseExceptionGroup as group:
        leaves = _leaves(group)
        if len(leaves) == 1:
            raise leaves[0] from None
        raise


def _leaves(group: BaseExceptionGroup) -> list[BaseException]:
    """The exceptions inside nested task-group exception groups."""
    found: list[BaseException] = []
    for inner in group.exceptions:
        found += _leaves(inner) if isinstance(inner, BaseExceptionGroup) else [inner]
    return found


def texts(result: Any) -> list[str]:
    return [item.text for item in result.content if item.type == "text"]


async def ok(client: Any, name: str, **arguments: Any) -> dict[str, Any]:
    """Call a tool that must succeed; return its structuredContent."""
    result = await client.call_tool(name, arguments)
    assert not result.is_error, f"{name}({arguments}) failed: {texts(result)}"
    assert result.structured_content is not None, f"{name} returned no structuredContent"
    return result.structured_content


async def fails(client: Any, name: str, **arguments: Any) -> str:
    """Call a tool that must return a tool error; return its text."""
    result = await client.call_tool(name, arguments)
    assert result.is_error, f"{name}({arguments}) should fail: {result.structured_content}"
    return "\n".join(texts(result))


async def fails_with_code(client: Any, name: str, code: str, **arguments: Any) -> str:
    """A domain failure: a tool error whose structuredContent names the daemon's code."""
    result = await client.call_tool(name, arguments)
    assert result.is_error, f"{name}({arguments}) should fail: {result.structured_content}"
    assert result.structured_content["code"] == code, texts(result)
    return "\n".join(texts(result))


def stdout(text: str) -> dict[str, Any]:
    return {"output_type": "stream", "name": "stdout", "text": text}


# --- before any session -------------------------------------------------------------------


@MODES
def test_before_any_session_tools_refuse_and_arguments_are_checked(
    daemon: RunningDaemon, mode: str
) -> None:
    async def body() -> None:
        async with mcp_client(daemon, mode) as client:
            listing = await client.call_tool("list_active_notebooks", {})
            assert not listing.is_error
            assert listing.structured_content == {"notebooks": []}
            assert texts(listing) == ["No notebooks are open."]

            no_session_tools = {t.name for t in TOOLS} - {
                "list_active_notebooks",
                "connect_notebook",
                "create_notebook",
                "disconnect_notebook",
                *APP_ONLY_TOOLS,
            }
            assert set(SESSION_TOOL_CALLS) == no_session_tools
            for name, arguments in SESSION_TOOL_CALLS.items():
                assert await fails(client, name, **arguments) == NO_SESSION, name

            assert "No active notebook session" in await fails(client, "disconnect_notebook")

            with pytest.raises(mcp.MCPError) as unknown:
                await client.call_tool("no_such_tool", {})
            assert unknown.value.code == -32602
            assert unknown.value.message == "Unknown tool: no_such_tool"

            bad_arguments = [
                ("get_cell", {"cell_id": 3}, "cell_id"),
                ("get_cell", {}, "cell_id"),
                ("create_cell", {"index": "first"}, "index"),
                ("create_cell", {"source": "1", "colour": "red"}, "colour"),
                ("execute_cell", {"cell_id": "c1", "timeout_secs": "soon"}, "timeout_secs"),
                ("get_all_cells", {"include_outputs": "yes"}, "include_outputs"),
                ("get_all_cells", {"start": 1.5}, "start"),
                ("set_cell", {"cell_id": "c1", "and_run": 1}, "and_run"),
                ("connect_notebook", {"path": ["a.ipynb"]}, "path"),
                ("create_notebook", {"ephemeral": "no"}, "ephemeral"),
                ("list_active_notebooks", {"verbose": True}, "verbose"),
            ]
            for name, arguments, argument in bad_arguments:
                text = await fails(client, name, **arguments)
                assert f"Invalid arguments for {name}" in text, text
                assert f"'{argument}'" in text, text

            neither = await fails(client, "connect_notebook")
            both = await fails(client, "connect_notebook", path="a.ipynb", notebook_id="x")
            assert neither == both == "Give exactly one of path and notebook_id."

            missing = daemon.paths.root.parent / "missing.ipynb"
            text = await fails(client, "connect_notebook", path="missing.ipynb")
            assert f"No notebook file at {missing}" in text
            unknown_id = "00000000-0000-4000-8000-000000000000"
            text = await fails(client, "connect_notebook", notebook_id=unknown_id)
            assert unknown_id in text
            assert "not available" in text

            # Failed connects leave no session behind.
            assert await fails(client, "get_cell", cell_id="c1") == NO_SESSION
            assert daemon.request("list_rooms")["rooms"] == []

    run(body)


# --- every tool on one notebook -------------------------------------------------------------


@MODES
def test_every_notebook_tool_on_one_notebook(daemon: RunningDaemon, mode: str) -> None:
    async def body() -> None:
        async with mcp_client(daemon, mode) as client:
            created = await ok(client, "create_notebook")
            nb = created["notebook_id"]
            assert created == {
                "notebook_id": nb,
                "path": None,
                "ephemeral": True,
                "runtime": "python",
            }

            # create_cell: append, insert at an index, and run.
            a = await ok(client, "create_cell", source="a = 1", and_run=True)
            assert a["index"] == 0
            assert a["execution"]["status"] == "done"
            assert a["execution"]["outputs"] == []
            title = await ok(client, "create_cell", source="# Title", cell_type="markdown", index=0)
            assert title == {"cell_id": title["cell_id"], "index": 0}
            show = await ok(client, "create_cell", source="print(a * 3)", and_run=True)
            assert show["index"] == 2
            assert show["execution"]["cell_id"] == show["cell_id"]
            assert show["execution"]["status"] == "done"
            assert show["execution"]["outputs"] == [stdout("3\n")]
            a_id, title_id, show_id = a["cell_id"], title["cell_id"], show["cell_id"]
            await fails_with_code(client, "create_cell", "bad_index", source="x", index=99)

            # get_cell
            cell = (await ok(client, "get_cell", cell_id=title_id))["cell"]
            assert cell == {
                "cell_id": title_id,
                "cell_type": "markdown",
                "source": "# Title",
                "execution_count": None,
                "outputs": [],
            }
            cell = (await ok(client, "get_cell", cell_id=show_id))["cell"]
            assert cell["source"] == "print(a * 3)"
            assert cell["outputs"] == [stdout("3\n")]
            assert cell["execution_count"] == show["execution"]["execution_count"]
            await fails_with_code(client, "get_cell", "cell_not_found", cell_id="nope")

            # get_all_cells: summary, a window, json, rich.
            summary = await client.call_tool("get_all_cells", {})
            assert summary.structured_content["total"] == 3
            listed = summary.structured_content["cells"]
            assert [c["cell_id"] for c in listed] == [title_id, a_id, show_id]
            assert [c["index"] for c in listed] == [0, 1, 2]
            assert [c["cell_type"] for c in listed] == ["markdown", "code", "code"]
            assert texts(summary)[0].startswith("3 cells:")
            window = await ok(client, "get_all_cells", start=1, count=1)
            assert window["total"] == 3
            assert [(c["index"], c["cell_id"]) for c in window["cells"]] == [(1, a_id)]
            as_json = await ok(client, "get_all_cells", format="json")
            assert [c["id"] for c in as_json["cells"]] == [title_id, a_id, show_id]
            assert [c["source"] for c in as_json["cells"]] == ["# Title", "a = 1", "print(a * 3)"]
            assert "outputs" not in as_json["cells"][2]
            with_outputs = await ok(client, "get_all_cells", format="json", include_outputs=True)
            assert with_outputs["cells"][2]["outputs"][0]["text"] == "3\n"
            rich = await client.call_tool("get_all_cells", {"format": "rich", "start": 2})
            assert not rich.is_error
            assert rich.structured_content["cells"][0]["cell_id"] == show_id
            assert rich.structured_content["cells"][0]["source"] == "print(a * 3)"
            assert any("print(a * 3)" in text for text in texts(rich))
            await fails(client, "get_all_cells", format="yaml")

            # set_cell: change without running, then run a changed cell.
            assert await ok(client, "set_cell", cell_id=a_id, source="a = 10") == {"cell_id": a_id}
            assert (await ok(client, "get_cell", cell_id=a_id))["cell"]["source"] == "a = 10"
            ran = await ok(client, "execute_cell", cell_id=a_id)
            assert ran["execution"]["status"] == "done"
            changed = await ok(
                client, "set_cell", cell_id=show_id, source="print(a * 4)", and_run=True
            )
            assert changed["cell_id"] == show_id
            assert changed["execution"]["outputs"] == [stdout("40\n")]
            await fails_with_code(client, "set_cell", "cell_not_found", cell_id="nope", source="")

            # replace_match: one match, none, several, and context that picks one.
            replaced = await ok(
                client, "replace_match", cell_id=show_id, match="4", content="5", and_run=True
            )
            assert replaced["execution"]["outputs"] == [stdout("50\n")]
            text = await fails_with_code(
                client, "replace_match", "no_match", cell_id=show_id, match="zzz", content="y"
            )
            assert "not found" in text
            b_id = (await ok(client, "create_cell", source="b = 2 + 2 + 2"))["cell_id"]
            text = await fails_with_code(
                client, "replace_match", "ambiguous_match", cell_id=b_id, match="2", content="3"
            )
            assert "matches 3 places" in text
            await ok(
                client,
                "replace_match",
                cell_id=b_id,
                match="2",
                content="3",
                context_before="+ ",
                context_after=" +",
            )
            assert (await ok(client, "get_cell", cell_id=b_id))["cell"]["source"] == "b = 2 + 3 + 2"

            # replace_regex: one match with a group, several matches, a bad pattern.
            regexed = await ok(
                client,
                "replace_regex",
                cell_id=b_id,
                pattern=r"^b = (\d)",
                content=r"b = \1\1",
                and_run=True,
            )
            assert regexed["execution"]["status"] == "done"
            assert (await ok(client, "get_cell", cell_id=b_id))["cell"]["source"] == (
                "b = 22 + 3 + 2"
            )
            await fails_with_code(
                client, "replace_regex", "ambiguous_match", cell_id=b_id, pattern=r"\d", content=""
            )
            await fails_with_code(
                client, "replace_regex", "bad_pattern", cell_id=b_id, pattern="(", content=""
            )

            # move_cell: to the front, then after another cell.
            assert await ok(client, "move_cell", cell_id=b_id) == {"cell_id": b_id, "index": 0}
            moved = await ok(client, "move_cell", cell_id=b_id, after_cell_id=show_id)
            assert moved == {"cell_id": b_id, "index": 3}
            order = await ok(client, "get_all_cells")
            assert [c["cell_id"] for c in order["cells"]] == [title_id, a_id, show_id, b_id]
            await fails(client, "move_cell", cell_id=b_id, after_cell_id=b_id)

            # delete_cell
            scratch = (await ok(client, "create_cell", source="scratch"))["cell_id"]
            assert await ok(client, "delete_cell", cell_id=scratch) == {"deleted": scratch}
            await fails_with_code(client, "get_cell", "cell_not_found", cell_id=scratch)
            await fails_with_code(client, "delete_cell", "cell_not_found", cell_id=scratch)

            # run_all_cells: an error cancels the cells behind it.
            boom = (await ok(client, "create_cell", source="raise ValueError('boom')"))["cell_id"]
            after = (await ok(client, "create_cell", source="print('after')"))["cell_id"]
            everything = (await ok(client, "run_all_cells"))["executions"]
            assert [e["cell_id"] for e in everything] == [a_id, show_id, b_id, boom, after]
            assert [e["status"] for e in everything] == [
                "done",
                "done",
                "done",
                "error",
                "cancelled",
            ]
            assert everything[1]["outputs"] == [stdout("50\n")]
            (raised,) = everything[3]["outputs"]
            assert (raised["output_type"], raised["ename"], raised["evalue"]) == (
                "error",
                "ValueError",
                "boom",
            )
            assert everything[4]["outputs"] == []
            await fails(client, "execute_cell", cell_id=title_id)

            # get_results: a finished execution, an unknown one.
            fetched = await ok(client, "get_results", execution_id=everything[1]["execution_id"])
            assert fetched["execution"] == everything[1]
            await fails_with_code(
                client, "get_results", "execution_not_found", execution_id="no-such-execution"
            )

            # interrupt_kernel: a sleeping cell answers 'running'; the interrupt ends it.
            sleeper = await ok(
                client,
                "create_cell",
                source="import time\ntime.sleep(60)",
                and_run=True,
                timeout_secs=1.0,
            )
            slept = sleeper["execution"]
            assert slept["status"] == "running"
            assert await ok(client, "interrupt_kernel") == {"interrupted": True}
            # Cells run in order, so the probe settles only after the sleeper has: it is
            # cancelled by the sleeper's error if it was queued behind it, else it runs.
            probe = await ok(client, "create_cell", source="'after the interrupt'", and_run=True)
            assert probe["execution"]["status"] in ("cancelled", "done")
            interrupted = (await ok(client, "get_results", execution_id=slept["execution_id"]))[
                "execution"
            ]
            assert interrupted["status"] == "error"
            assert [o.get("ename") for o in interrupted["outputs"]] == ["KeyboardInterrupt"]

            # restart_kernel: an in-flight run becomes an error, and variables are gone.
            again = await ok(client, "execute_cell", cell_id=sleeper["cell_id"], timeout_secs=1.0)
            assert again["execution"]["status"] == "running"
            assert again["execution"]["execution_id"] != slept["execution_id"]
            assert await ok(client, "restart_kernel") == {"restarted": True}
            cut = await ok(client, "get_results", execution_id=again["execution"]["execution_id"])
            assert cut["execution"]["status"] == "error"
            lost = (await ok(client, "execute_cell", cell_id=show_id))["execution"]
            assert lost["status"] == "error"
            assert [o.get("ename") for o in lost["outputs"]] == ["NameError"]

            # An untitled notebook needs a path to be saved.
            text = await fails_with_code(client, "save_notebook", "no_path")
            assert "save_notebook" in text
            assert "path" in text

            listing = await ok(client, "list_active_notebooks")
            assert listing == {
                "notebooks": [
                    {
                        "notebook_id": nb,
                        "path": None,
                        "peers": ["tester"],
                        "kernel_status": listing["notebooks"][0]["kernel_status"],
                        "kernelspec": "python3",
                        "env_source": "pool",
                        "fingerprint": None,
                        "active": True,
                        "parked": False,
                    }
                ]
            }

            # disconnect: the session is gone and the error says how to come back.
            assert await ok(client, "disconnect_notebook") == {"disconnected": nb}
            expected = (
                "No active notebook session (disconnected). "
                f'Reconnect with: connect_notebook(notebook_id="{nb}")'
            )
            assert await fails(client, "get_cell", cell_id=a_id) == expected
            assert await fails(client, "execute_cell", cell_id=a_id) == expected
            back = await ok(client, "connect_notebook", notebook_id=nb)
            assert (back["notebook_id"], back["path"], back["cell_count"]) == (nb, None, 8)
            assert back["resumed"] is False
            assert back["kernel_status"] is not None
            assert back["kernelspec"] == "python3"
            # Connecting to the notebook that is already active answers the same facts.
            same = await ok(client, "connect_notebook", notebook_id=nb)
            assert (same["notebook_id"], same["cell_count"], same["resumed"]) == (nb, 8, False)
            assert same["kernel_status"] is not None
            assert same["kernelspec"] == "python3"

    run(body)


# --- a whole agent workflow -----------------------------------------------------------------


@MODES
def test_agent_workflow_saves_disconnects_and_reconnects_by_path(
    daemon: RunningDaemon, mode: str, tmp_path: Path
) -> None:
    async def body() -> None:
        async with mcp_client(daemon, mode, cwd=tmp_path) as client:
            nb = (await ok(client, "create_notebook"))["notebook_id"]
            setup = await ok(client, "create_cell", source="import math\nradius = 2")
            area = await ok(
                client,
                "create_cell",
                source="area = math.pi * radius ** 2\nprint(f'{area:.2f}')",
            )
            await ok(client, "create_cell", source="## Result", cell_type="markdown")
            check = await ok(client, "create_cell", source="area > 12")
            ran = (await ok(client, "run_all_cells"))["executions"]
            assert [e["cell_id"] for e in ran] == [
                setup["cell_id"],
                area["cell_id"],
                check["cell_id"],
            ]
            assert [e["status"] for e in ran] == ["done", "done", "done"]
            assert ran[1]["outputs"] == [stdout("12.57\n")]
            assert ran[2]["outputs"] == [{"output_type": "execute_result", "text": "True"}]

            path = str((tmp_path / "analysis.ipynb").resolve())
            assert await ok(client, "save_notebook", path="analysis.ipynb") == {
                "notebook_id": nb,
                "path": path,
                "working_dir": str(tmp_path),
            }
            on_disk = nbformat.read(path, as_version=4)
            nbformat.validate(on_disk)
            assert [c.cell_type for c in on_disk.cells] == ["code", "code", "markdown", "code"]
            assert on_disk.cells[1].outputs[0]["text"] == "12.57\n"
            listing = (await ok(client, "list_active_notebooks"))["notebooks"]
            assert [(n["notebook_id"], n["path"], n["active"]) for n in listing] == [
                (nb, path, True)
            ]

            assert await ok(client, "disconnect_notebook") == {"disconnected": nb}
            dropped_after_save = await fails(client, "get_all_cells")

            back = await ok(client, "connect_notebook", path="analysis.ipynb")
            assert (back["notebook_id"], back["path"], back["cell_count"]) == (nb, path, 4)
            assert back["resumed"] is False
            cell = (await ok(client, "get_cell", cell_id=area["cell_id"]))["cell"]
            assert cell["outputs"] == [stdout("12.57\n")]
            assert cell["execution_count"] == ran[1]["execution_count"]
            again = await ok(client, "get_results", execution_id=ran[1]["execution_id"])
            assert again["execution"]["status"] == "done"
            assert again["execution"]["outputs"] == [stdout("12.57\n")]
            # The kernel kept its variables across the disconnect.
            kept = await ok(client, "create_cell", source="print(round(area, 1))", and_run=True)
            assert kept["execution"]["outputs"] == [stdout("12.6\n")]
            await ok(client, "save_notebook")
            assert len(nbformat.read(path, as_version=4).cells) == 5

            no_session = (
                "No active notebook session (disconnected). "
                f'Reconnect with: connect_notebook(notebook_id="{nb}") — file: {path}'
            )
            assert await ok(client, "disconnect_notebook") == {"disconnected": nb}
            assert await fails(client, "get_all_cells") == no_session
            # The same message is due when the file came from save_notebook, not the connect.
            assert dropped_after_save == no_session

    run(body)


# --- images -----------------------------------------------------------------------------------


@MODES
def test_a_png_comes_back_as_image_content_never_as_base64_text(
    daemon: RunningDaemon, mode: str
) -> None:
    # Split in two, so that the source (which get_cell shows as text) never holds the
    # whole base64 string: only an output could put it there.
    half = len(TINY_PNG) // 2
    source = (
        "import base64\n"
        "from IPython.display import Image, display\n"
        f'png = "{TINY_PNG[:half]}" + "{TINY_PNG[half:]}"\n'
        'display(Image(data=base64.b64decode(png), format="png"))'
    )

    def check(result: Any) -> None:
        assert not result.is_error, texts(result)
        images = [item for item in result.content if item.type == "image"]
        assert [(i.mime_type, i.data) for i in images] == [("image/png", TINY_PNG)]
        assert all(TINY_PNG not in text for text in texts(result))
        assert TINY_PNG not in json.dumps(result.structured_content)

    async def body() -> None:
        async with mcp_client(daemon, mode) as client:
            await ok(client, "create_notebook")
            ran = await client.call_tool(
                "create_cell", {"source": source, "and_run": True, "timeout_secs": 30}
            )
            check(ran)
            (output,) = ran.structured_content["execution"]["outputs"]
            assert output["output_type"] == "display_data"
            check(
                await client.call_tool("get_cell", {"cell_id": ran.structured_content["cell_id"]})
            )
            check(
                await client.call_tool(
                    "get_results",
                    {"execution_id": ran.structured_content["execution"]["execution_id"]},
                )
            )

    run(body)


# --- two clients, one notebook ----------------------------------------------------------------


@MODES
def test_two_clients_edit_and_execute_in_one_notebook(daemon: RunningDaemon, mode: str) -> None:
    async def body() -> None:
        async with (
            mcp_client(daemon, mode, label="alice") as alice,
            mcp_client(daemon, mode, label="bob") as bob,
        ):
            nb = (await ok(alice, "create_notebook"))["notebook_id"]
            first = await ok(alice, "create_cell", source="shared = 41", and_run=True)
            assert first["execution"]["status"] == "done"

            joined = await ok(bob, "connect_notebook", notebook_id=nb)
            assert (joined["notebook_id"], joined["cell_count"], joined["resumed"]) == (
                nb,
                1,
                False,
            )
            seen = (await ok(bob, "get_all_cells"))["cells"]
            assert [c["cell_id"] for c in seen] == [first["cell_id"]]

            # One kernel: bob sees the variable alice set.
            second = await ok(bob, "create_cell", source="print(shared + 1)", and_run=True)
            assert second["execution"]["outputs"] == [stdout("42\n")]
            cell = (await ok(alice, "get_cell", cell_id=second["cell_id"]))["cell"]
            assert (cell["source"], cell["outputs"]) == ("print(shared + 1)", [stdout("42\n")])

            # Bob's edit of alice's cell, run by bob, is what alice sees and runs against.
            await ok(bob, "set_cell", cell_id=first["cell_id"], source="shared = 99", and_run=True)
            cell = (await ok(alice, "get_cell", cell_id=first["cell_id"]))["cell"]
            assert cell["source"] == "shared = 99"
            rerun = await ok(alice, "execute_cell", cell_id=second["cell_id"])
            assert rerun["execution"]["outputs"] == [stdout("100\n")]

            for client in (alice, bob):
                (listed,) = (await ok(client, "list_active_notebooks"))["notebooks"]
                assert listed["notebook_id"] == nb
                assert sorted(listed["peers"]) == ["alice", "bob"]
                assert (listed["active"], listed["parked"]) == (True, False)

    run(body)


# --- long runs and concurrent calls -----------------------------------------------------------


@MODES
def test_a_long_run_answers_running_and_does_not_block_other_calls(
    daemon: RunningDaemon, mode: str, tmp_path: Path
) -> None:
    release = tmp_path / "release"

    async def body() -> None:
        async with mcp_client(daemon, mode) as client:
            await ok(client, "create_notebook")
            warm = await ok(client, "create_cell", source="1 + 1", and_run=True)
            assert warm["execution"]["status"] == "done"
            # The cell runs until the reads below are answered, however long they take.
            source = wait_for_file(release, "'slept'")
            cell_id = (await ok(client, "create_cell", source=source))["cell_id"]

            first = (await ok(client, "execute_cell", cell_id=cell_id, timeout_secs=0.5))[
                "execution"
            ]
            assert first["status"] == "running"
            assert first["outputs"] == []
            eid = first["execution_id"]

            finished: list[str] = []
            answers: dict[str, Any] = {}

            async def wait_for_the_run() -> None:
                answers["wait"] = await ok(client, "execute_cell", cell_id=cell_id)
                finished.append("execute_cell")

            async def read_meanwhile() -> None:
                # Every other task is blocked: the execute_cell request is on the server's
                # stdin, waiting for its answer, before these reads are written.
                await anyio.wait_all_tasks_blocked()
                answers["running"] = await ok(client, "get_results", execution_id=eid)
                answers["cell"] = await ok(client, "get_cell", cell_id=cell_id)
                answers["list"] = await ok(client, "list_active_notebooks")
                finished.append("reads")
                release.touch()

            async with anyio.create_task_group() as group:
                group.start_soon(wait_for_the_run)
                group.start_soon(read_meanwhile)

            assert finished == ["reads", "execute_cell"]
            assert answers["running"]["execution"]["status"] == "running"
            assert answers["cell"]["cell"]["source"].endswith("'slept'")
            # Executing a running cell again joins the same execution and waits for it.
            done = answers["wait"]["execution"]
            assert done["execution_id"] == first["execution_id"]
            assert done["status"] == "done"
            assert done["outputs"] == [{"output_type": "execute_result", "text": "'slept'"}]
            fetched = await ok(client, "get_results", execution_id=first["execution_id"])
            assert fetched["execution"] == done

    run(body)


@MODES
def test_an_interrupt_while_the_kernel_starts_does_not_kill_it(
    daemon: RunningDaemon, mode: str
) -> None:
    async def body() -> None:
        async with mcp_client(daemon, mode) as client:
            nb = (await ok(client, "create_notebook"))["notebook_id"]
            # create_notebook answers while the kernel is still starting.
            assert daemon.request("list_rooms")["rooms"][0]["kernel_status"] == "starting"
            assert await ok(client, "interrupt_kernel") == {"interrupted": True}
            ran = await ok(client, "create_cell", source="1 + 1", and_run=True)
            assert ran["execution"]["status"] == "done", ran["execution"]
            assert ran["execution"]["outputs"] == [{"output_type": "execute_result", "text": "2"}]
            (listed,) = (await ok(client, "list_active_notebooks"))["notebooks"]
            assert (listed["notebook_id"], listed["kernel_status"]) == (nb, "idle")

    run(body)


RESTART_BUDGET_SECS = 60
"""A kernel restart answers well within this, even on a slow, loaded machine: a bound on
a hang, never a wait."""


@MODES
def test_an_interrupt_while_the_kernel_restarts_neither_kills_it_nor_hangs_the_restart(
    daemon: RunningDaemon, mode: str
) -> None:
    async def body() -> None:
        async with mcp_client(daemon, mode) as client:
            await ok(client, "create_notebook")
            warm = await ok(client, "create_cell", source="1 + 1", and_run=True)
            assert warm["execution"]["status"] == "done"
            answers: dict[str, Any] = {}

            async def restart() -> None:
                with anyio.move_on_after(RESTART_BUDGET_SECS):
                    answers["restart"] = await ok(client, "restart_kernel")

            async def interrupt() -> None:
                # The restart request is on the server's stdin before the interrupt is sent.
                await anyio.wait_all_tasks_blocked()
                answers["interrupt"] = await ok(client, "interrupt_kernel")

            async with anyio.create_task_group() as group:
                group.start_soon(restart)
                group.start_soon(interrupt)

            assert answers["interrupt"] == {"interrupted": True}
            assert answers.get("restart") == {"restarted": True}, (
                f"restart_kernel got no answer within {RESTART_BUDGET_SECS} s"
            )
            ran = await ok(client, "create_cell", source="1 + 1", and_run=True)
            assert ran["execution"]["status"] == "done", ran["execution"]

    run(body)
