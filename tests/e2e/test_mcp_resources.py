"""Notebooks as MCP resources (issue 25) through the official SDK client and a real
`nbstage mcp`, in both protocol eras: the list, the templates, reads of the active and
of a parked notebook (the active one stays active), a cell, the errors, and
subscriptions (resources/subscribe on a legacy connection, a subscriptions/listen stream
on a 2026-07-28 one): an edit by another client is announced, and a thousand edits in a
second are announced a bounded number of times."""

from __future__ import annotations

import base64
import json
import os
import signal
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import nbformat
import pytest

from tests.images import png_bytes
from tests.support import (
    RunningDaemon,
    call_ok,
    mcp_client,
    run_bounded,
    session_manager_pid,
)

pytestmark = pytest.mark.e2e

MODES = ["legacy", "2026-07-28"]
PLOT = "display(Image(data=png_bytes(40, 30), format='png'))"


def write_notebook(path: Path, cells: list[tuple[str, str]], png: bytes | None = None) -> None:
    notebook = nbformat.v4.new_notebook()
    for cell_id, source in cells:
        cell = nbformat.v4.new_code_cell(source)
        cell.id = cell_id
        notebook.cells.append(cell)
    if png is not None:
        data = {"image/png": base64.b64encode(png).decode(), "text/plain": "<Figure>"}
        notebook.cells[-1].outputs = [nbformat.v4.new_output("display_data", data=data)]
    nbformat.write(notebook, path)


async def expect_error(call: Any, *codes: int) -> None:
    from mcp import MCPError

    with pytest.raises(MCPError) as raised:
        await call
    assert raised.value.code in codes, repr(raised.value)


@pytest.mark.parametrize("mode", MODES)
def test_notebooks_are_listed_read_and_refused_as_resources(
    daemon: RunningDaemon, tmp_path: Path, mode: str
) -> None:
    write_notebook(tmp_path / "first.ipynb", [("a", "x = 1"), ("plot", "")], png_bytes(40, 30))
    write_notebook(tmp_path / "second.ipynb", [("b", "print('second')")])
    not_found = -32602 if mode == "2026-07-28" else -32002

    async def body() -> None:
        async with mcp_client(daemon, mode, cwd=tmp_path) as client:
            first = await call_ok(client, "connect_notebook", path="first.ipynb")
            second = await call_ok(client, "connect_notebook", path="second.ipynb")
            first_uri = f"nbstage://notebook/{first['notebook_id']}"
            second_uri = f"nbstage://notebook/{second['notebook_id']}"

            listed = (await client.list_resources()).resources
            by_uri = {str(r.uri): r for r in listed}
            assert list(by_uri)[:2] == [second_uri, first_uri], "active first, then parked"
            assert by_uri[first_uri].name == "first.ipynb"
            assert by_uri[first_uri].mime_type == "application/x-ipynb+json"

            templates = (await client.list_resource_templates()).resource_templates
            assert {t.uri_template for t in templates} == {
                "nbstage://notebook/{notebook_id}",
                "nbstage://notebook/{notebook_id}/cell/{cell_id}",
            }

            read = (await client.read_resource(first_uri)).contents
            text, *blobs = read
            notebook = json.loads(text.text)
            nbformat.validate(nbformat.from_dict(notebook))
            assert [c["id"] for c in notebook["cells"]] == ["a", "plot"]
            (blob,) = blobs
            assert base64.b64decode(blob.blob) == png_bytes(40, 30)
            assert blob.mime_type == "image/png"
            shown = notebook["cells"][1]["outputs"][0]["data"]["image/png"]
            assert str(blob.uri) in shown, "the text names the blob, never its base64"
            assert blob.blob not in text.text

            active = await call_ok(client, "list_active_notebooks")
            still = [n["notebook_id"] for n in active["notebooks"] if n["active"]]
            assert still == [second["notebook_id"]], "reading a parked notebook switched nothing"

            cell = (await client.read_resource(f"{second_uri}/cell/b")).contents
            assert json.loads(cell[0].text)["source"] == "print('second')"

            missing = "nbstage://notebook/00000000-0000-0000-0000-000000000000"
            await expect_error(client.read_resource(missing), not_found)
            await expect_error(client.read_resource(f"{second_uri}/cell/nope"), not_found)
            await expect_error(client.read_resource("file:///etc/passwd"), not_found)
            await expect_error(client.read_resource("nbstage://notebook/a/b/c"), -32602)
            await expect_error(client.read_resource("not a uri"), -32602)

    run_bounded(body, budget=120)


@contextmanager
def legacy_only() -> Iterator[None]:
    """The SDK warns that resources/subscribe is gone from 2026-07-28; it is what the
    2025 eras subscribe with."""
    from mcp.shared.exceptions import MCPDeprecationWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        yield


def thousand_edits(daemon: RunningDaemon, notebook_id: str) -> float:
    """A thousand edits as fast as one daemon connection takes them; how long they took."""
    started = time.monotonic()
    with daemon.client() as raw:
        for n in range(1000):
            raw.request("set_cell", notebook_id=notebook_id, cell_id="a", source=f"x = {n}")
    return time.monotonic() - started


def updates_counter() -> tuple[list[str], list[str], Any]:
    updated: list[str] = []
    list_changes: list[str] = []

    async def handler(message: Any) -> None:
        method = getattr(message, "method", None)
        if method == "notifications/resources/updated":
            updated.append(str(message.params.uri))
        elif method == "notifications/resources/list_changed":
            list_changes.append(method)

    return updated, list_changes, handler


async def wait_for(predicate: Any, timeout: float, what: str) -> None:
    import anyio

    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await anyio.sleep(0.02)


def test_a_subscribed_notebook_is_announced_once_per_burst(
    daemon: RunningDaemon, tmp_path: Path
) -> None:
    write_notebook(tmp_path / "shared.ipynb", [("a", "x = 1")])
    updated, list_changes, handler = updates_counter()

    import anyio

    async def body() -> None:
        watcher = mcp_client(daemon, "legacy", label="watcher", cwd=tmp_path)
        watcher.client.message_handler = handler
        async with watcher as client, mcp_client(daemon, "legacy", label="editor") as editor:
            joined = await call_ok(client, "connect_notebook", path=str(tmp_path / "shared.ipynb"))
            uri = f"nbstage://notebook/{joined['notebook_id']}"
            with legacy_only():
                await client.subscribe_resource(uri)
            await call_ok(editor, "connect_notebook", notebook_id=joined["notebook_id"])
            await call_ok(editor, "set_cell", cell_id="a", source="x = 2")
            await wait_for(lambda: uri in updated, 10, "the update notice")

            updated.clear()
            await call_ok(editor, "execute_cell", cell_id="a")
            await wait_for(lambda: uri in updated, 10, "the notice of a finished run")

            updated.clear()
            on_disk = nbformat.read(tmp_path / "shared.ipynb", as_version=4)
            on_disk.cells.append(nbformat.v4.new_markdown_cell("from the disk"))
            nbformat.write(on_disk, tmp_path / "shared.ipynb")
            await wait_for(lambda: uri in updated, 15, "the notice of a change on disk")

            created = await call_ok(client, "create_notebook")
            await wait_for(lambda: list_changes, 10, "list_changed after create_notebook")
            assert created["notebook_id"]

            updated.clear()
            started = time.monotonic()
            took = await anyio.to_thread.run_sync(thousand_edits, daemon, joined["notebook_id"])
            await wait_for(lambda: updated, 10, "the notice of the burst")
            seen = len(updated)
            await wait_for(lambda: time.monotonic() - started > took + 1.0, 5, "a quiet second")
            bound = 2 + int(took) * 2
            assert 1 <= len(updated) <= bound, (len(updated), seen, took)

            with legacy_only():
                await client.unsubscribe_resource(uri)
            updated.clear()
            await call_ok(editor, "set_cell", cell_id="a", source="x = 'after'")
            await call_ok(editor, "get_cell", cell_id="a")
            marker = await call_ok(client, "list_active_notebooks")
            assert marker["notebooks"]
            assert updated == [], "no notice after unsubscribe"

    run_bounded(body, budget=180)


def test_a_listen_stream_announces_a_notebook_once_per_burst_in_the_modern_era(
    daemon: RunningDaemon, tmp_path: Path
) -> None:
    """The SDK's own listen(): acknowledged with what it asked for, an edit by another
    client announced on the stream, a thousand edits a bounded number of times (counted
    on the wire, where the SDK tees each notification before it dedupes), a new
    notebook as a list change; once the stream is left, nothing more."""
    write_notebook(tmp_path / "streamed.ipynb", [("a", "x = 1")])
    updated, list_changes, handler = updates_counter()

    import anyio
    from mcp.client.subscriptions import ResourceUpdated

    async def body() -> None:
        watcher = mcp_client(daemon, "2026-07-28", label="watcher", cwd=tmp_path)
        watcher.client.message_handler = handler
        async with watcher as client, mcp_client(daemon, "legacy", label="editor") as editor:
            joined = await call_ok(
                client, "connect_notebook", path=str(tmp_path / "streamed.ipynb")
            )
            uri = f"nbstage://notebook/{joined['notebook_id']}"
            stream = client.listen(resource_subscriptions=[uri], resources_list_changed=True)
            async with stream as sub:
                assert sub.honored.resource_subscriptions == [uri]
                assert sub.honored.resources_list_changed is True
                assert not sub.honored.prompts_list_changed
                await call_ok(editor, "connect_notebook", notebook_id=joined["notebook_id"])
                await call_ok(editor, "set_cell", cell_id="a", source="x = 2")
                with anyio.fail_after(10):
                    event = await sub.__anext__()
                assert event == ResourceUpdated(uri)

                await call_ok(client, "create_notebook")
                await wait_for(lambda: list_changes, 10, "list_changed after create_notebook")

                await wait_for(lambda: updated, 1, "the edit's notice on the wire")
                updated.clear()
                started = time.monotonic()
                took = await anyio.to_thread.run_sync(thousand_edits, daemon, joined["notebook_id"])
                await wait_for(lambda: updated, 10, "the notice of the burst")
                await wait_for(lambda: time.monotonic() - started > took + 1.0, 5, "a quiet second")
                assert 1 <= len(updated) <= 2 + int(took) * 2, (len(updated), took)

            updated.clear()
            await call_ok(editor, "set_cell", cell_id="a", source="x = 'after'")
            await call_ok(editor, "get_cell", cell_id="a")
            await call_ok(client, "list_active_notebooks")
            assert updated == [], "no notice once the stream is left"

    run_bounded(body, budget=180)


def test_server_discover_declares_the_streams(daemon: RunningDaemon, tmp_path: Path) -> None:
    async def body() -> None:
        async with mcp_client(daemon, "2026-07-28", cwd=tmp_path) as client:
            import mcp_types

            raw = await client.session.send_discover("2026-07-28")
            capabilities = mcp_types.DiscoverResult.model_validate(raw).capabilities
            assert capabilities.resources is not None
            assert capabilities.resources.subscribe
            assert capabilities.resources.list_changed
            assert capabilities.tools is not None
            assert capabilities.tools.list_changed

    run_bounded(body, budget=60)


def test_subscriptions_are_refused_in_the_modern_era(daemon: RunningDaemon, tmp_path: Path) -> None:
    async def body() -> None:
        async with mcp_client(daemon, "2026-07-28", cwd=tmp_path) as client:
            with legacy_only():
                call = client.session.subscribe_resource("nbstage://notebook/abc")
                await expect_error(call, -32601)

    run_bounded(body, budget=60)


def test_the_list_is_answered_while_the_child_is_down_and_a_read_waits_for_the_next(
    daemon: RunningDaemon, tmp_path: Path
) -> None:
    write_notebook(tmp_path / "kept.ipynb", [("a", "x = 1")])

    async def body() -> None:
        async with mcp_client(daemon, "legacy", label="kim", cwd=tmp_path) as client:
            joined = await call_ok(client, "connect_notebook", path="kept.ipynb")
            uri = f"nbstage://notebook/{joined['notebook_id']}"
            before = [str(r.uri) for r in (await client.list_resources()).resources]
            assert before == [uri]
            os.kill(session_manager_pid(daemon, "kim"), signal.SIGKILL)
            during = [str(r.uri) for r in (await client.list_resources()).resources]
            assert during == before
            read = (await client.read_resource(uri)).contents
            assert json.loads(read[0].text)["cells"][0]["id"] == "a"

    run_bounded(body, budget=120)
