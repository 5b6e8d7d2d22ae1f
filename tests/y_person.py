"""A person's browser without a browser: a pycrdt YNotebook kept in step with a room,
over the daemon socket (``SocketPerson``) or over Lab's websocket (tests/lab_support.py).

Both speak y-websocket: the room's sync step 1 is answered with step 2, updates are
applied, and the person's own changes go out as update messages.
"""

from __future__ import annotations

import base64
import time
from collections.abc import Callable
from typing import Any

from jupyter_ydoc import YNotebook
from pycrdt import (
    Awareness,
    Decoder,
    Doc,
    YMessageType,
    create_sync_message,
    create_update_message,
    handle_sync_message,
)

from nbstage.entrypoints.control.daemon_client import DaemonClient, DaemonError
from nbstage.protocol.daemon.frames import FrameKind


class YPerson:
    """The Y side: what to do with a message heard, what to send after an edit."""

    def __init__(self) -> None:
        self.notebook = YNotebook(Doc())
        self.awareness = Awareness(self.notebook.ydoc)
        self.outbox: list[bytes] = []
        self.notebook.ydoc.observe(lambda e: self.outbox.append(create_update_message(e.update)))

    def hear(self, message: bytes) -> list[bytes]:
        """The replies a message needs (a step 2 for the room's step 1)."""
        if message[:1] == bytes([YMessageType.SYNC]):
            reply = handle_sync_message(message[1:], self.notebook.ydoc)
            if reply is not None:
                return [reply]
        if message[:1] == bytes([YMessageType.AWARENESS]):
            decoder = Decoder(message)
            decoder.read_var_uint()
            self.awareness.apply_awareness_update(decoder.read_message(), "room")
        return []

    def agents(self) -> list[dict[str, Any]]:
        """The awareness states the room publishes for its agents."""
        return [state for state in self.awareness.states.values() if "nbstage" in state]

    def greeting(self) -> bytes:
        return create_sync_message(self.notebook.ydoc)

    def take_outbox(self) -> list[bytes]:
        taken, self.outbox = self.outbox, []
        return taken

    def cells(self) -> list[dict[str, Any]]:
        return self.notebook.get()["cells"]

    def cell(self, cell_id: str) -> dict[str, Any] | None:
        return next((c for c in self.cells() if c.get("id") == cell_id), None)

    def type_into(self, cell_id: str, text: str) -> None:
        """Append ``text`` to a cell's source, as typing at its end does."""
        index = next(i for i, c in enumerate(self.cells()) if c["id"] == cell_id)
        source = self.notebook.ycells[index]["source"]
        source += text


class SocketPerson(YPerson):
    """A person joined straight on the daemon socket, as the Lab edge joins for one."""

    def __init__(self, client: DaemonClient, notebook_id: str) -> None:
        super().__init__()
        self.session = ""
        """The room's Y history, as its last answer named it."""
        self.notebook_id = notebook_id
        self.join(client)

    def join(self, client: DaemonClient) -> None:
        """Attach and join on ``client``, with the Y document this person holds."""
        self.client = client
        self.peer_id = client.request("attach", notebook_id=self.notebook_id, peer_label="person")[
            "peer_id"
        ]
        hello = self.ask("lab_join")
        self.outbox.clear()
        self.send_all([reply for message in hello for reply in self.hear(message)])
        self.send_all([self.greeting()])
        self.outbox.clear()

    def ask(self, kind: str, **fields: Any) -> list[bytes]:
        """One request; lab frames that come first are applied on the way."""
        request_id = self.client.send(
            kind, notebook_id=self.notebook_id, peer_id=self.peer_id, **fields
        )
        while True:
            frame = self.client.receive()
            if frame["type"] == FrameKind.LAB:
                self._apply(frame)
            elif frame.get("id") == request_id and frame["type"] == FrameKind.ERROR:
                raise DaemonError(frame["error"]["code"], frame["error"]["message"])
            elif frame.get("id") == request_id and frame["type"] == FrameKind.RESULT:
                self.session = frame["result"]["session"]
                return [base64.b64decode(m) for m in frame["result"]["messages"]]

    def send_all(self, messages: list[bytes]) -> None:
        for message in messages:
            for reply in self.ask("lab_message", data=base64.b64encode(message).decode()):
                self.send_all(self.hear(reply))

    def flush(self) -> None:
        """Send this person's edits; back once the room has journalled them."""
        self.send_all(self.take_outbox())

    def _apply(self, frame: dict[str, Any]) -> None:
        for text in frame["messages"]:
            self.send_all(self.hear(base64.b64decode(text)))

    def wait_until(self, seen: Callable[[], bool], timeout: float = 10.0) -> None:
        """Apply pushed frames until ``seen()`` holds; AssertionError at the timeout."""
        deadline = time.monotonic() + timeout
        while not seen():
            assert time.monotonic() < deadline, f"not seen in {timeout}s; cells: {self.cells()}"
            frame = self.client.receive()
            if frame["type"] == FrameKind.LAB:
                self._apply(frame)
