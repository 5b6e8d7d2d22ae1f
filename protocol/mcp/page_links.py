"""Which tools the MCP App's page (mcp_apps.py) is linked to, as the catalogue (tools.py)
says, and what that means for the tool list a client is shown and the calls it may make.
Pure. Apart from mcp_apps.py because the catalogue is more than the lean ``nbstage mcp``
edge, which only asks whether a client takes the extension, should load."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from nbstage.protocol.mcp.mcp_apps import OUTPUT_PAGE_URI
from nbstage.protocol.mcp.tools import TOOLS, PageLink

LINKED_TOOLS: Final = frozenset(t.name for t in TOOLS if t.page is PageLink.LINKED)
APP_ONLY_TOOLS: Final = frozenset(t.name for t in TOOLS if t.page is PageLink.APP_ONLY)
"""Tools for the page alone (``visibility: ["app"]``): a host keeps them from the model,
and a client that does not take the extension never sees or calls them."""


def tools_for(tools: Iterable[dict[str, Any]], apps: bool) -> list[dict[str, Any]]:
    """The tool list a client is shown. To one that takes the extension: the linked tools
    with ``_meta.ui.resourceUri``, and the app-only ones also with ``visibility: ["app"]``
    (the linked ones keep the default, the model and the page). To any other: the list
    without the app-only tools, otherwise as it is. The list given is not changed."""
    shown: list[dict[str, Any]] = []
    for tool in tools:
        name = tool.get("name")
        if name in APP_ONLY_TOOLS and not apps:
            continue
        if apps and (name in LINKED_TOOLS or name in APP_ONLY_TOOLS):
            ui: dict[str, Any] = {"resourceUri": OUTPUT_PAGE_URI}
            if name in APP_ONLY_TOOLS:
                ui["visibility"] = ["app"]
            shown.append({**tool, "_meta": {**(tool.get("_meta") or {}), "ui": ui}})
        else:
            shown.append(tool)
    return shown


def refused_call(name: object, apps: bool) -> bool:
    """Whether a ``tools/call`` of ``name`` is refused as an unknown tool: an app-only
    tool from a client that does not take the extension."""
    return name in APP_ONLY_TOOLS and not apps


def builds_page(name: str, apps: bool) -> bool:
    """Whether a call of ``name`` builds the outputs the page draws: a linked or app-only
    tool, called by a client that takes the extension."""
    return apps and (name in LINKED_TOOLS or name in APP_ONLY_TOOLS)
