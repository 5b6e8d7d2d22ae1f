"""A real ``nbstage lab`` for the tests, and a headless Y client that joins its rooms over
the real websocket, as JupyterLab's front end does (PUT the session, then y-websocket).

One Lab server serves the whole test session (``lab_running``); its daemon, state dir,
Jupyter dirs and notebooks live in one temp dir that goes with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat
from tornado.httpclient import HTTPRequest
from tornado.websocket import (
    WebSocketClientConnection,
    WebSocketClosedError,
    websocket_connect,
)

from nbstage.entrypoints.common import lab_start
from nbstage.entrypoints.common.statedir import state_paths
from tests.conftest import FAST_SETTINGS
from tests.support import RunningDaemon, daemon_running
from tests.y_person import YPerson


@dataclass
class RunningLab:
    daemon: RunningDaemon
    root: Path
    port: int
    token: str
    process: subprocess.Popen
    start: Callable[[], subprocess.Popen]
    """Starts `nbstage lab` again, as it was started."""

    def wait_up(self) -> None:
        paths = state_paths(self.daemon.paths.root)
        self.port = lab_start.wait_until_up(paths, 90)["port"]
        self.token = lab_start.token(paths)

    def restart(self) -> None:
        """Stop `nbstage lab` and start it again (on a port of its choosing)."""
        stop_lab(self.process)
        self.process = self.start()
        self.wait_up()

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def notebook(self, name: str, *sources: str) -> Path:
        """A notebook file under Lab's root, with one code cell per source."""
        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_code_cell(source) for source in sources]
        path = self.root / name
        nbformat.write(nb, path)
        return path

    def call(self, method: str, path: str, body: Any = None) -> Any:
        """One call to Lab's REST API with the token; its JSON answer (HTTPError if refused)."""
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(f"{self.base}{path}", data=data, method=method)
        request.add_header("Authorization", f"token {self.token}")
        with urllib.request.urlopen(request, timeout=120) as answer:
            return json.loads(answer.read() or b"null")

    def session(self, name: str, token: str | None = None) -> dict[str, Any]:
        """What the front end's PUT /api/collaboration/session/<path> answers."""
        body = json.dumps({"format": "json", "type": "notebook"}).encode()
        request = urllib.request.Request(
            f"{self.base}/api/collaboration/session/{name}", data=body, method="PUT"
        )
        request.add_header("Authorization", f"token {self.token if token is None else token}")
        with urllib.request.urlopen(request, timeout=30) as answer:
            result: dict[str, Any] = json.loads(answer.read())
            return result


@contextmanager
def lab_running(settings: dict[str, str] | None = None) -> Iterator[RunningLab]:
    """``settings``: the daemon's, over FAST_SETTINGS."""
    with tempfile.TemporaryDirectory(prefix="nbl-") as tmp:
        base = Path(tmp)
        root = base / "notebooks"
        root.mkdir()
        jupyter = {
            "JUPYTER_RUNTIME_DIR": f"{tmp}/jupyter/runtime",
            "JUPYTER_DATA_DIR": f"{tmp}/jupyter/data",
            "JUPYTER_CONFIG_DIR": f"{tmp}/jupyter/config",
            "JUPYTERLAB_SETTINGS_DIR": f"{tmp}/jupyter/settings",
            "JUPYTERLAB_WORKSPACES_DIR": f"{tmp}/jupyter/workspaces",
            "IPYTHONDIR": f"{tmp}/ipython",
            "JUPYTER_PLATFORM_DIRS": "1",
        }
        env = {**FAST_SETTINGS, **(settings or {}), **jupyter}
        with daemon_running(base / "state", env) as daemon, (base / "lab.out").open("wb") as out:
            command = [sys.executable, "-m", "nbstage.entrypoints.cli", "lab"]
            command += ["--root-dir", str(root)]
            lab_env = {**os.environ, "NBSTAGE_STATE_DIR": str(base / "state"), **env}

            def start() -> subprocess.Popen:
                return subprocess.Popen(command, env=lab_env, stdout=out, stderr=subprocess.STDOUT)

            lab = RunningLab(daemon, root, 0, "", start(), start)
            try:
                lab.wait_up()
                yield lab
            finally:
                stop_lab(lab.process)


def stop_lab(process: subprocess.Popen) -> None:
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


class WsPerson(YPerson):
    """A browser tab, headless: one room's websocket, driven from a sync test."""

    def __init__(
        self, lab: RunningLab, name: str, held: str | None = None, session: dict | None = None
    ) -> None:
        """``held``: the session id the page holds, if not the one the session gives;
        ``session``: the page's session, asked for earlier, if it is not to be asked now."""
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.name = name
        session = session or lab.session(name)
        self.notebook_id = session["fileId"]
        url = (
            f"ws://127.0.0.1:{lab.port}/api/collaboration/room/json:notebook:{self.notebook_id}"
            f"?sessionId={held or session['sessionId']}"
        )
        request = HTTPRequest(url, headers={"Authorization": f"token {lab.token}"})
        self.ws: WebSocketClientConnection = self._run(lambda: websocket_connect(request))
        self.close_code: int | None = None
        with contextlib.suppress(WebSocketClosedError):
            # A room that refuses this page (a history it does not hold) may close the
            # socket before the greeting is written; ``wait_until`` reads why.
            self._send(self.greeting())

    def _run(self, make: Callable[[], Any], timeout: float = 30.0) -> Any:
        """Await what ``make()`` returns, on this person's loop (tornado's futures are made
        on the loop that runs when they are asked for)."""

        async def run() -> Any:
            return await asyncio.wait_for(make(), timeout)

        # tornado asks for the current loop outside coroutines too: it must be this one,
        # or asyncio would make one that nobody closes.
        asyncio.set_event_loop(self.loop)
        return self.loop.run_until_complete(run())

    def _send(self, message: bytes) -> None:
        self._run(lambda: self.ws.write_message(message, binary=True))

    def flush(self) -> None:
        for message in self.take_outbox():
            self._send(message)

    def wait_until(self, seen: Callable[[], bool], timeout: float = 15.0) -> None:
        """Apply what the room sends until ``seen()`` holds; AssertionError at the timeout."""
        deadline = time.monotonic() + timeout
        while not seen():
            left = deadline - time.monotonic()
            assert left > 0, f"not seen in {timeout}s; cells: {self.cells()}"
            try:
                message = self._run(self.ws.read_message, left)
            except TimeoutError:
                continue
            if message is None:
                self.close_code = self.ws.close_code
                raise ConnectionError(f"closed {self.ws.close_code}: {self.ws.close_reason}")
            for reply in self.hear(message):
                self._send(reply)
            self.outbox.clear()

    def synced(self) -> None:
        """Until the room's cells are here."""
        self.wait_until(lambda: bool(self.cells()))

    def close(self) -> None:
        """Close the websocket and wait for the server's close (read_message gives None)."""
        try:
            asyncio.set_event_loop(self.loop)
            self.ws.close()
            with contextlib.suppress(TimeoutError):
                while self._run(self.ws.read_message, 10) is not None:
                    pass
        finally:
            asyncio.set_event_loop(None)
            self.loop.close()
