"""The daemon's side of the kernel fork server (``kernel_zygote.py``, ADR 0005).

One zygote per interpreter that runs pool kernels, started by the first kernel that asks
for it and kept while it has kernels or was asked within its idle time; it ends by
itself when the daemon is gone. A kernel it forks is not the daemon's child, so the
daemon holds it by a pidfd (``ForkedKernel``): polling and signalling it can never reach
another process that took its pid.

Blocking (a fork request waits for the reply): it runs on a Kernel's blocking lane. The
requests of one zygote go one at a time, under its lock; a fork takes milliseconds.
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import signal
import socket
import subprocess
import threading
from pathlib import Path

import orjson

from nbstage.actors.daemon.kernel.kernel_zygote import FD_ENV, PAD_ENV, ROOM
from nbstage.actors.daemon.kernel.process_tree import kernel_tag, tagged_environ

log = logging.getLogger("nbstage.kernel")

ZYGOTE = Path(__file__).with_name("kernel_zygote.py")
READY_SECS = 60.0
"""How long a starting zygote may take to import ipykernel (a loaded machine is slow)."""
REPLY_SECS = 30.0
STOP_GRACE = 2.0
ENDED = -int(signal.SIGKILL)
"""The exit status a forked kernel reports: the zygote, its parent, reaps it, so the real
one is not known here. Only whether it ended matters to the Kernel actor."""
UNINHERITED = ("JPY_PARENT_PID",)
"""ipykernel reads it when imported, in the zygote: a kernel's parent is the zygote."""


class ZygoteUnavailable(Exception):
    """No zygote could fork the kernel; the caller launches it the plain way."""


class ForkedKernel:
    """A kernel the zygote forked: the part of ``subprocess.Popen`` that jupyter_client's
    local provisioner and the backend use, held by a pidfd."""

    stdin = stdout = stderr = None

    def __init__(self, pid: int, pidfd: int) -> None:
        self.pid = pid
        self.returncode: int | None = None
        self._pidfd = pidfd
        self._lock = threading.Lock()

    def poll(self) -> int | None:
        return self.wait(0) if _ready(self._pidfd, 0) else self.returncode

    def wait(self, timeout: float | None = None) -> int:
        with self._lock:
            if self.returncode is None:
                if not _ready(self._pidfd, timeout):
                    raise subprocess.TimeoutExpired(f"kernel {self.pid}", timeout or 0)
                self.returncode = ENDED
                os.close(self._pidfd)
            return self.returncode

    def send_signal(self, signum: int) -> None:
        with self._lock, contextlib.suppress(ProcessLookupError):
            if self.returncode is None:
                signal.pidfd_send_signal(self._pidfd, signum)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)


def _ready(fd: int, timeout: float | None) -> bool:
    with contextlib.suppress(OSError, ValueError):
        return bool(select.select([fd], [], [], timeout)[0])
    return True


class Zygote:
    """One fork server process and the socket to it."""

    def __init__(self, python: Path) -> None:
        self.python = python
        self.process: subprocess.Popen[bytes] | None = None
        self._channel: socket.socket | None = None
        self._lock = threading.Lock()
        self._failed: str | None = None
        """Why this zygote could not start: it is not tried again."""

    def fork(self, argv: list[str], env: dict[str, str], cwd: str | None) -> ForkedKernel:
        """A kernel forked with this command line, environment and folder. A zygote that
        ended meanwhile (idle, or killed) is started again once."""
        request = orjson.dumps({"argv": argv, "env": env, "cwd": cwd})
        with self._lock:
            if self._failed is not None:
                raise ZygoteUnavailable(self._failed)
            if self.process is not None and self.process.poll() is not None:
                self._stop()
            for attempt in range(2):
                channel = self._channel or self._started()
                try:
                    return self._ask(channel, request)
                except (OSError, EOFError) as exc:
                    self._stop()
                    if attempt:
                        raise ZygoteUnavailable(f"the zygote ended: {exc!r}") from exc
        raise AssertionError("unreachable")

    def _ask(self, channel: socket.socket, request: bytes) -> ForkedKernel:
        channel.sendall(request)
        reply, fds, _, _ = socket.recv_fds(channel, 4096, 1)
        if not reply:
            raise EOFError("no reply")
        answer = orjson.loads(reply)
        if "error" in answer or len(fds) != 1:
            for fd in fds:
                os.close(fd)
            raise ZygoteUnavailable(answer.get("error", "no pidfd in the reply"))
        return ForkedKernel(answer["pid"], fds[0])

    def _started(self) -> socket.socket:
        try:
            return self._start()
        except ZygoteUnavailable as exc:
            self._failed = str(exc)
            raise

    def _start(self) -> socket.socket:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        env = tagged_environ(kernel_tag("zygote"))
        for name in UNINHERITED:
            env.pop(name, None)
        env.update({FD_ENV: str(theirs.fileno()), PAD_ENV: " " * ROOM})
        try:
            process = subprocess.Popen(
                [str(self.python), str(ZYGOTE), " " * ROOM],
                stdin=subprocess.DEVNULL,
                pass_fds=[theirs.fileno()],
                env=env,
                start_new_session=True,
            )
        except OSError as exc:
            ours.close()
            raise ZygoteUnavailable(f"the zygote did not start: {exc}") from exc
        finally:
            theirs.close()
        ours.settimeout(READY_SECS)
        try:
            ready = ours.recv(4096)
        except OSError as exc:
            ready = repr(exc).encode()
        if not ready.startswith(b'{"ready"'):
            ours.close()
            _end(process)
            raise ZygoteUnavailable(f"the zygote did not get ready: {ready[:200]!r}")
        ours.settimeout(REPLY_SECS)
        self.process, self._channel = process, ours
        log.info("kernel zygote for %s started (pid %d)", self.python, process.pid)
        return ours

    def _stop(self) -> None:
        channel, process, self._channel, self.process = self._channel, self.process, None, None
        if channel is not None:
            channel.close()
        if process is not None:
            _end(process)

    def stop(self) -> None:
        with self._lock:
            self._stop()


def _end(process: subprocess.Popen[bytes]) -> None:
    """Let the zygote end by itself (its socket is closed), else kill it."""
    try:
        process.wait(STOP_GRACE)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


class ForkServers:
    """The zygotes of this daemon, one per interpreter."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._zygotes: dict[Path, Zygote] = {}

    def of(self, python: Path) -> Zygote:
        with self._lock:
            return self._zygotes.setdefault(python, Zygote(python))

    def fork(
        self, python: Path, argv: list[str], env: dict[str, str], cwd: str | None
    ) -> ForkedKernel:
        return self.of(python).fork(argv, env, cwd)

    def stop(self) -> None:
        with self._lock:
            zygotes, self._zygotes = list(self._zygotes.values()), {}
        for zygote in zygotes:
            zygote.stop()


FORK_SERVERS = ForkServers()
