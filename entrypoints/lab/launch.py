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
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, BinaryIO

import orjson
import psutil

from nbstage.entrypoints.common.python_command import module_command
from nbstage.entrypoints.common.statedir import StatePaths, prepare, state_paths
from nbstage.entrypoints.control.daemon_launch import start_daemon_unless_running
from nbstage.protocol.common.safe_files import (
    FileRefused,
    open_private,
    read_regular,
    write_private,
)

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
KERNELS = "nbstage.entrypoints.lab.room_kernels"


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
        # The rooms' kernels run the cells; Lab's are stand-ins (room_kernels.py).
        "ServerApp.kernel_manager_class": f"{KERNELS}.RoomKernels",
        "ServerApp.kernel_websocket_connection_class": f"{KERNELS}.StandInChannels",
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


def ensure_running(state_dir: str, timeout: float = 90.0) -> dict[str, Any]:
    """The record of the state dir's Lab edge and its token, starting ``nbstage lab``
    detached (in a session of its own, like the daemon) when none runs."""
    paths = state_paths(state_dir)
    if running(paths) is None:
        prepare(paths)
        command = [*module_command("nbstage.entrypoints.cli"), "lab", "--state-dir", state_dir]
        with open_private_append(paths.logs / "lab.out") as out:
            subprocess.run(
                ["/bin/sh", "-c", '"$@" &', "sh", *command],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=out,
                start_new_session=True,
                check=False,
            )
    return {**wait_until_up(paths, timeout), "token": token(paths)}


def open_private_append(path: Path) -> BinaryIO:
    return os.fdopen(open_private(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT), "ab")
