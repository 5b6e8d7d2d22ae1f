"""``nbstage mcp`` on raw pipes, for tests that write lines no SDK client would send.

A reader thread puts every stdout line on a queue and keeps it in ``lines``; every read
has a timeout, so nothing can hang. :meth:`RawMcpProcess.stop` returns only once the
edge and every process it started (its session child) are gone, so nothing of the
client still writes into the state dir when the test's fixtures remove it.
"""

from __future__ import annotations

import os
import queue
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import orjson

from tests.support import NBSTAGE, wait_edge_tree_gone


class RawMcpProcess:
    """One ``nbstage mcp`` process on pipes, started in ``cwd`` with ``env`` added."""

    def __init__(
        self,
        state_dir: Path,
        env: dict[str, str],
        *extra: str,
        cwd: Path,
        command: tuple[str, ...] = tuple(NBSTAGE),
    ) -> None:
        self.stderr_path = cwd / f"mcp-stderr-{time.monotonic_ns()}.log"
        with self.stderr_path.open("wb") as stderr:
            self.proc = subprocess.Popen(
                [*command, "mcp", "--state-dir", str(state_dir), *extra],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                env={**os.environ, **env},
                cwd=cwd,
            )
        self.lines: list[bytes] = []
        self.notifications: list[dict[str, Any]] = []
        self._queue: queue.Queue[bytes | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line)
            self._queue.put(line)
        self._queue.put(None)

    def write(self, data: bytes) -> None:
        """Write raw bytes to stdin; a server that stopped reading fails the test."""
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(data)
            self.proc.stdin.flush()
        except BrokenPipeError:
            raise AssertionError(f"nbstage mcp stopped reading: {self.stderr_tail()}") from None

    def write_line(self, line: bytes) -> None:
        self.write(line + b"\n")

    def send(self, message: dict[str, Any]) -> None:
        self.write_line(orjson.dumps(message))

    def next_message(self, timeout: float) -> dict[str, Any]:
        """The next stdout line, parsed; fails on a timeout or on EOF."""
        try:
            line = self._queue.get(timeout=max(0.0, timeout))
        except queue.Empty:
            raise AssertionError(f"no line on stdout within {timeout:.1f}s") from None
        if line is None:
            raise AssertionError(f"stdout closed; stderr: {self.stderr_tail()}")
        return orjson.loads(line)

    def close_stdin(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()

    def stderr_tail(self, size: int = 4000) -> str:
        return self.stderr_path.read_bytes()[-size:].decode(errors="replace")

    def stop(self) -> None:
        """SIGKILL the edge unless it has exited; return once its whole tree is gone."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)
        self._reader.join(10)
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None and not pipe.closed:
                pipe.close()
        wait_edge_tree_gone(self.proc.pid)
