"""``nbstage lab``: a stock JupyterLab on 127.0.0.1, behind a token, whose collaboration
endpoints are nbstage's (handlers.py) and whose notebooks are the daemon's rooms.

The command replaces its own process with JupyterLab (same pid), after writing the
token (``lab-token``, 0600) and where the server listens (``lab.json``, 0600) in the
state dir, and starting the daemon if none runs. The token reaches Lab in its
environment, never on a command line another user could read.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import socket
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

import orjson
import psutil

from nbstage.entrypoints.control.daemon_launch import start_daemon_unless_running
from nbstage.entrypoints.common.statedir import StatePaths, prepare
from nbstage.protocol.common.safe_files import FileRefused, read_regular, write_private

TOKEN_FILE = "lab-token"
RECORD_FILE = "lab.json"
ROOT_ENV = "NBSTAGE_LAB_ROOT"
"""Lab's root dir when ``nbstage lab`` is given none (default: the home dir)."""
HOST = "127.0.0.1"
EXTENSIONS = {
    "nbstage.entrypoints.lab": True,
    "jupyter_server_ydoc": False,
    "jupyter_server_fileid": False,
}
"""Ours serves the collaboration endpoints; jupyter_server_ydoc's server side (and the
file ids only it needs) stay off, its front end stays on."""


def token(paths: StatePaths) -> str:
    """The state dir's Lab token, made on first use."""
    with contextlib.suppress(FileNotFoundError):
        kept = read_regular(paths.root / TOKEN_FILE, 4096)[0].decode().strip()
        if kept:
            return kept
    made = secrets.token_urlsafe(32)
    write_private(paths.root / TOKEN_FILE, made.encode())
    return made


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        return int(probe.getsockname()[1])


def root_dir(given: str | None) -> Path:
    return Path(given or os.environ.get(ROOT_ENV) or Path.home()).expanduser().resolve()


def lab_command(root: Path, port: int) -> list[str]:
    options = {
        "ServerApp.ip": HOST,
        "ServerApp.port": str(port),
        "ServerApp.port_retries": "0",
        "ServerApp.open_browser": "False",
        "ServerApp.root_dir": str(root),
        # Jupyter refuses root unless told; CI containers run as root.
        "ServerApp.allow_root": str(os.geteuid() == 0),
    }
    argv = [sys.executable, "-m", "jupyterlab"]
    argv += [f"--{name}={value}" for name, value in options.items()]
    for name, enabled in EXTENSIONS.items():
        argv += ["--ServerApp.jpserver_extensions", f"{name}={enabled}"]
    return argv


def run(paths: StatePaths, root: Path, port: int | None) -> None:
    """Become JupyterLab; returns only if the exec fails."""
    prepare(paths)
    start_daemon_unless_running(paths)
    port = port or free_port()
    me = psutil.Process()
    record = {"pid": me.pid, "created": me.create_time(), "port": port, "root": str(root)}
    write_private(paths.root / RECORD_FILE, orjson.dumps(record))
    env = {**os.environ, "JUPYTER_TOKEN": token(paths), "NBSTAGE_STATE_DIR": str(paths.root)}
    command = lab_command(root, port)
    os.execve(command[0], command, env)


def running(paths: StatePaths) -> dict[str, Any] | None:
    """The record of the Lab server of this state dir, if its process still runs."""
    try:
        record = orjson.loads(read_regular(paths.root / RECORD_FILE, 4096)[0])
        proc = psutil.Process(record["pid"])
        if abs(proc.create_time() - record["created"]) > 1.0:
            return None
    except (FileNotFoundError, FileRefused, psutil.Error, KeyError, TypeError, ValueError):
        return None
    return dict(record)


def answers(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(1.0)
        return probe.connect_ex((HOST, port)) == 0


def wait_until_up(paths: StatePaths, timeout: float = 60.0) -> dict[str, Any]:
    """The record of a Lab server that answers on its port; TimeoutError after ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        record = running(paths)
        if record is not None and answers(record["port"]):
            return record
        time.sleep(0.1)
    raise TimeoutError(f"JupyterLab did not answer within {timeout:.0f}s; see logs/lab.out")


def notebook_url(record: dict[str, Any], path: str, lab_token: str) -> str:
    """The URL that opens ``path`` (absolute, under Lab's root) in JupyterLab."""
    relative = Path(path).resolve().relative_to(record["root"])
    return f"http://{HOST}:{record['port']}/lab/tree/{quote(str(relative))}?token={lab_token}"
