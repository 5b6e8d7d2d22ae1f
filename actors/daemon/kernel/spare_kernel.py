"""The warm kernel: one pool kernel launched the moment an autostarted daemon starts.

A client that finds no daemon starts one (``entrypoints/control/daemon_launch.py``) and, most
often, asks for a notebook and runs a cell right away. Most of the wait for that first
result is the kernel's own start (ipykernel's imports), so the daemon launches one pool
kernel before it loads its own code, and the first notebook whose kernel would run in
the pool adopts it (``JupyterBackend.adopting``). Nothing here imports jupyter_client:
the connection file is written from its documented keys.

Only the daemon's edge launches and discards the spare; a Kernel's launch work, on a
worker thread, takes it. The slot is this process's only shared state between the two,
and a lock guards it. An unused spare is stopped after ``SPARE_UNUSED_SECS``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import signal
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path

import orjson

from nbstage.actors.daemon.environment import environments
from nbstage.actors.daemon.kernel.process_tree import kernel_tag, tagged_environ

log = logging.getLogger("nbstage.kernel")

SPARE_UNUSED_SECS = 120.0
LAUNCHER = Path(__file__).with_name("kernel_launcher.py")
NO_HISTORY = "--HistoryManager.enabled=False"
KERNEL_NAME = "python3"
PORTS = ("shell_port", "iopub_port", "stdin_port", "control_port", "hb_port")
STOP_GRACE = 2.0


@dataclass(frozen=True)
class Spare:
    kernel_id: str
    connection_file: Path
    process: subprocess.Popen[bytes]
    env: Path
    """Its pool environment, removed with it."""
    cwd: str


def launch_spare(state_dir: str | Path, kernel_dir: Path) -> Spare | None:
    """Launch a pool kernel if the template is built already; never builds it."""
    template = environments.template_path()
    if not (template / environments.READY).exists():
        return None
    kernel_id = f"spare-{secrets.token_hex(3)}"
    kernel_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    env = environments.take_pool_env(template, state_dir, kernel_id)
    connection_file = kernel_dir / f"{kernel_id}.json"
    info = {
        "transport": "ipc",
        "ip": str(kernel_dir / kernel_id),
        **{port: number for number, port in enumerate(PORTS, start=1)},
        "key": secrets.token_hex(32),
        "signature_scheme": "hmac-sha256",
        "kernel_name": KERNEL_NAME,
    }
    argv = [
        str(environments.env_python(env)),
        str(LAUNCHER),
        "-f",
        str(connection_file),
        NO_HISTORY,
    ]
    try:
        fd = os.open(connection_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(orjson.dumps(info))
        process = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            env=tagged_environ(kernel_tag(kernel_id)),
        )
    except BaseException:
        connection_file.unlink(missing_ok=True)
        environments.remove_env(env)
        raise
    log.info("spare kernel %s launched (pid %d)", kernel_id, process.pid)
    return Spare(kernel_id, connection_file, process, env, os.getcwd())


def warm(state_dir: str | Path, kernel_dir: Path) -> None:
    """Launch a spare into ``SPARE``; a failure is logged, never raised."""
    try:
        spare = launch_spare(state_dir, kernel_dir)
    except (OSError, subprocess.SubprocessError) as exc:
        log.warning("no spare kernel: %s", exc)
        return
    if spare is not None:
        SPARE.put(spare)


def stop_spare(spare: Spare) -> None:
    """Kill a spare nobody adopted and remove what it left behind."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(spare.process.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        spare.process.wait(STOP_GRACE)
    spare.connection_file.unlink(missing_ok=True)
    environments.remove_env(spare.env)


class SpareSlot:
    """At most one spare kernel, waiting to be adopted."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._spare: Spare | None = None

    def put(self, spare: Spare) -> None:
        with self._lock:
            earlier, self._spare = self._spare, spare
        if earlier is not None:
            stop_spare(earlier)

    def take(self) -> Spare | None:
        """The spare, if one still runs; the slot is empty afterwards."""
        with self._lock:
            spare, self._spare = self._spare, None
        if spare is not None and spare.process.poll() is not None:
            log.warning("spare kernel %s had exited; not adopted", spare.kernel_id)
            stop_spare(spare)
            return None
        return spare

    def discard(self) -> None:
        spare = self.take()
        if spare is not None:
            log.info("spare kernel %s stopped unused", spare.kernel_id)
            stop_spare(spare)


SPARE = SpareSlot()
