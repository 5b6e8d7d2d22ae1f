"""The MCP Apps extension (``io.modelcontextprotocol/ui``, SEP-1865, issue 25 part 2):
whether a client takes it, the ``ui://`` page that shows a cell's outputs, and the tools
linked to that page. Pure.

A client takes the extension when its capabilities carry
``extensions["io.modelcontextprotocol/ui"]`` whose ``mimeTypes`` name
``text/html;profile=mcp-app``. Only such a client sees any of it: the server's
``extensions`` capability, ``_meta.ui`` on the linked tools, the app-only tool (which
tools those are: page_links.py), the page in ``resources/list`` and ``resources/read``,
and the outputs the page draws in a tool result's ``_meta`` (``OUTPUTS_KEY``), which
are built only for it (ToolContext.page). Every other client sees what it saw before.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any, Final

EXTENSION: Final = "io.modelcontextprotocol/ui"
APP_MIME: Final = "text/html;profile=mcp-app"
OUTPUT_PAGE_URI: Final = "ui://nbstage/output.html"
OUTPUT_PAGE_FILE: Final = "output_app.html"
OUTPUTS_KEY: Final = "io.nbstage/outputs"
"""Where a result for an app-taking client carries the outputs the page draws."""


def client_takes_apps(capabilities: object) -> bool:
    """Whether a client's capabilities declare the extension with the page's MIME type."""
    if not isinstance(capabilities, Mapping):
        return False
    extensions = capabilities.get("extensions")
    if not isinstance(extensions, Mapping):
        return False
    settings = extensions.get(EXTENSION)
    if not isinstance(settings, Mapping):
        return False
    mime_types = settings.get("mimeTypes")
    return isinstance(mime_types, list) and APP_MIME in mime_types


def server_extensions() -> dict[str, Any]:
    """What the server declares under ``capabilities.extensions`` to such a client."""
    return {EXTENSION: {}}


def page_entry() -> dict[str, Any]:
    """The page as ``resources/list`` shows it."""
    return {
        "uri": OUTPUT_PAGE_URI,
        "name": "nbstage-outputs",
        "title": "Cell outputs",
        "description": "Shows the outputs of a notebook cell run by nbstage: text with its "
        "colours, HTML (sandboxed), Markdown, LaTeX, images, JSON and errors.",
        "mimeType": APP_MIME,
    }


@cache
def page_html() -> str:
    """The page, read once from beside this module (setup.cfg installs it as package data;
    importlib.resources would cost ``nbstage mcp`` two imports at start)."""
    return Path(__file__).with_name(OUTPUT_PAGE_FILE).read_text("utf-8")


def page_contents() -> list[dict[str, Any]]:
    """``resources/read`` of the page: one self-contained HTML text. It needs no network,
    so it declares no CSP domains (the host's restrictive default applies), and it asks
    for the host's border, which marks where the outputs end and the chat goes on."""
    return [
        {
            "uri": OUTPUT_PAGE_URI,
            "mimeType": APP_MIME,
            "text": page_html(),
            "_meta": {"ui": {"prefersBorder": True}},
        }
    ]


def with_page_listed(listing: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [page_entry(), *listing]


def with_outputs(result: dict[str, Any], cells: list[dict[str, Any]]) -> dict[str, Any]:
    """``result`` carrying, for the page, the cells whose outputs it shows: each a
    mapping with ``cell_id``, ``execution_count``, ``outputs`` (nbformat outputs as the
    daemon sent them) and, where known, ``execution_id``, ``status`` and ``source``."""
    meta = {**(result.get("_meta") or {}), OUTPUTS_KEY: {"cells": cells}}
    return {**result, "_meta": meta}
