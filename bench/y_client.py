"""A headless JupyterLab tab for the benches: a pycrdt YNotebook on one room's
websocket, as the front end joins (PUT the session, then y-websocket), on asyncio.

It speaks to any server with Jupyter's collaboration endpoints: ``nbstage lab`` and a
stock JupyterLab with jupyter-collaboration's server side alike. Also the stock Lab
itself, started in a temp dir of its own for the baselines, and ``nbstage lab`` with its
daemon in a state dir of their own.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from common import NBSTAGE
from jupyter_ydoc import YNotebook
from pycrdt import (
    Awareness,
    Doc,
    YMessageType,
    create_awareness_message,
    create_sync_message,
    create_update_message,
    handle_sync_message,
)
from tornado.httpclient import HTTPRequest
from tornado.websocket import WebSocketClientConnection, websocket_connect

from nbstage.entrypoints.common import lab_start
from nbstage.entrypoints.common.statedir import client_paths, state_paths
from nbstage.entrypoints.lab.room_link import RoomLink


def session(base: str, token: str, name: str) -> dict[str, Any]:
    body = json.dumps({"format": "json", "type": "notebook"}).encode()
    request = urllib.request.Request(
        f"{base}/api/collaboration/session/{name}", data=body, method="PUT"
    )
    request.add_header("Authorization", f"token {token}")
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            result: dict[str, Any] = json.loads(answer.read())
            return result
    except urllib.error.HTTPError as refused:
        raise RuntimeError(f"PUT session {name}: {refused.code} {refused.read()!r}") from None


class YClient:
    def __init__(self, ws: WebSocketClientConnection) -> None:
        self.ws = ws
        self.notebook = YNotebook(Doc())
        self.changed = asyncio.Event()
        self.synced = asyncio.Event()
        """The server answered this client's sync step 1."""
        self._outbox: list[bytes] = []
        self.awareness = Awareness(self.notebook.ydoc)
        self.notebook.ydoc.observe(lambda e: self._outbox.append(create_update_message(e.update)))
        self._reader = asyncio.create_task(self._read())

    @classmethod
    async def join(cls, base: str, token: str, name: str) -> YClient:
        answer = await asyncio.to_thread(session, base, token, name)
        room = f"json:notebook:{answer['fileId']}"
        url = f"{base.replace('http', 'ws', 1)}/api/collaboration/room/{room}"
        url += f"?sessionId={answer['sessionId']}"
        request = HTTPRequest(url, headers={"Authorization": f"token {token}"})
        client = cls(await websocket_connect(request, max_message_size=1 << 30))
        await client.ws.write_message(create_sync_message(client.notebook.ydoc), binary=True)
        return client

    async def _read(self) -> None:
        while (message := await self.ws.read_message()) is not None:
            if isinstance(message, bytes) and message[:1] == bytes([YMessageType.SYNC]):
                reply = handle_sync_message(message[1:], self.notebook.ydoc)
                if message[1:2] == b"\x01":
                    self.synced.set()
                self._outbox.clear()
                if reply is not None:
                    await self.ws.write_message(reply, binary=True)
            self.changed.set()

    async def until(self, seen: Callable[[], bool], timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while not seen():
            self.changed.clear()
            if seen():
                return
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("not seen")
            await asyncio.wait_for(self.changed.wait(), left)

    async def aware(self, state: dict[str, Any]) -> None:
        """This client's awareness state, sent as y-websocket's provider sends a change."""
        self.awareness.set_local_state(state)
        update = self.awareness.encode_awareness_update([self.awareness.client_id])
        await self.ws.write_message(create_awareness_message(update), binary=True)

    async def flush(self) -> None:
        sent, self._outbox = self._outbox, []
        for message in sent:
            await self.ws.write_message(message, binary=True)

    def count(self) -> int:
        return len(self.notebook.ycells)

    def has_source(self, index: int, source: str) -> bool:
        ycells = self.notebook.ycells
        return len(ycells) > index and str(ycells[index]["source"]) == source

    async def close(self) -> None:
        self.ws.close()
        self._reader.cancel()


class Nbstage:
    """`nbstage lab` and its daemon in a state dir of their own."""

    def __init__(
        self, work: Path, settings: dict[str, str] | None = None, nbstage: list[str] = NBSTAGE
    ) -> None:
        """``settings``: the daemon's, as NBSTAGE_* variables; ``nbstage``: the command
        (another checkout's, to compare code by turns)."""
        self.state, self.root = work / "state", work / "nbstage"
        self.root.mkdir()
        command = [*nbstage, "lab", "--state-dir", str(self.state), "--root-dir", str(self.root)]
        self.log = (work / "lab.log").open("wb")
        env = {**os.environ, "NBSTAGE_AUTOSAVE_DELAY_SECS": "60", **(settings or {})}
        # Lab's workspaces (which a notebook's page now writes) stay in the bench's folder.
        env["JUPYTERLAB_WORKSPACES_DIR"] = str(work / "nbstage-jupyter" / "workspaces")
        self.process = subprocess.Popen(command, env=env, stdout=self.log, stderr=self.log)
        paths = state_paths(self.state)
        self.base = f"http://127.0.0.1:{lab_start.wait_until_up(paths, 120)['port']}"
        self.token = lab_start.token(paths)
        self.agent: RoomLink | None = None
        self.pid = 0

    async def ask(self, kind: str, **fields: object) -> dict:
        """The agent's request, on this loop (the Lab edge's own asyncio daemon client)."""
        if self.agent is None:
            self.agent = await RoomLink.open(client_paths(self.state).socket)
            self.pid = (await self.agent.request("identity"))["pid"]
        return await self.agent.request(kind, **fields)

    def stop(self) -> None:
        if self.agent is not None:
            self.agent.close()
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(30)
        subprocess.run([*NBSTAGE, "daemon", "stop", "--state-dir", str(self.state)], check=False)
        self.log.close()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class StockLab:
    """A plain `jupyter lab` with jupyter-collaboration's server side on, in ``work``."""

    def __init__(self, work: Path) -> None:
        self.root = work / "stock"
        self.root.mkdir()
        self.port, self.token = free_port(), "bench-token"
        env = {**os.environ, "JUPYTER_TOKEN": self.token, "JUPYTER_PLATFORM_DIRS": "1"}
        for name in ("RUNTIME", "DATA", "CONFIG"):
            env[f"JUPYTER_{name}_DIR"] = str(work / "stock-jupyter" / name.lower())
        env["JUPYTERLAB_SETTINGS_DIR"] = str(work / "stock-jupyter" / "settings")
        env["JUPYTERLAB_WORKSPACES_DIR"] = str(work / "stock-jupyter" / "workspaces")
        command = [sys.executable, "-m", "jupyterlab", "--ServerApp.ip=127.0.0.1"]
        command += [f"--ServerApp.port={self.port}", "--ServerApp.open_browser=False"]
        command += [f"--ServerApp.root_dir={self.root}", "--ServerApp.port_retries=0"]
        command += [f"--ServerApp.allow_root={os.geteuid() == 0}"]
        self.log = (work / "stock.log").open("wb")
        self.process = subprocess.Popen(  # cwd: its YStore file goes there
            command, env=env, stdout=self.log, stderr=subprocess.STDOUT, cwd=work
        )
        deadline = time.monotonic() + 120
        while not _answers(self.port):
            if time.monotonic() > deadline or self.process.poll() is not None:
                self.stop()
                raise RuntimeError(f"the stock JupyterLab did not start; see {work}/stock.log")
            time.sleep(0.2)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.close()


def _answers(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(1.0)
        return probe.connect_ex(("127.0.0.1", port)) == 0
