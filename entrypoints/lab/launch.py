"""``nbstage lab``: a stock JupyterLab on 127.0.0.1, behind a token, whose collaboration
endpoints are nbstage's (handlers.py) and whose notebooks are the daemon's rooms.

The command replaces its own process with JupyterLab (same pid), after writing the
token (``lab-token``, 0600) and where the server listens (``lab.json``, 0600) in the
state dir, and starting the daemon if none runs. The token reaches Lab in its
environment, never on a command line another user could read. Finding or starting a
state dir's Lab from elsewhere (the session child's show_notebook, the tests) is
entrypoints/common/lab_start.py, which owns those two files.
"""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

import orjson
import psutil

from nbstage.entrypoints.common.lab_start import HOST, RECORD_FILE, token
from nbstage.entrypoints.common.statedir import StatePaths, prepare
from nbstage.entrypoints.control.daemon_launch import start_daemon_unless_running
from nbstage.protocol.common.safe_files import write_private

ROOT_ENV = "NBSTAGE_LAB_ROOT"
"""Lab's root dir when ``nbstage lab`` is given none (default: the home dir)."""
EXTENSIONS = {
    "nbstage.entrypoints.lab": True,
    "jupyter_server_ydoc": False,
    "jupyter_server_fileid": False,
}
"""Ours serves the collaboration endpoints; jupyter_server_ydoc's server side (and the
file ids only it needs) stay off, its front end stays on."""


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
