"""A cell the person runs in Lab runs in the room's kernel (ADR 0004).

``nbstage lab`` turns on Lab's server-side execution mode (the ``serverSideExecution``
page option that jupyter-collaboration's front end reads): the notebook then runs a
cell by ``POST /api/kernels/<kernel id>/execute`` with ``{cell_id, document_id}``,
where the document id is the room's name, ``json:notebook:<notebook id>``. The kernel
id is a stand-in's (room_kernels.py) and is not needed: the cell is queued with the
daemon's own ``execute`` request, in the room's queue beside the agent's runs, and its
outputs reach the notebook once, written by the Room.

The request goes over the daemon connection of that notebook's most recent websocket
in this server when there is one, so it reaches the Room after the typing the browser
sent before it (one connection keeps its order); otherwise over a connection of its
own that joins the room as a person for the run.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler
from tornado import web

from nbstage.entrypoints.common.ownership import Untrusted
from nbstage.entrypoints.control.daemon_client import DaemonError
from nbstage.entrypoints.lab.daemon_revival import open_link
from nbstage.entrypoints.lab.room_link import RoomLink

log = logging.getLogger("nbstage.lab")

NOTEBOOK_ROOM = "json:notebook:"
PERSON_LABEL = "person (JupyterLab)"
RUN_WAIT_SECS = 24 * 3600.0
"""The answer waits for the run to end, as Lab's own executor does: its cell's prompt
follows the run."""


class OpenRooms:
    """The room websockets of this Lab server by notebook id, the most recent last."""

    def __init__(self) -> None:
        self.sockets: dict[str, list[Any]] = {}
        self.paths: dict[str, str] = {}
        """notebook id → its path under Lab's root, as the session endpoint was asked."""

    def heard(self, notebook_id: str, socket: Any) -> None:
        held = self.sockets.setdefault(notebook_id, [])
        if socket in held:
            held.remove(socket)
        held.append(socket)

    def gone(self, notebook_id: str, socket: Any) -> None:
        held = self.sockets.get(notebook_id, [])
        if socket in held:
            held.remove(socket)
        if not held:
            self.sockets.pop(notebook_id, None)

    def link(self, notebook_id: str) -> RoomLink | None:
        for socket in reversed(self.sockets.get(notebook_id, [])):
            if socket.link is not None and socket.peer_id:
                return socket.link  # type: ignore[no-any-return]
        return None


ROOMS = OpenRooms()


class CellExecution(APIHandler):
    """``POST /api/kernels/<kernel id>/execute``: run one cell of a room's notebook."""

    auth_resource = "kernels"

    @web.authenticated
    @authorized
    async def post(self, kernel_id: str) -> None:
        notebook_id, cell_id = _asked(self.request.body)
        try:
            ran = await _run(notebook_id, cell_id)
        except DaemonError as exc:
            raise web.HTTPError(400, exc.message) from None
        except (OSError, Untrusted) as exc:
            raise web.HTTPError(503, f"the nbstage daemon is not reachable: {exc}") from None
        run = ran.get("execution", {})
        keys = ("execution_id", "status", "execution_count")
        self.finish(json.dumps({key: run.get(key) for key in keys}))


def _asked(body: bytes) -> tuple[str, str]:
    try:
        asked = json.loads(body or b"{}")
        cell_id, document_id = asked["cell_id"], asked["document_id"]
    except (ValueError, KeyError, TypeError):
        raise web.HTTPError(400, "the body must be JSON with cell_id and document_id") from None
    if not isinstance(cell_id, str) or not isinstance(document_id, str):
        raise web.HTTPError(400, "cell_id and document_id must be strings")
    if not document_id.startswith(NOTEBOOK_ROOM):
        raise web.HTTPError(404, f"{document_id!r} is not an nbstage notebook room")
    return document_id[len(NOTEBOOK_ROOM) :], cell_id


async def _run(notebook_id: str, cell_id: str) -> dict[str, Any]:
    return await ask_room(notebook_id, "execute", cell_id=cell_id, wait_secs=RUN_WAIT_SECS)


async def ask_room(notebook_id: str, kind: str, **fields: Any) -> dict[str, Any]:
    """One request to a notebook's room, on the link of its latest websocket here, else
    on a link of its own that joins the room as a person for it."""
    shared = ROOMS.link(notebook_id)
    if shared is not None:
        return await shared.request(kind, notebook_id=notebook_id, **fields)
    link = await open_link()
    try:
        await link.request("attach", notebook_id=notebook_id, peer_label=PERSON_LABEL)
        return await link.request(kind, notebook_id=notebook_id, **fields)
    finally:
        link.close()
