"""The MCP App for outputs (protocol/mcp/mcp_apps.py, issue 25 part 2): who takes the
extension, what such a client is shown that others are not, and the page's own file."""

from __future__ import annotations

import re
from typing import Any

import pytest

from nbstage.actors.proxy.resource_calls import ResourceDesk
from nbstage.actors.proxy.tool_calls import PendingCall, admit
from nbstage.actors.session import tool_context
from nbstage.actors.session.tool_context import ToolContext, page_cell
from nbstage.actors.session.tool_handlers import SESSION_TOOLS
from nbstage.entrypoints.mcp.envelope import Answer, Dispatch
from nbstage.entrypoints.mcp.lifecycle import Lifecycle
from nbstage.protocol.daemon.cell_replies import (
    CellCreated,
    CellShown,
    CellsSummarized,
    CellUpdated,
    CellView,
)
from nbstage.protocol.daemon.kernel_replies import ExecutionReported, ExecutionView
from nbstage.protocol.daemon.requests import (
    CreateCell,
    ExecuteCell,
    GetCell,
    GetCells,
    GetExecution,
    ReplaceMatch,
    ReplaceRegex,
    SetCell,
)
from nbstage.protocol.daemon_actors.kernel_facts import ExecutionStatus
from nbstage.protocol.mcp import jsonrpc, mcp_apps, page_links, tools
from nbstage.protocol.mcp.resources import RESOURCE_NOT_FOUND, ResourceMethod
from nbstage.protocol.mcp.versions import CLIENT_CAPABILITIES_KEY, PROTOCOL_VERSION_KEY
from nbstage.protocol.session.resource_messages import ResourceAnswered
from tests.unit.test_resource_desk import Outbox

APPS = {"extensions": {mcp_apps.EXTENSION: {"mimeTypes": [mcp_apps.APP_MIME]}}}


@pytest.mark.parametrize(
    ("capabilities", "takes"),
    [
        (APPS, True),
        ({"extensions": {mcp_apps.EXTENSION: {"mimeTypes": ["text/x", mcp_apps.APP_MIME]}}}, True),
        ({}, False),
        (None, False),
        ({"extensions": {}}, False),
        ({"extensions": {mcp_apps.EXTENSION: {}}}, False),
        ({"extensions": {mcp_apps.EXTENSION: {"mimeTypes": ["text/html"]}}}, False),
        ({"extensions": {mcp_apps.EXTENSION: {"mimeTypes": mcp_apps.APP_MIME}}}, False),
        ({"extensions": {mcp_apps.EXTENSION: True}}, False),
        ({"extensions": ["io.modelcontextprotocol/ui"]}, False),
        ({"experimental": {mcp_apps.EXTENSION: {"mimeTypes": [mcp_apps.APP_MIME]}}}, False),
    ],
)
def test_a_client_takes_the_extension_only_when_it_names_the_page_mime_type(
    capabilities: object, takes: bool
) -> None:
    assert mcp_apps.client_takes_apps(capabilities) is takes


LINKED = (
    "execute_cell",
    "run_all_cells",
    "get_results",
    "create_cell",
    "set_cell",
    "get_cell",
    "replace_match",
    "replace_regex",
)


def test_the_eight_tools_link_to_the_page_and_the_app_only_tool_is_for_the_page() -> None:
    catalogue = tools.builtin_tool_list()
    shown = page_links.tools_for(catalogue, apps=True)
    uis = {t["name"]: t["_meta"]["ui"] for t in shown if "_meta" in t}
    page = mcp_apps.OUTPUT_PAGE_URI
    assert uis == {
        **{name: {"resourceUri": page} for name in LINKED},
        "view_outputs": {"resourceUri": page, "visibility": ["app"]},
    }
    assert [{k: v for k, v in t.items() if k != "_meta"} for t in shown] == catalogue
    assert all("_meta" not in t for t in catalogue), "the list given is not changed"


def test_a_client_without_the_extension_sees_the_list_without_the_app_only_tool() -> None:
    catalogue = tools.builtin_tool_list()
    shown = page_links.tools_for(catalogue, apps=False)
    assert shown == [t for t in catalogue if t["name"] != "view_outputs"]
    assert len(shown) == len(catalogue) - 1


@pytest.mark.parametrize(
    ("name", "apps", "refused"),
    [
        ("view_outputs", False, True),
        ("view_outputs", True, False),
        ("get_results", False, False),
        ("get_results", True, False),
    ],
)
def test_only_a_client_that_takes_the_extension_may_call_the_app_only_tool(
    name: str, apps: bool, refused: bool
) -> None:
    request = jsonrpc.Request(7, "tools/call", {"name": name, "arguments": {"execution_id": "e"}})
    call = admit(request, "entry", "2025-11-25", None, apps)
    assert page_links.refused_call(name, apps) is refused
    if refused:
        assert isinstance(call, jsonrpc.ErrorResponse)
        assert call.message == f"Unknown tool: {name}"
    else:
        assert isinstance(call, PendingCall)
        assert call.for_app is apps


OUTPUT = {"output_type": "stream", "name": "stdout", "text": "2\n"}
EXECUTION = ExecutionReported(ExecutionView("e1", "c1", ExecutionStatus.DONE, 1, [OUTPUT]))
SUMMARY_ROW = {"cell_id": "c1", "index": 0, "cell_type": "code", "source_preview": "1+1"}
REPLIES: dict[type, object] = {
    GetCell: CellShown(CellView("c1", "code", "1+1", 1, [OUTPUT])),
    GetCells: CellsSummarized([SUMMARY_ROW], 1),  # type: ignore[list-item]
    CreateCell: CellCreated("c1", 0),
    SetCell: CellUpdated("c1"),
    ReplaceMatch: CellUpdated("c1"),
    ReplaceRegex: CellUpdated("c1"),
    ExecuteCell: EXECUTION,
    GetExecution: EXECUTION,
}
"""What the daemon answers each request a tool linked to the page makes."""

CALLS = {
    "get_cell": {"cell_id": "c1"},
    "create_cell": {"source": "1+1", "and_run": True},
    "set_cell": {"cell_id": "c1", "source": "1+1", "and_run": True},
    "replace_match": {"cell_id": "c1", "match": "1", "content": "2", "and_run": True},
    "replace_regex": {"cell_id": "c1", "pattern": "1", "content": "2", "and_run": True},
    "execute_cell": {"cell_id": "c1"},
    "run_all_cells": {},
    "get_results": {"execution_id": "e1"},
    "view_outputs": {"execution_id": "e1"},
}
"""A call of each tool the catalogue links to the page, running the cell where it can."""


def called(name: str, page: bool) -> dict[str, Any]:
    """The result of a call of ``name``, the daemon answering from REPLIES."""
    args = tools.TOOLS_BY_NAME[name].parse(CALLS[name])
    handler = SESSION_TOOLS[name](ToolContext("nb", "k", "/", page=page), args)
    request = next(handler)
    while True:
        try:
            request = handler.send(REPLIES[type(request)])
        except StopIteration as done:
            return done.value


def test_every_tool_the_catalogue_links_to_the_page_gives_it_the_outputs() -> None:
    assert set(CALLS) == page_links.LINKED_TOOLS | page_links.APP_ONLY_TOOLS
    for name in CALLS:
        (cell,) = called(name, page=True)["_meta"][mcp_apps.OUTPUTS_KEY]["cells"]
        assert (cell["cell_id"], cell["outputs"]) == ("c1", [OUTPUT]), name


def test_a_call_that_builds_nothing_for_the_page_does_not_build_it(monkeypatch) -> None:
    def never(cell: object) -> dict:
        raise AssertionError("a page cell was built")

    monkeypatch.setattr(tool_context, "page_cell", never)
    for name in CALLS:
        assert mcp_apps.OUTPUTS_KEY not in called(name, page=False).get("_meta", {}), name


@pytest.mark.parametrize(
    ("name", "apps", "builds"),
    [
        ("execute_cell", True, True),
        ("replace_regex", True, True),
        ("view_outputs", True, True),
        ("execute_cell", False, False),
        ("delete_cell", True, False),
        ("get_all_cells", True, False),
    ],
)
def test_outputs_for_the_page_are_built_for_a_linked_tool_called_by_an_app_client(
    name: str, apps: bool, builds: bool
) -> None:
    assert page_links.builds_page(name, apps) is builds


def test_a_page_cell_takes_the_outputs_as_sent_and_the_header_facts() -> None:
    output = {"output_type": "stream", "name": "stdout", "text": "hi\n"}
    execution = {
        "execution_id": "e1",
        "cell_id": "c1",
        "status": "done",
        "execution_count": 3,
        "outputs": [output],
        "started": 1.0,
    }
    assert page_cell(execution) == {
        "execution_id": "e1",
        "cell_id": "c1",
        "status": "done",
        "execution_count": 3,
        "outputs": [output],
    }
    assert page_cell({"cell_id": "c2", "source": "1+1"}) == {
        "cell_id": "c2",
        "source": "1+1",
        "outputs": [],
    }


def test_initialize_declares_the_extension_only_to_a_client_that_did() -> None:
    def capabilities(client: dict[str, Any]) -> dict[str, Any]:
        life = Lifecycle(version="1")
        params = {"protocolVersion": "2025-11-25", "capabilities": client}
        answer = life.admit(jsonrpc.Request(0, "initialize", params))
        assert isinstance(answer, Answer)
        return answer.result["capabilities"]

    plain = capabilities({})
    assert "extensions" not in plain
    assert capabilities({"roots": {}}) == plain
    assert capabilities(APPS) == {**plain, "extensions": {mcp_apps.EXTENSION: {}}}


def test_server_discover_declares_the_extension_to_a_modern_client_that_did() -> None:
    def discover(client: dict[str, Any]) -> dict[str, Any]:
        meta = {PROTOCOL_VERSION_KEY: "2026-07-28", CLIENT_CAPABILITIES_KEY: client}
        answer = Lifecycle(version="1").admit(
            jsonrpc.Request(1, "server/discover", {"_meta": meta})
        )
        assert isinstance(answer, Answer)
        return answer.result["capabilities"]

    assert "extensions" not in discover({})
    assert discover(APPS)["extensions"] == {mcp_apps.EXTENSION: {}}


def test_the_dispatch_carries_the_capabilities_the_edge_decides_on() -> None:
    life = Lifecycle(version="1")
    params = {"protocolVersion": "2025-11-25", "capabilities": APPS}
    life.admit(jsonrpc.Request(0, "initialize", params))
    dispatch = life.admit(jsonrpc.Request(1, "tools/list", None))
    assert isinstance(dispatch, Dispatch)
    assert mcp_apps.client_takes_apps(dispatch.client_capabilities)


def read(request_id: int, uri: str) -> jsonrpc.Request:
    return jsonrpc.Request(request_id, ResourceMethod.READ.value, {"uri": uri})


def test_the_page_is_listed_first_and_read_only_for_a_client_that_takes_it() -> None:
    out = Outbox(ready=True)
    desk = ResourceDesk(out)
    listing = b'{"resources":[{"uri":"nbstage://notebook/abc"}]}'
    desk.admitted("1", jsonrpc.Request(1, ResourceMethod.LIST.value, None), "2025-11-25", True)
    desk.answered(ResourceAnswered("1", listing))
    kind, _, result = out.sent[-1]
    assert kind == "answer"
    assert [r["uri"] for r in result["resources"]] == [
        mcp_apps.OUTPUT_PAGE_URI,
        "nbstage://notebook/abc",
    ]
    desk.admitted("2", jsonrpc.Request(2, ResourceMethod.LIST.value, None), "2025-11-25")
    desk.answered(ResourceAnswered("2", listing))
    assert out.sent[-1] == ("raw", 2, listing), "others get the child's list untouched"

    desk.admitted("3", read(3, mcp_apps.OUTPUT_PAGE_URI), "2025-11-25", True)
    kind, _, result = out.sent[-1]
    (content,) = result["contents"]
    assert content["mimeType"] == "text/html;profile=mcp-app"
    assert content["text"].startswith("<!DOCTYPE html>")
    desk.admitted("4", read(4, mcp_apps.OUTPUT_PAGE_URI), "2025-11-25")
    assert out.sent[-1] == ("error", 4, RESOURCE_NOT_FOUND)


def test_the_page_is_one_file_that_loads_nothing_from_the_network() -> None:
    html = mcp_apps.page_html()
    assert re.search(r"https?://", html) is None
    assert re.search(r"<(script|link|img|iframe)[^>]*\s(src|href)=", html, re.I) is None
    for loader in ("fetch(", "XMLHttpRequest", "import(", "WebSocket"):
        assert loader not in html
    assert 'setAttribute("sandbox", "")' in html, "output HTML gets a sandbox granting nothing"
    assert "innerHTML" not in html, "texts are set as text"
