"""The kernels JupyterLab sees: stand-ins for the rooms' kernels, which start no process.

Lab's notebook panel wants a kernel session before it will run a cell, even in
server-side execution mode, where the cell goes to ``POST /api/kernels/<id>/execute``
(execution.py) and never over the kernel's websocket. A stock kernel manager would
start a second kernel for every notebook the person opens, beside the room's. So
``nbstage lab`` replaces Lab's kernel manager with ``RoomKernels``: a "kernel" is a
record that names a kernelspec, and its websocket (``StandInChannels``) answers
``kernel_info`` (so Lab shows the kernel idle), has completions and inspections
answered by the room's kernel (code_questions.py), and refuses every other request with
a sentence: code runs in the room's kernel, in the room's queue (ADR 0004).

Lab's interrupt and restart buttons act on the room's kernel (the daemon's
``interrupt`` and ``restart_kernel``): the session endpoint tells the notebook's
stand-in which room it stands for. A stand-in that stands for none refuses them.
"""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime
from typing import Any, ClassVar

from jupyter_client.session import Session
from jupyter_server.services.kernels.connection.base import BaseKernelWebsocketConnection
from jupyter_server.services.kernels.kernelmanager import AsyncMappingKernelManager
from tornado import web
from traitlets import Unicode
from traitlets.config import LoggingConfigurable

from nbstage.entrypoints.common.kept_tasks import start_kept
from nbstage.entrypoints.common.ownership import Untrusted
from nbstage.entrypoints.control.daemon_client import DaemonError
from nbstage.entrypoints.lab.code_questions import QUESTIONS, answer
from nbstage.entrypoints.lab.handlers import REFUSED
from nbstage.entrypoints.lab.kernel_frames import FrameRefused, read_frame, write_frame
from nbstage.protocol.common.version import VERSION

ELSEWHERE = (
    "This notebook's code runs in its nbstage room's kernel: run its cells in the "
    "notebook (shift-enter); its kernel is shared with the agent."
)
LANGUAGE = {
    "name": "python",
    "mimetype": "text/x-python",
    "file_extension": ".py",
    "codemirror_mode": {"name": "ipython", "version": 3},
    "pygments_lexer": "ipython3",
    "nbconvert_exporter": "python",
}


class StandIn(LoggingConfigurable):
    """One notebook's kernel as Lab lists it; the state jupyter_server reads of a kernel."""

    kernel_id = Unicode()
    kernel_name = Unicode()
    notebook_id = Unicode("")
    """The room this kernel stands for, once the session endpoint said so."""
    execution_state = Unicode("idle")
    reason = Unicode("")

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.last_activity = datetime.now(UTC)
        self.session = Session(config=self.config)


class RoomKernels(AsyncMappingKernelManager):
    """Lab's kernel manager under ``nbstage lab``: stand-ins, never a process."""

    async def start_kernel(  # type: ignore[override]
        self, *, kernel_id: str | None = None, path: Any = None, **kwargs: Any
    ) -> str:
        if kernel_id is not None and kernel_id in self:
            return kernel_id
        kernel_id = kernel_id or str(uuid.uuid4())
        name = kwargs.get("kernel_name") or self.default_kernel_name
        self._kernels[kernel_id] = StandIn(parent=self, kernel_id=kernel_id, kernel_name=name)
        self._kernel_connections[kernel_id] = 0
        return kernel_id

    async def _async_shutdown_kernel(  # type: ignore[override]
        self, kernel_id: str, now: bool = False, restart: bool = False
    ) -> None:
        self._check_kernel_id(kernel_id)
        self._kernels.pop(kernel_id, None)
        self._kernel_connections.pop(kernel_id, None)

    shutdown_kernel = _async_shutdown_kernel  # type: ignore[assignment]

    async def _async_shutdown_all(self, now: bool = False) -> None:
        self._kernels.clear()
        self._kernel_connections.clear()

    shutdown_all = _async_shutdown_all  # type: ignore[assignment]

    async def restart_kernel(self, kernel_id: str, now: bool = False) -> None:  # type: ignore[override]
        await self._ask_room(kernel_id, "restart_kernel")

    async def interrupt_kernel(self, kernel_id: str) -> None:  # type: ignore[override]
        await self._ask_room(kernel_id, "interrupt")

    async def _ask_room(self, kernel_id: str, kind: str) -> None:
        from nbstage.entrypoints.lab.execution import ask_room

        self._check_kernel_id(kernel_id)
        notebook_id = self._kernels[kernel_id].notebook_id
        if not notebook_id:
            raise web.HTTPError(409, ELSEWHERE)
        try:
            await ask_room(notebook_id, kind)
        except DaemonError as exc:
            raise web.HTTPError(409, exc.message) from None
        except (OSError, Untrusted) as exc:
            raise web.HTTPError(503, f"the nbstage daemon is not reachable: {exc}") from None

    async def cull_kernels(self) -> None:
        """Stand-ins cost nothing while idle."""


class StandInChannels(BaseKernelWebsocketConnection):
    """A stand-in's websocket, in the v1 protocol when the client offers it, else the
    legacy one (kernel_frames.py): ``kernel_info`` is answered, ``comm_info`` is answered
    empty, completions and inspections by the room's kernel, every other request gets an
    error reply that says where code runs. A frame that is no kernel message closes the
    socket with the edge's refusal code and the reason."""

    questions: ClassVar[set[asyncio.Task]] = set()

    @property
    def protocol(self) -> str | None:
        """The subprotocol the handshake selected (None: legacy)."""
        return self.websocket_handler.selected_subprotocol

    async def connect(self) -> None:
        self.multi_kernel_manager.notify_connect(self.kernel_id)

    def disconnect(self) -> None:  # type: ignore[override]
        self.multi_kernel_manager.notify_disconnect(self.kernel_id)

    def handle_incoming_message(self, incoming_msg: str | bytes) -> None:
        try:
            msg = read_frame(incoming_msg, self.protocol, self.session)
        except FrameRefused as exc:
            self._refuse(str(exc))
            return
        kind = msg["header"]["msg_type"]
        if not kind.endswith("_request") or msg["channel"] not in ("shell", "control"):
            return
        if kind in QUESTIONS:
            start_kept(self.questions, self._put_to_the_room(msg))
            return
        self._reply(msg, _content(kind))

    async def _put_to_the_room(self, msg: dict[str, Any]) -> None:
        notebook_id = self.kernel_manager.notebook_id
        content = await answer(notebook_id, msg["header"]["msg_type"], msg.get("content"))
        self._reply(msg, content)

    def _reply(self, msg: dict[str, Any], content: dict[str, Any]) -> None:
        header = msg["header"]
        reply_kind = header["msg_type"][: -len("_request")] + "_reply"
        self._send("iopub", "status", {"execution_state": "busy"}, header)
        self._send(msg["channel"], reply_kind, content, header)
        self._send("iopub", "status", {"execution_state": "idle"}, header)

    def handle_outgoing_message(self, stream: str, outgoing_msg: list[Any]) -> None:
        """Nothing comes from a kernel: a stand-in has none."""

    def _open(self) -> bool:
        connection = self.websocket_handler.ws_connection
        return connection is not None and not connection.is_closing()

    def _send(self, channel: str, kind: str, content: dict[str, Any], parent: dict) -> None:
        msg = self.session.msg(kind, content, parent=parent)
        msg["channel"] = channel
        if self._open():
            frame = write_frame(msg, self.protocol, self.session)
            self.websocket_handler.write_message(frame, binary=isinstance(frame, bytes))

    def _refuse(self, reason: str) -> None:
        self.log.warning("kernel stand-in %s: closing its websocket: %s", self.kernel_id, reason)
        if self._open():
            self.websocket_handler.close(REFUSED, reason[:120])


def _content(kind: str) -> dict[str, Any]:
    if kind == "kernel_info_request":
        return {
            "status": "ok",
            "protocol_version": "5.3",
            "implementation": "nbstage",
            "implementation_version": VERSION,
            "language_info": LANGUAGE,
            "banner": ELSEWHERE,
            "help_links": [],
        }
    if kind == "comm_info_request":
        return {"status": "ok", "comms": {}}
    refused = {"status": "error", "ename": "RunsInTheRoom", "evalue": ELSEWHERE}
    return {**refused, "traceback": [ELSEWHERE], "execution_count": None}
