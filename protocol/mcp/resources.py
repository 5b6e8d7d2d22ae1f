"""Notebooks as MCP resources (issue 25): their URIs, the templates, how each listed
notebook is named, and the errors a resource request gets in each protocol era. Pure.

A notebook is ``nbstage://notebook/<notebook_id>`` and one of its cells
``nbstage://notebook/<notebook_id>/cell/<cell_id>``. A URI of another scheme is a
resource nbstage does not have ("not found"); an ``nbstage:`` URI of another shape, or
a string that is no URI, is malformed (invalid params).

The one resource that is not a notebook, the MCP App's ``ui://`` page, is only for a
client that takes the extension (``mcp_apps.py``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from enum import StrEnum
from typing import Any, Final

from nbstage.protocol.common.frozen import frozen
from nbstage.protocol.mcp import jsonrpc
from nbstage.protocol.mcp.versions import is_modern_version

SCHEME: Final = "nbstage"
NOTEBOOK_MIME: Final = "application/x-ipynb+json"
CELL_MIME: Final = "application/json"
NOTEBOOK_TEMPLATE: Final = f"{SCHEME}://notebook/{{notebook_id}}"
CELL_TEMPLATE: Final = f"{SCHEME}://notebook/{{notebook_id}}/cell/{{cell_id}}"

RESOURCE_NOT_FOUND: Final = -32002
"""The 2024-11-05 .. 2025-11-25 specs' code for a URI the server does not have. 2026-07-28
retired it (never to be reused) and answers -32602 with the URI in ``data``."""

_ID: Final = r"[A-Za-z0-9_-]{1,64}"
_NBSTAGE_URI: Final = re.compile(
    rf"{SCHEME}://notebook/(?P<notebook>{_ID})(?:/cell/(?P<cell>{_ID}))?(?:#[^\s]*)?"
)
_ANY_URI: Final = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:\S*")
MAX_URI: Final = 2048


class ResourceMethod(StrEnum):
    LIST = "resources/list"
    TEMPLATES = "resources/templates/list"
    READ = "resources/read"
    SUBSCRIBE = "resources/subscribe"
    UNSUBSCRIBE = "resources/unsubscribe"


RESOURCE_METHODS: Final = frozenset(ResourceMethod)


class ResourceKind(StrEnum):
    NOTEBOOK = "notebook"
    CELL = "cell"


class ResourceFailure(StrEnum):
    NOT_FOUND = "not_found"
    MALFORMED = "malformed"
    UNAVAILABLE = "unavailable"
    """The daemon could not be asked (it is restarting); the client may ask again."""


@frozen
class ResourceRef:
    kind: ResourceKind
    notebook_id: str
    cell_id: str | None = None

    @property
    def notebook_uri(self) -> str:
        return notebook_uri(self.notebook_id)


class ResourceUriError(ValueError):
    def __init__(self, failure: ResourceFailure, message: str) -> None:
        super().__init__(message)
        self.failure = failure
        self.message = message


def notebook_uri(notebook_id: str) -> str:
    return f"{SCHEME}://notebook/{notebook_id}"


def cell_uri(notebook_id: str, cell_id: str) -> str:
    return f"{notebook_uri(notebook_id)}/cell/{cell_id}"


def parse_uri(uri: object) -> ResourceRef:
    """The notebook or cell ``uri`` names; ResourceUriError (MALFORMED or NOT_FOUND) if
    it names none. A fragment is allowed and ignored."""
    if not isinstance(uri, str) or not uri:
        raise ResourceUriError(ResourceFailure.MALFORMED, "'uri' must be a non-empty string")
    if len(uri) > MAX_URI or not _ANY_URI.fullmatch(uri):
        shown = uri if len(uri) <= 80 else uri[:80] + "…"
        raise ResourceUriError(ResourceFailure.MALFORMED, f"{shown!r} is not a URI")
    if not uri.lower().startswith(f"{SCHEME}:"):
        raise ResourceUriError(ResourceFailure.NOT_FOUND, f"Resource not found: {uri}")
    match = _NBSTAGE_URI.fullmatch(uri)
    if match is None:
        raise ResourceUriError(
            ResourceFailure.MALFORMED,
            f"{uri!r} is not an nbstage resource URI: use {NOTEBOOK_TEMPLATE} or "
            f"{CELL_TEMPLATE} (see resources/templates/list)",
        )
    cell = match.group("cell")
    kind = ResourceKind.CELL if cell is not None else ResourceKind.NOTEBOOK
    return ResourceRef(kind, match.group("notebook"), cell)


def uri_of(params: object) -> object:
    return params.get("uri") if isinstance(params, Mapping) else None


def display_name(notebook_id: str, path: str | None) -> str:
    """What a person recognises: the file's name, or "Untitled" and a short id."""
    if path:
        return path.rstrip("/").rsplit("/", 1)[-1] or path
    return f"Untitled {notebook_id[:8]}"


def notebook_entry(
    notebook_id: str, path: str | None, active: bool = False, parked: bool = False
) -> dict[str, Any]:
    """One notebook as resources/list shows it."""
    where = path or "not saved to a file"
    role = " This session's active notebook." if active else ""
    role += " Parked by this session (its kernel is kept)." if parked else ""
    return {
        "uri": notebook_uri(notebook_id),
        "name": display_name(notebook_id, path),
        "title": display_name(notebook_id, path),
        "description": f"Jupyter notebook {notebook_id} ({where}).{role}",
        "mimeType": NOTEBOOK_MIME,
    }


TEMPLATES: Final = (
    {
        "uriTemplate": NOTEBOOK_TEMPLATE,
        "name": "notebook",
        "title": "Notebook",
        "description": "A notebook open in nbstage, as nbformat JSON; outputs are capped as "
        "the tools cap them, and images come as blob contents.",
        "mimeType": NOTEBOOK_MIME,
    },
    {
        "uriTemplate": CELL_TEMPLATE,
        "name": "cell",
        "title": "Notebook cell",
        "description": "One cell of a notebook, as an nbformat cell.",
        "mimeType": CELL_MIME,
    },
)


def capabilities() -> dict[str, Any]:
    """The ``resources`` capability, the same in both eras: legacy clients subscribe
    with ``resources/subscribe``, 2026-07-28 clients on ``subscriptions/listen``
    streams (protocol/mcp/subscriptions.py)."""
    return {"subscribe": True, "listChanged": True}


def refused(
    request_id: Any, version: str, failure: ResourceFailure, message: str, uri: object
) -> jsonrpc.ErrorResponse:
    """The JSON-RPC error for a resource request that names no resource."""
    data = {"uri": uri} if isinstance(uri, str) else None
    match failure:
        case ResourceFailure.NOT_FOUND if is_modern_version(version):
            return jsonrpc.ErrorResponse(request_id, jsonrpc.INVALID_PARAMS, message, data)
        case ResourceFailure.NOT_FOUND:
            return jsonrpc.ErrorResponse(request_id, RESOURCE_NOT_FOUND, message, data)
        case ResourceFailure.MALFORMED:
            return jsonrpc.ErrorResponse(request_id, jsonrpc.INVALID_PARAMS, message, data)
    return jsonrpc.ErrorResponse(request_id, jsonrpc.INTERNAL_ERROR, message, data)


def removed_in_modern(request_id: Any, method: str) -> jsonrpc.ErrorResponse:
    """resources/subscribe and unsubscribe are gone from 2026-07-28."""
    message = f"Method not found: {method} (removed in protocol 2026-07-28)"
    return jsonrpc.ErrorResponse(request_id, jsonrpc.METHOD_NOT_FOUND, message, method)


def resource_notice(uri: str | None) -> jsonrpc.Notification:
    """notifications/resources/updated for ``uri``, or list_changed without one."""
    if uri is None:
        return jsonrpc.Notification("notifications/resources/list_changed", None)
    return jsonrpc.Notification("notifications/resources/updated", {"uri": uri})
