"""`nbstage mcp` on raw stdio: lines in, lines out (SPEC §3.4, §8, §12).

No SDK here: each test spawns the process with pipes and writes JSON-RPC lines
itself, so it can send what no well-behaved client would (old protocol versions,
lines that are not JSON, ids of odd types) and check every byte on stdout. A reader
thread puts stdout lines on a queue; every read has a timeout, so nothing can hang.
"""

from __future__ import annotations

import itertools
import os
import queue
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from importlib.metadata import version as package_version
from pathlib import Path
from typing import Any

import orjson
import pytest

from nbstage.protocol.tools import TOOLS_BY_NAME
from tests.support import NBSTAGE, RunningDaemon, processes_of_daemon, wait_until

pytestmark = pytest.mark.e2e

READ_TIMEOUT = 20.0
"""No single read waits longer than this."""

EXIT_BUDGET_SECS = 2.5
"""SPEC §8: stdin EOF stops the child actors within 2 s; the process exits right after."""

LEGACY_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")


class RawServer:
    """One ``nbstage mcp`` process on pipes. Every stdout line is kept in ``lines``."""

    def __init__(self, state_dir: Path, env: dict[str, str], *extra: str, cwd: Path) -> None:
        self.stderr_path = cwd / f"mcp-stderr-{time.monotonic_ns()}.log"
        with self.stderr_path.open("wb") as stderr:
            self.proc = subprocess.Popen(
                [*NBSTAGE, "mcp", "--state-dir", str(state_dir), *extra],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                env={**os.environ, **env},
                cwd=cwd,
            )
        self.lines: list[bytes] = []
        self._queue: queue.Queue[bytes | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self._ids = itertools.count(1)
        self.notifications: list[dict[str, Any]] = []

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line)
            self._queue.put(line)
        self._queue.put(None)

    # --- writing --------------------------------------------------------------------------

    def write(self, line: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + b"\n")
        self.proc.stdin.flush()

    def send(self, message: dict[str, Any]) -> None:
        self.write(orjson.dumps(message))

    def next_id(self) -> int:
        return next(self._ids)

    # --- reading --------------------------------------------------------------------------

    def read(self, timeout: float = READ_TIMEOUT) -> dict[str, Any]:
        """The next message on stdout; fails on a timeout or on EOF."""
        try:
            line = self._queue.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no line on stdout within {timeout}s") from None
        if line is None:
            raise AssertionError(f"stdout closed; stderr: {self.stderr_tail()}")
        return orjson.loads(line)

    def reply(self, request_id: Any, timeout: float = READ_TIMEOUT) -> dict[str, Any]:
        """The reply to ``request_id``; notifications on the way are kept aside."""
        deadline = time.monotonic() + timeout
        while True:
            message = self.read(max(0.0, deadline - time.monotonic()))
            if "method" in message:
                self.notifications.append(message)
                continue
            assert message.get("id") == request_id, f"expected a reply to {request_id}: {message}"
            return message

    def request(self, method: str, params: Any = None, **kw: Any) -> dict[str, Any]:
        request_id = kw.get("request_id", self.next_id())
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return self.reply(request_id)

    def initialize(self, version: str = "2025-11-25") -> dict[str, Any]:
        params = {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": {"name": "raw", "title": "raw", "version": "1"},
        }
        answer = self.request("initialize", params)
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return answer

    def call(self, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        """A tools/call that must succeed; its result."""
        answer = self.request("tools/call", {"name": name, "arguments": arguments or {}})
        assert "result" in answer, answer
        assert answer["result"]["isError"] is False, answer["result"]
        return answer["result"]

    # --- ending ---------------------------------------------------------------------------

    def close_stdin(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()

    def stderr_tail(self, size: int = 4000) -> str:
        return self.stderr_path.read_bytes()[-size:].decode(errors="replace")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)
        self._reader.join(10)
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            self.proc.stdin.close()
        if self.proc.stdout is not None:
            self.proc.stdout.close()


@contextmanager
def raw_server(state_dir: Path, env: dict[str, str], *extra: str, cwd: Path) -> Iterator[RawServer]:
    server = RawServer(state_dir, env, *extra, cwd=cwd)
    try:
        yield server
    finally:
        server.stop()


def assert_stdout_is_only_json_rpc(server: RawServer) -> None:
    for line in server.lines:
        assert line.endswith(b"\n"), line
        message = orjson.loads(line)
        assert isinstance(message, dict), line
        assert message.get("jsonrpc") == "2.0", line


def exit_after(server: RawServer, stop: Any) -> tuple[int | None, float]:
    """Stop the server with ``stop()``; its return code and how long it took to exit."""
    started = time.monotonic()
    stop()
    try:
        code = server.proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        code = None
    return code, time.monotonic() - started


# --- the handshake ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("requested", "answered"),
    [*((v, v) for v in LEGACY_VERSIONS), ("2030-01-01", "2025-11-25")],
)
def test_initialize_negotiates_the_protocol_version(
    state_dir: Path, requested: str, answered: str
) -> None:
    with raw_server(state_dir, {}, "--no-autostart", cwd=state_dir.parent) as server:
        started = time.monotonic()
        answer = server.initialize(requested)
        assert time.monotonic() - started < 10
        result = answer["result"]
        assert result["protocolVersion"] == answered
        assert result["serverInfo"]["name"] == "nbstage"
        assert result["serverInfo"]["version"] == package_version("nbstage")
        assert "tools" in result["capabilities"]
        assert isinstance(result["instructions"], str)

        assert server.request("ping")["result"] == {}
        tools = server.request("tools/list")["result"]["tools"]
        assert {tool["name"] for tool in tools} == set(TOOLS_BY_NAME)

        code, took = exit_after(server, server.close_stdin)
        assert code == 0, server.stderr_tail()
        assert took < EXIT_BUDGET_SECS
    assert_stdout_is_only_json_rpc(server)


def test_a_line_that_is_not_json_gets_a_parse_error_and_the_server_carries_on(
    state_dir: Path,
) -> None:
    with raw_server(state_dir, {}, "--no-autostart", cwd=state_dir.parent) as server:
        for garbage in (b"this is not json", b'{"jsonrpc": "2.0", "id": 1,', b"\xff\xfe"):
            server.write(garbage)
            answer = server.read()
            assert answer["id"] is None
            assert answer["error"]["code"] == -32700
        server.write(b"[]")
        assert server.read()["error"]["code"] == -32600
        server.write(b"42")
        assert server.read()["error"]["code"] == -32600

        assert server.initialize()["result"]["protocolVersion"] == "2025-11-25"
        server.write(b"still not json")
        assert server.read()["error"]["code"] == -32700
        server.send({"jsonrpc": "2.0", "id": "after-garbage", "method": "ping"})
        assert server.read() == {"jsonrpc": "2.0", "id": "after-garbage", "result": {}}
        server.close_stdin()
        assert server.proc.wait(timeout=5) == 0
    assert_stdout_is_only_json_rpc(server)


def test_an_unknown_method_gets_method_not_found(state_dir: Path) -> None:
    with raw_server(state_dir, {}, "--no-autostart", cwd=state_dir.parent) as server:
        early = server.request("no/such/method")
        assert early["error"]["code"] == -32600, "the handshake comes first"
        server.initialize()
        for method in ("no/such/method", "resources/list", "prompts/list"):
            answer = server.request(method)
            assert answer["error"]["code"] == -32601, answer
            assert method in answer["error"]["message"]
        assert server.request("ping")["result"] == {}
        server.close_stdin()
        assert server.proc.wait(timeout=5) == 0
    assert_stdout_is_only_json_rpc(server)


# --- shutdown -----------------------------------------------------------------------------


def _open_a_notebook_with_output(server: RawServer) -> str:
    server.initialize()
    notebook_id = server.call("create_notebook")["structuredContent"]["notebook_id"]
    ran = server.call(
        "create_cell",
        {
            "source": "import sys\nprint('to stdout')\nprint('to stderr', file=sys.stderr)",
            "and_run": True,
        },
    )
    outputs = ran["structuredContent"]["execution"]["outputs"]
    assert [o["name"] for o in outputs] == ["stdout", "stderr"]
    return notebook_id


def _assert_daemon_unharmed(daemon: RunningDaemon, notebook_id: str, server_pid: int) -> None:
    assert daemon.request("identity")["pid"] == daemon.pid
    rooms = daemon.request("list_rooms")["rooms"]
    assert notebook_id in [room["notebook_id"] for room in rooms]
    wait_until(lambda: not processes_of_daemon(server_pid), 10, "the mcp actor processes to exit")


def test_stdin_eof_exits_zero_quickly_and_leaves_the_daemon_running(
    daemon: RunningDaemon, tmp_path: Path
) -> None:
    with raw_server(daemon.paths.root, daemon.env, cwd=tmp_path) as server:
        notebook_id = _open_a_notebook_with_output(server)
        code, took = exit_after(server, server.close_stdin)
        assert code == 0, server.stderr_tail()
        assert took < EXIT_BUDGET_SECS
        _assert_daemon_unharmed(daemon, notebook_id, server.proc.pid)
    assert_stdout_is_only_json_rpc(server)


def test_sigterm_exits_zero_and_leaves_the_daemon_running(
    daemon: RunningDaemon, tmp_path: Path
) -> None:
    with raw_server(daemon.paths.root, daemon.env, cwd=tmp_path) as server:
        notebook_id = _open_a_notebook_with_output(server)
        code, took = exit_after(server, lambda: server.proc.send_signal(signal.SIGTERM))
        _assert_daemon_unharmed(daemon, notebook_id, server.proc.pid)
        assert code == 0, f"SIGTERM gave exit status {code}"
        assert took < EXIT_BUDGET_SECS
    assert_stdout_is_only_json_rpc(server)


# --- request ids --------------------------------------------------------------------------


def test_ids_that_differ_only_in_type_get_a_reply_each(
    daemon: RunningDaemon, tmp_path: Path
) -> None:
    """JSON-RPC ids 7 and "7" are two requests, so two calls in flight get two replies."""
    with raw_server(daemon.paths.root, daemon.env, cwd=tmp_path) as server:
        server.initialize()
        for request_id in (7, "7"):
            server.send(
                {
                    "jsonrpc": "2.0",
                    "id": request_id,
                    "method": "tools/call",
                    "params": {"name": "get_cell", "arguments": {"cell_id": "c1"}},
                }
            )
        replies = [server.read(timeout=5)]
        replies.append(server.read(timeout=5))
        assert sorted(repr(r["id"]) for r in replies) == ["'7'", "7"], replies


def test_ids_that_differ_only_in_type_are_different_mutations(
    daemon: RunningDaemon, tmp_path: Path
) -> None:
    """A create_cell with id "9" after one with id 9 is a new cell, not a retry of the first."""
    with raw_server(daemon.paths.root, daemon.env, cwd=tmp_path) as server:
        server.initialize()
        server.call("create_notebook")
        created = []
        for request_id, source in ((9, "c"), ("9", "d")):
            answer = server.request(
                "tools/call",
                {"name": "create_cell", "arguments": {"source": source}},
                request_id=request_id,
            )
            created.append(answer["result"]["structuredContent"])
        assert created[0]["cell_id"] != created[1]["cell_id"], created
        sources = server.call("get_all_cells", {"format": "json"})["structuredContent"]["cells"]
        assert [cell["source"] for cell in sources] == ["c", "d"]


def test_tools_call_with_array_params_gets_an_error_reply(
    daemon: RunningDaemon, tmp_path: Path
) -> None:
    """JSON-RPC allows array params; tools/call needs an object, and must say so."""
    with raw_server(daemon.paths.root, daemon.env, cwd=tmp_path) as server:
        server.initialize()
        server.send({"jsonrpc": "2.0", "id": 50, "method": "tools/call", "params": ["get_cell"]})
        answer = server.reply(50, timeout=5)
        assert answer["error"]["code"] == -32602
        assert server.request("ping")["result"] == {}
