"""Notebooks as MCP resources, on the session child's side (issue 25).

``listing`` and ``read`` are generators like the tool handlers: they yield daemon
requests and return the MCP result. ``step`` drives one and says what to send the
supervisor. :class:`NotebookResources` is the SessionManager's part that owns the
subscriptions, the list last announced and each subscribed notebook's burst of changes
(change_bursts.py). A read names its notebook, so it never touches the session's active
one: a parked notebook, or any room of the daemon, is read where it is.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Generator, Mapping
from typing import Any

import orjson

from nbstage.actors.session import change_bursts
from nbstage.actors.session.cell_reads import cells_in_pages
from nbstage.actors.session.daemon_link import DaemonFailure
from nbstage.actors.session.media import SENT, media_in
from nbstage.actors.session.session_model import SessionState
from nbstage.actors.session.tool_context import PREVIEW, ToolContext
from nbstage.actors.session.tool_runs import Ask
from nbstage.protocol.common.errors import ErrorCode
from nbstage.protocol.daemon.requests import CellsFormat, GetCells, ListRooms
from nbstage.protocol.mcp import resources as res
from nbstage.protocol.mcp.tool_args import AllCellsFormat, GetAllCellsArgs
from nbstage.protocol.session.resource_messages import (
    NotebookChanged,
    ResourceAnswered,
    ResourceRefused,
    RoomsChanged,
)

log = logging.getLogger("nbstage.session")

Work = Generator[object, Any, dict[str, Any]]

PREVIEW_CUT = "nbstage_preview_cut"
"""The daemon's mark on an output its preview cut (output_bounds.py); not nbformat."""
_MISSING = (ErrorCode.NOT_FOUND, ErrorCode.CELL_NOT_FOUND, ErrorCode.NOTEBOOK_UNAVAILABLE)
_LIST_EVENTS = ("created", "removed", "saved")


def listing(state: SessionState) -> Work:
    """The session's active and parked notebooks first, then the daemon's other rooms;
    while the daemon cannot be asked, the session's own."""
    own = [(s, s is state.active) for s in (state.active, *reversed(state.parked)) if s]
    try:
        rooms = (yield ListRooms()).rooms
    except DaemonFailure:
        rooms = []
    entries = [
        res.notebook_entry(s.notebook_id, s.path, active=active, parked=not active)
        for s, active in own
    ]
    mine = {s.notebook_id for s, _ in own}
    entries += [
        res.notebook_entry(room.notebook_id, room.path)
        for room in rooms
        if room.notebook_id not in mine and not room.starting
    ]
    return {"resources": entries}


def read(ref: res.ResourceRef) -> Work:
    """A notebook as nbformat JSON, or one cell; outputs cut as get_cell cuts them, and
    each PNG or JPEG the tools would attach as a blob content after the text."""
    blobs: list[dict[str, Any]] = []
    if ref.kind is res.ResourceKind.CELL:
        summary = yield GetCells(ref.notebook_id, CellsFormat.SUMMARY)
        index = next((r["index"] for r in summary.cells if r["cell_id"] == ref.cell_id), None)
        if index is None:
            raise DaemonFailure(ErrorCode.CELL_NOT_FOUND, f"Resource not found: no cell {ref}")
        shown = yield GetCells(ref.notebook_id, CellsFormat.JSON, index, 1, True, PREVIEW)
        cell = _cell_shown(shown.cells[0], ref.notebook_id, blobs)
        uri = res.cell_uri(ref.notebook_id, str(ref.cell_id))
        return _contents(uri, res.CELL_MIME, cell, blobs)
    head = yield GetCells(ref.notebook_id, CellsFormat.JSON, 0, 0)
    args = GetAllCellsArgs(AllCellsFormat.RICH, include_outputs=True)
    cells, _total = yield from cells_in_pages(ToolContext(ref.notebook_id, "", ""), args)
    notebook = {
        "cells": [_cell_shown(cell, ref.notebook_id, blobs) for cell in cells],
        "metadata": head.metadata or {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    return _contents(ref.notebook_uri, res.NOTEBOOK_MIME, notebook, blobs)


def _contents(uri: str, mime: str, value: object, blobs: list) -> dict[str, Any]:
    text = orjson.dumps(value).decode()
    return {"contents": [{"uri": uri, "mimeType": mime, "text": text}, *blobs]}


def _cell_shown(cell: Mapping[str, Any], notebook_id: str, blobs: list) -> dict[str, Any]:
    shown = dict(cell)
    uri = res.cell_uri(notebook_id, str(cell.get("id")))
    outputs = cell.get("outputs")
    if isinstance(outputs, list):
        shown["outputs"] = [
            _output_shown(output, f"{uri}#outputs/{k}", blobs) for k, output in enumerate(outputs)
        ]
    attachments = cell.get("attachments")
    if isinstance(attachments, Mapping):
        shown["attachments"] = {
            name: _bundle_shown(bundle, f"{uri}#attachments/{name}", blobs)
            for name, bundle in attachments.items()
        }
    return shown


def _output_shown(output: Any, uri: str, blobs: list) -> Any:
    if not isinstance(output, Mapping):
        return output
    shown = {k: v for k, v in output.items() if k != PREVIEW_CUT}
    if isinstance(output.get("data"), Mapping):
        shown["data"] = _bundle_shown(output["data"], uri, blobs)
    return shown


def _bundle_shown(bundle: Any, uri: str, blobs: list) -> Any:
    """A MIME bundle with a description in place of each binary value; the images the
    tools attach are blob contents named ``<cell uri>#outputs/<k>/<mime>``."""
    if not isinstance(bundle, Mapping):
        return bundle
    media = media_in(bundle)
    if not media:
        return bundle
    shown = dict(bundle)
    for mime, one in media.items():
        if one.encoded is not None:
            blob_uri = f"{uri}/{mime}"
            blobs.append({"uri": blob_uri, "mimeType": mime, "blob": one.encoded})
            shown[mime] = one.describe().replace(SENT, f"blob {blob_uri}")
        else:
            shown[mime] = one.describe()
    return shown


def refusal(call_id: str, failure: DaemonFailure, uri: str | None) -> ResourceRefused:
    if failure.code in _MISSING:
        message = f"Resource not found: {uri} ({failure.message})"
        return ResourceRefused(call_id, res.ResourceFailure.NOT_FOUND, message, uri)
    return ResourceRefused(call_id, res.ResourceFailure.UNAVAILABLE, failure.message, uri)


def step(
    work: Work, reply: Any, call_id: str, uri: str | None
) -> Ask | ResourceAnswered | ResourceRefused:
    """Resume ``work`` with the daemon's ``reply`` (None to start it)."""
    try:
        asked = work.throw(reply) if isinstance(reply, DaemonFailure) else work.send(reply)
        return Ask(asked)
    except StopIteration as done:
        return ResourceAnswered(call_id, orjson.dumps(done.value))
    except DaemonFailure as failure:
        return refusal(call_id, failure, uri)
    except Exception:
        log.exception("resource request %s failed", call_id)
        failure = res.ResourceFailure.UNAVAILABLE
        return ResourceRefused(call_id, failure, "Internal error in nbstage; see its logs.", uri)


def event_message(frame: Mapping[str, Any]) -> NotebookChanged | RoomsChanged | None:
    """What a room event on the watch subscription means for resources, if anything."""
    event = frame.get("event")
    if frame.get("type") != "event" or not isinstance(event, Mapping):
        return None
    kind, notebook_id = event.get("kind"), event.get("notebook_id")
    if kind == "changed" and isinstance(notebook_id, str):
        revision = event.get("revision")
        return NotebookChanged(notebook_id, revision if isinstance(revision, int) else None)
    return RoomsChanged() if kind in _LIST_EVENTS else None


class NotebookResources:
    """Subscriptions, bursts of changes and the list last told to the supervisor."""

    def __init__(self) -> None:
        self.subscribed: dict[str, tuple[str, ...]] = {}
        """Notebook id → the subscribed URIs that name it (the notebook, its cells)."""
        self.bursts: dict[str, change_bursts.Burst] = {}
        self.tokens = itertools.count(1)
        self.listed: list[dict[str, Any]] | None = None
        self.refreshing = False
        self.refresh_again = False

    def subscribe(self, uris: list[str]) -> None:
        by_notebook: dict[str, list[str]] = {}
        for uri in uris:
            try:
                ref = res.parse_uri(uri)
            except res.ResourceUriError:
                continue
            by_notebook.setdefault(ref.notebook_id, []).append(uri)
        self.subscribed = {nid: tuple(found) for nid, found in by_notebook.items()}
        self.bursts = {nid: b for nid, b in self.bursts.items() if nid in self.subscribed}

    def changed(self, notebook_id: str, now: float) -> change_bursts.Arm | None:
        if notebook_id not in self.subscribed:
            return None
        burst = self.bursts.get(notebook_id)
        token = next(self.tokens) if burst is None else 0
        self.bursts[notebook_id], arm = change_bursts.changed(burst, now, token)
        return arm

    def due(
        self, notebook_id: str, token: int, now: float
    ) -> tuple[tuple[str, ...], change_bursts.Arm | None]:
        """The URIs to announce now, and the timer to arm next."""
        burst = self.bursts.get(notebook_id)
        after, announce, arm = change_bursts.due(burst, token, now, next(self.tokens))
        if after is None:
            self.bursts.pop(notebook_id, None)
        else:
            self.bursts[notebook_id] = after
        return (self.subscribed.get(notebook_id, ()) if announce else ()), arm

    def listed_now(self, result: dict[str, Any]) -> list[dict[str, Any]] | None:
        """The list a refresh found, if it differs from the one told before."""
        fresh = result.get("resources", [])
        if fresh == self.listed:
            return None
        self.listed = fresh
        return fresh
