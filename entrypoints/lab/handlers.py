"""The collaboration endpoints JupyterLab's front end calls, served by nbstage in place
of jupyter_server_ydoc's server side (ADR 0004).

``PUT /api/collaboration/session/<path>`` names the room of a notebook: its ``fileId``
is nbstage's notebook id. ``/api/collaboration/room/json:notebook:<notebook id>`` is the
y-websocket of that room, bridged to the Room over the daemon socket (room_link.py):
the browser's messages go to the Room as ``lab_message``, the Room's come back as
``lab`` frames. Rooms that are not notebooks (Lab's global awareness) are relayed
between the browsers of this server alone (local_rooms.py).
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import os
from typing import Any, ClassVar

from jupyter_server.auth.decorator import authorized, ws_authenticated
from jupyter_server.base.handlers import APIHandler, JupyterHandler
from jupyter_server.base.websocket import WebSocketMixin
from pycrdt import Decoder, Encoder
from tornado import web
from tornado.websocket import WebSocketHandler

from nbstage.entrypoints.common.kept_tasks import start_kept
from nbstage.entrypoints.common.ownership import Untrusted
from nbstage.entrypoints.control.daemon_client import DaemonError
from nbstage.entrypoints.control.daemon_revival import Asker
from nbstage.entrypoints.lab.agent_presence import GLOBAL_ROOM, AgentPresence
from nbstage.entrypoints.lab.daemon_revival import REVIVAL, open_link
from nbstage.entrypoints.lab.execution import NOTEBOOK_ROOM, PERSON_LABEL, ROOMS, CellExecution
from nbstage.entrypoints.lab.export_formats import ExportFormats
from nbstage.entrypoints.lab.local_rooms import LocalRooms
from nbstage.entrypoints.lab.room_link import RoomLink

log = logging.getLogger("nbstage.lab")

RAW = 2
"""jupyter-collaboration's message type for JSON requests (the front end's save)."""
REFUSED = 4400
GONE = 1003


class CollaborationSession(APIHandler):
    """The room of a document: opening the notebook in the daemon gives its id."""

    auth_resource = "contents"

    @web.authenticated
    @authorized
    async def put(self, path: str) -> None:
        body = json.loads(self.request.body or b"{}")
        if body.get("type") != "notebook":
            raise web.HTTPError(404, "nbstage shares notebooks only")
        full = full_path(self.settings, path)
        try:
            link = await open_link()
        except (OSError, Untrusted) as exc:
            raise web.HTTPError(503, f"the nbstage daemon is not reachable: {exc}") from None
        try:
            notebook_id, shared = await joined_as_person(link, full)
        except DaemonError as exc:
            raise web.HTTPError(404, exc.message) from None
        finally:
            link.close()
        await self._kernel_session(path, notebook_id)
        ROOMS.paths[notebook_id] = path
        answer = {"format": body.get("format"), "type": "notebook", "fileId": notebook_id}
        self.finish(json.dumps({**answer, "sessionId": shared["session"]}))

    async def _kernel_session(self, path: str, notebook_id: str) -> None:
        """Lab's kernel session for the notebook, made here so the front end finds one
        and neither starts a kernel nor asks for one: its kernel is a stand-in for the
        room's (room_kernels.py), and the cells run in the room's kernel (execution.py)."""
        sessions = self.session_manager
        if not await sessions.session_exists(path=path):
            name = os.path.basename(path)
            await sessions.create_session(path=path, name=name, type="notebook")
        kernel = (await sessions.get_session(path=path)).get("kernel") or {}
        if kernel.get("id") in self.kernel_manager:
            self.kernel_manager.get_kernel(kernel["id"]).notebook_id = notebook_id


class RoomSocket(WebSocketMixin, WebSocketHandler, JupyterHandler):
    """One browser in one room."""

    auth_resource = "contents"
    local = LocalRooms()
    presence = AgentPresence()
    revivals: ClassVar[set[asyncio.Task]] = set()

    def initialize(self) -> None:
        self.link: RoomLink | None = None
        self.notebook_id = self.peer_id = ""
        self.room = ""
        self.reviving = False

    @ws_authenticated
    @authorized
    async def get(self, *args: Any, **kwargs: Any) -> None:
        await super().get(*args, **kwargs)

    async def open(self, room: str) -> None:  # type: ignore[override]
        self.room = room
        if not room.startswith(NOTEBOOK_ROOM):
            self.local.join(room, self)
            if room == GLOBAL_ROOM and (agents := self.presence.known()) is not None:
                self.write_binary(agents)
            return
        self.notebook_id = room[len(NOTEBOOK_ROOM) :]
        try:
            # a daemon that none answers for is started here already (daemon_revival.py)
            self.link = await open_link(self._pushed, self._lost)
        except (OSError, Untrusted) as exc:
            self._refuse(GONE, f"room unavailable: {exc}")
            return
        try:
            joined = await self.link.request(
                "attach", notebook_id=self.notebook_id, peer_label=PERSON_LABEL
            )
            self.peer_id = joined["peer_id"]
            hello = await self.link.request(
                "lab_join", notebook_id=self.notebook_id, peer_id=self.peer_id
            )
        except OSError as exc:
            log.warning("room %s: the daemon went away during a join: %s", self.room, exc)
            self._lost()
            return
        except DaemonError as exc:
            self._refuse(GONE, f"room unavailable: {exc}")
            return
        held = self.get_query_argument("sessionId", "")
        if held != hello["session"]:
            self._refuse(GONE, _reload("the room's history is not the one this page holds"))
            return
        ROOMS.heard(self.notebook_id, self)
        self._pushed(hello["messages"])

    def on_message(self, message: str | bytes) -> None:
        if isinstance(message, str):
            self._refuse(REFUSED, "y-websocket messages are binary")
            return
        if self.link is None:
            self.local.heard(self.room, self, message)
            return
        if self.reviving:
            return
        if message[:1] == bytes([RAW]):
            self._save(message)
            return
        ROOMS.heard(self.notebook_id, self)
        data = base64.b64encode(message).decode("ascii")
        answer = self.link.post(
            "lab_message", notebook_id=self.notebook_id, peer_id=self.peer_id, data=data
        )
        answer.add_done_callback(self._answered)

    def on_close(self) -> None:
        if self.link is None:
            self.local.leave(self.room, self)
        else:
            ROOMS.gone(self.notebook_id, self)
            self.link.close()
            self._forget_agents()

    def _forget_agents(self) -> None:
        path = ROOMS.paths.get(self.notebook_id)
        if path is None or ROOMS.sockets.get(self.notebook_id):
            return
        if (agents := self.presence.forget(path)) is not None:
            self.local.broadcast(GLOBAL_ROOM, agents)

    def _answered(self, answer) -> None:
        if answer.cancelled() or self.reviving:
            return
        if answer.exception() is not None:
            self._refuse(REFUSED, str(answer.exception()))
            return
        self._pushed(answer.result()["messages"])

    def _pushed(self, messages: list[str]) -> None:
        path = ROOMS.paths.get(self.notebook_id)
        for text in messages:
            message = base64.b64decode(text)
            self.write_binary(message)
            if path is not None and (agents := self.presence.copied(path, message)) is not None:
                self.local.broadcast(GLOBAL_ROOM, agents)

    def write_binary(self, message: bytes) -> None:
        if self.ws_connection is not None and not self.ws_connection.is_closing():
            self.write_message(message, binary=True)

    def _lost(self) -> None:
        """The daemon connection ended (or a join was cut off mid-request). Unless this
        websocket is closing anyway, the daemon is brought back if it died
        (daemon_revival.py), its room opened again, and then the page is told to reload:
        its Y history is not the new room's. Never a close that leaves the page no way on
        but a reload by hand."""
        if self.ws_connection is None or self.ws_connection.is_closing() or self.reviving:
            return
        self.reviving = True
        path = ROOMS.paths.get(self.notebook_id)
        notebooks = [] if path is None else [full_path(self.settings, path)]
        start_kept(self.revivals, self._revive(notebooks))

    async def _revive(self, notebooks: list[str]) -> None:
        alive = await REVIVAL.ensure(Asker.LINK_LOST, notebooks)
        word = "restarted" if alive else "went away"
        self._refuse(GONE, _reload(f"the nbstage daemon {word}"))

    def _refuse(self, code: int, reason: str) -> None:
        log.warning("room %s: closing a websocket (%d): %s", self.room, code, reason)
        if self.ws_connection is not None and not self.ws_connection.is_closing():
            self.close(code, reason.encode()[:120].decode("utf-8", "ignore"))

    def _save(self, message: bytes) -> None:
        """The front end's save (ctrl-S): the Room writes the file, the reply says how it went."""
        decoder = Decoder(message)
        decoder.read_var_uint()
        if decoder.read_var_string() != "save" or self.link is None:
            return
        asked = decoder.read_var_uint()
        saved = self.link.post("save", notebook_id=self.notebook_id)
        saved.add_done_callback(lambda done: self._saved(asked, done))

    def _saved(self, asked: int, done) -> None:
        failed = done.cancelled() or done.exception() is not None
        reply = {"type": "save", "responseTo": asked, "status": "failed" if failed else "success"}
        encoder = Encoder()
        encoder.write_var_uint(RAW)
        encoder.write_var_string(json.dumps(reply))
        self.write_binary(encoder.to_bytes())


async def joined_as_person(link: RoomLink, full: str) -> tuple[str, dict[str, Any]]:
    """The notebook at ``full`` opened in the daemon and joined as a person, its shared
    document built: its id and the join's answer."""
    opened = await link.request("open", path=full, peer_label=PERSON_LABEL)
    notebook_id = opened["notebook_id"]
    shared = await link.request("lab_join", notebook_id=notebook_id, peer_id=opened["peer_id"])
    return notebook_id, shared


def full_path(settings: dict[str, Any], path: str) -> str:
    """A path under Lab's root, as the daemon opens it. One that leaves the root (``..``)
    is refused with a 404, as Lab's own contents API refuses it."""
    root = os.path.abspath(os.path.expanduser(settings.get("server_root_dir", os.getcwd())))
    full = os.path.abspath(os.path.join(root, path.lstrip("/")))
    if os.path.commonpath([root, full]) != root:
        raise web.HTTPError(404, f"{path} is outside Lab's root")
    return full


def _reload(reason: str) -> str:
    """Jupyter's close reason that tells the front end to reload, not to merge (it must
    stay within a close frame's 123 bytes)."""
    return json.dumps({"reason": reason, "reloadable": True})


HANDLERS = [
    (r"/api/nbconvert", ExportFormats),
    (r"/api/collaboration/session/(.*)", CollaborationSession),
    (r"/api/collaboration/room/(.*)", RoomSocket),
    (r"/api/kernels/([^/]+)/execute", CellExecution),
]
