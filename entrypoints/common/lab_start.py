"""A state dir's Lab edge, found or started: its token (``lab-token``, 0600), the record
of where it listens (``lab.json``, 0600), and ``ensure_running``, which starts
``nbstage lab`` detached when none runs and waits until it answers.

``nbstage lab`` (entrypoints/lab/launch.py) writes the record and reads the token here;
the session child's ``show_notebook`` calls ``ensure_running`` on a worker thread. The
session child loads this module, never the Lab command's own, which becomes JupyterLab.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import socket
import subprocess
import time
from pathlib import Path
from typing import Any, BinaryIO

import orjson
import psutil

from nbstage.entrypoints.common.python_command import module_command
from nbstage.entrypoints.common.statedir import StatePaths, prepare, state_paths
from nbstage.protocol.common.safe_files import (
    FileRefused,
    open_private,
    read_regular,
    write_private,
)

TOKEN_FILE = "lab-token"
RECORD_FILE = "lab.json"
HOST = "127.0.0.1"


def token(paths: StatePaths) -> str:
    """The state dir's Lab token, made on first use."""
    with contextlib.suppress(FileNotFoundError):
        kept = read_regular(paths.root / TOKEN_FILE, 4096)[0].decode().strip()
        if kept:
            return kept
    made = secrets.token_urlsafe(32)
    write_private(paths.root / TOKEN_FILE, made.encode())
    return made


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
