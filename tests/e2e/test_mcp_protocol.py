"""`nbstage mcp` on raw stdio: lines in, lines out (SPEC §3.4, §8, §12).

No SDK here: each test spawns the process with pipes and writes JSON-RPC lines
itself, so it can send what no well-behaved client would (old protocol versions,
lines that are not JSON, ids of odd types) and check every byte on stdout. A reader
thread puts stdout lines on a queue; every read has a timeout, so nothing can hang.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from importlib.metadata import version as package_version
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

from nbstage.entrypoints.mcp.mcp_edge import EOF_DRAIN_ENV
from nbstage.protocol.mcp.page_links import APP_ONLY_TOOLS
from nbstage.protocol.mcp.tools import TOOLS_BY_NAME
from tests.raw_mcp import RawMcpProcess
from tests.support import (
    NBSTAGE,
    RunningDaemon,
    run_cli,
    session_manager_pid,
    wait_edge_tree_gone,
)

pytestmark = pytest.mark.e2e

READ_TIMEOUT = 20.0
"""No single read waits longer than this."""

EXIT_DEADLINE_SECS = 60.0
"""How long a test waits for the process to exit by itself: a bound on failure, never a
budget. SPEC §8's 2 s is the edge's own (EOF_DRAIN_SECS and the stop margins); what these
tests prove is that the exit waits for nothing unbounded, and, where a drain is lengthened,
that it follows the answers rather than the drain's end."""

LEGACY_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")

ARRAY_PARAMS_CALL = {"jsonrpc": "2.0", "method": "tools/call", "params": ["get_cell"]}
"""JSON-RPC allows array params; tools/call takes an object."""


class RawServer(RawMcpProcess):
    """One ``nbstage mcp`` process on pipes, with JSON-RPC requests on top."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._ids = itertools.count(1)

    def next_id(self) -> int:
        return next(self._ids)

    # --- reading --------------------------------------------------------------------------

    def read(self, timeout: float = READ_TIMEOUT) -> dict[str, Any]:
        return self.next_message(timeout)

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

    def request(
        self, method: str, params: Any = None, request_id: int | str | None = None
    ) -> dict[str, Any]:
        """Send a request (with the next free id unless one is given) and wait for its reply."""
        request_id = self.next_id() if request_id is None else request_id
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


@contextmanager
def raw_server(
    state_dir: Path,
    env: dict[str, str],
    *extra: str,
    cwd: Path,
    command: tuple[str, ...] = tuple(NBSTAGE),
) -> Iterator[RawServer]:
    server = RawServer(state_dir, env, *extra, cwd=cwd, command=command)
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


def exit_after(server: RawServer, stop: Any) -> int | None:
    """Stop the server with ``stop()``; its return code, or None if it has not exited
    within EXIT_DEADLINE_SECS."""
    stop()
    try:
        return server.proc.wait(timeout=EXIT_DEADLINE_SECS)
    except subprocess.TimeoutExpired:
        return None


# --- where it starts -----------------------------------------------------------------------

SHADOW = "raise ImportError('a module of the project folder stood in for the standard one')\n"


def test_a_module_in_the_clients_folder_never_stands_in_for_a_standard_one(
    state_dir: Path, tmp_path: Path
) -> None:
    """An MCP client starts `nbstage mcp` (the console script) in the user's project, and
    a project may hold a `signal.py`. The edge, its session child and the daemon it
    autostarts each import `signal`, and each is a `python -m` started in that folder."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "signal.py").write_text(SHADOW)
    console = (str(Path(sys.executable).with_name("nbstage")),)
    try:
        with raw_server(state_dir, {}, cwd=project, command=console) as server:
            server.initialize()
            created = server.call("create_notebook")
            assert created["structuredContent"]["notebook_id"]
            listed = server.call("list_active_notebooks")
            assert len(listed["structuredContent"]["notebooks"]) == 1, listed
            assert "stood in" not in server.stderr_tail()
    finally:
        stopped = run_cli("daemon", "stop", state_dir=state_dir)
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr


# --- the handshake ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("requested", "answered"),
    [*((v, v) for v in LEGACY_VERSIONS), ("2030-01-01", "2025-11-25")],
)
def test_initialize_negotiates_the_protocol_version(
    state_dir: Path, requested: str, answered: str
) -> None:
    with raw_server(state_dir, {}, "--no-autostart", cwd=state_dir.parent) as server:
        result = server.initialize(requested)["result"]
        assert result["protocolVersion"] == answered
        assert result["serverInfo"]["name"] == "nbstage"
        assert result["serverInfo"]["version"] == package_version("nbstage")
        assert "tools" in result["capabilities"]
        assert isinstance(result["instructions"], str)

        assert server.request("ping")["result"] == {}
        tools = server.request("tools/list")["result"]["tools"]
        assert {tool["name"] for tool in tools} == set(TOOLS_BY_NAME) - APP_ONLY_TOOLS

        code = exit_after(server, server.close_stdin)
        assert code == 0, server.stderr_tail()
    assert_stdout_is_only_json_rpc(server)


def test_a_line_that_is_not_json_gets_a_parse_error_and_the_server_carries_on(
    state_dir: Path,
) -> None:
    with raw_server(state_dir, {}, "--no-autostart", cwd=state_dir.parent) as server:
        for garbage in (b"this is not json", b'{"jsonrpc": "2.0", "id": 1,', b"\xff\xfe"):
            server.write_line(garbage)
            answer = server.read()
            assert answer["id"] is None
            assert answer["error"]["code"] == -32700
        server.write_line(b"[]")
        assert server.read()["error"]["code"] == -32600
        server.write_line(b"42")
        assert server.read()["error"]["code"] == -32600

        assert server.initialize()["result"]["protocolVersion"] == "2025-11-25"
        server.write_line(b"still not json")
        assert server.read()["error"]["code"] == -32700
        server.send({"jsonrpc": "2.0", "id": "after-garbage", "method": "ping"})
        assert server.read() == {"jsonrpc": "2.0", "id": "after-garbage", "result": {}}
        server.close_stdin()
        assert server.proc.wait(timeout=EXIT_DEADLINE_SECS) == 0
    assert_stdout_is_only_json_rpc(server)


LINE_LIMIT = 64 * 1024 * 1024
"""The longest stdin line ``nbstage mcp`` reads; a longer one is answered and skipped."""

BLOCK = b"x" * (1024 * 1024)
"""What long lines are written from, a block at a time, so no test holds one whole."""


def _write_long_ping(server: RawServer, request_id: str, pad: int, then: bytes = b"") -> None:
    """A ping whose params pad it to over ``pad`` bytes, then ``then`` right behind its
    newline in the same write, so the next line may arrive in the same read."""
    assert server.proc.stdin is not None
    head = {"jsonrpc": "2.0", "id": request_id, "method": "ping", "params": {"pad": ""}}
    start, end = orjson.dumps(head).split(b'""')
    try:
        server.proc.stdin.write(start + b'"')
        for _ in range(-(-pad // len(BLOCK))):
            server.proc.stdin.write(BLOCK)
        server.proc.stdin.write(b'"' + end + b"\n" + then)
        server.proc.stdin.flush()
    except BrokenPipeError:
        code = server.proc.poll()
        message = f"nbstage mcp stopped reading (exit {code}): {server.stderr_tail()}"
        raise AssertionError(message) from None


def _peak_rss_kib(pid: int) -> int | None:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    return next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM:"))


def test_a_line_over_the_limit_gets_an_error_and_the_server_reads_on(state_dir: Path) -> None:
    with raw_server(state_dir, {}, "--no-autostart", cwd=state_dir.parent) as server:
        assert server.request("ping")["result"] == {}
        peak_before = _peak_rss_kib(server.proc.pid)

        after = orjson.dumps({"jsonrpc": "2.0", "id": "after-long-line", "method": "ping"})
        _write_long_ping(server, "too-long", LINE_LIMIT + 1, then=after + b"\n")
        refusal = server.read()
        assert refusal["id"] is None, "an unread line has no id to answer"
        assert refusal["error"]["code"] in (-32600, -32700), refusal
        assert "limit" in refusal["error"]["message"], refusal
        assert str(LINE_LIMIT) in refusal["error"]["message"], refusal
        assert server.read() == {"jsonrpc": "2.0", "id": "after-long-line", "result": {}}
        assert server.proc.poll() is None, "the server is still running"

        # Lines under the limit, however long, are still read whole.
        _write_long_ping(server, "long-but-legal", 3 * len(BLOCK))
        assert server.read() == {"jsonrpc": "2.0", "id": "long-but-legal", "result": {}}
        peak_after = _peak_rss_kib(server.proc.pid)
        if peak_before is not None and peak_after is not None:
            grown_mib = (peak_after - peak_before) / 1024
            assert grown_mib < 160, f"reading the long lines took {grown_mib:.0f} MiB"

        assert server.initialize()["result"]["protocolVersion"] == "2025-11-25"
        assert server.request("ping")["result"] == {}

        # An over-long last line with no newline is answered too; EOF then ends the server.
        assert server.proc.stdin is not None
        server.proc.stdin.write(b'{"jsonrpc":"2.0","id":"unterminated","method":"ping","x":"')
        for _ in range(LINE_LIMIT // len(BLOCK) + 1):
            server.proc.stdin.write(BLOCK)
        server.proc.stdin.flush()
        assert server.read()["id"] is None
        server.close_stdin()
        assert server.proc.wait(timeout=EXIT_DEADLINE_SECS) == 0, server.stderr_tail()
    assert_stdout_is_only_json_rpc(server)


def test_an_unknown_method_gets_method_not_found(state_dir: Path) -> None:
    with raw_server(state_dir, {}, "--no-autostart", cwd=state_dir.parent) as server:
        early = server.request("no/such/method")
        assert early["error"]["code"] == -32600, "the handshake comes first"
        server.initialize()
        for method in ("no/such/method", "completion/complete", "prompts/list"):
            answer = server.request(method)
            assert answer["error"]["code"] == -32601, answer
            assert method in answer["error"]["message"]
        assert server.request("ping")["result"] == {}
        server.close_stdin()
        assert server.proc.wait(timeout=EXIT_DEADLINE_SECS) == 0
    assert_stdout_is_only_json_rpc(server)


# --- shutdown -----------------------------------------------------------------------------


def _open_a_notebook_with_output(server: RawServer) -> str:
    server.initialize()
    notebook_id = server.call("create_notebook")["structuredContent"]["notebook_id"]
    ran = server.call(
        "create_cell",
        {
            "source": (
                "import sys\nprint('to stdout', flush=True)\nprint('to stderr', file=sys.stderr)"
            ),
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
    wait_edge_tree_gone(server_pid)


def test_stdin_eof_exits_zero_and_leaves_the_daemon_running(
    daemon: RunningDaemon, tmp_path: Path
) -> None:
    with raw_server(daemon.paths.root, daemon.env, cwd=tmp_path) as server:
        notebook_id = _open_a_notebook_with_output(server)
        code = exit_after(server, server.close_stdin)
        assert code == 0, server.stderr_tail()
        _assert_daemon_unharmed(daemon, notebook_id, server.proc.pid)
    assert_stdout_is_only_json_rpc(server)


LAST_CALL = {
    "jsonrpc": "2.0",
    "id": "last",
    "method": "tools/call",
    "params": {"name": "create_notebook", "arguments": {}},
}


def test_calls_written_just_before_stdin_ends_are_answered_before_the_exit(
    daemon: RunningDaemon, tmp_path: Path
) -> None:
    """A client may write its last requests and close stdin at once (`printf … | nbstage
    mcp`): what is in flight then is answered before the exit.

    The answer needs the session child, which the edge has only just started, and the
    daemon; on a busy machine that outlasts the 1.5 s drain (the next test decides that
    race on purpose). Here the drain is lengthened far past any answer, so the call
    succeeds at any speed, and an exit well inside it shows it follows the answer."""
    env = {**daemon.env, EOF_DRAIN_ENV: str(10 * EXIT_DEADLINE_SECS)}
    with raw_server(daemon.paths.root, env, cwd=tmp_path) as server:
        server.initialize()
        server.send(LAST_CALL)
        code = exit_after(server, server.close_stdin)
        assert code == 0, server.stderr_tail()
        answer = server.reply("last")
        assert answer["result"]["isError"] is False, answer
        assert answer["result"]["structuredContent"]["notebook_id"]
    assert_stdout_is_only_json_rpc(server)


def test_a_call_the_drain_outlasts_is_answered_with_an_error_before_the_exit(
    daemon: RunningDaemon, tmp_path: Path
) -> None:
    """The race the test above avoids, decided the other way every time: the session
    child is stopped (SIGSTOP) with the call in flight, so the drain (1.5 s) ends before
    any answer. The call is still answered, with an error saying it may or may not have
    taken effect, and the edge exits 0 without waiting for it. (Before, the supervisor
    forgot it and the edge exited 0 with no answer at all.)"""
    with raw_server(daemon.paths.root, daemon.env, cwd=tmp_path) as server:
        server.initialize()
        server.call("list_active_notebooks")
        child = session_manager_pid(daemon, "raw")
        os.kill(child, signal.SIGSTOP)
        try:
            server.send(LAST_CALL)
            code = exit_after(server, server.close_stdin)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.kill(child, signal.SIGCONT)
        assert code == 0, server.stderr_tail()
        answer = server.reply("last")
        assert answer["result"]["isError"] is True, answer
        said = answer["result"]["content"][0]["text"]
        assert "stopped before this call finished" in said, said
        assert "may or may not have taken effect" in said, said
        assert daemon.request("identity")["pid"] == daemon.pid
        wait_edge_tree_gone(server.proc.pid)
    assert_stdout_is_only_json_rpc(server)


def test_sigterm_exits_zero_and_leaves_the_daemon_running(
    daemon: RunningDaemon, tmp_path: Path
) -> None:
    with raw_server(daemon.paths.root, daemon.env, cwd=tmp_path) as server:
        notebook_id = _open_a_notebook_with_output(server)
        code = exit_after(server, lambda: server.proc.send_signal(signal.SIGTERM))
        _assert_daemon_unharmed(daemon, notebook_id, server.proc.pid)
        assert code == 0, f"SIGTERM gave exit status {code}"
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
        replies = [server.read()]
        replies.append(server.read())
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
        server.send({**ARRAY_PARAMS_CALL, "id": 50})
        answer = server.reply(50)
        assert answer["error"]["code"] == -32602
        assert server.request("ping")["result"] == {}


# --- generated input ----------------------------------------------------------------------

FUZZ = settings(
    max_examples=100,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    # No shrinking: a missing reply costs FUZZ_REPLY_SECS per attempt, and the
    # deterministic tests above already pin each failure found so far to a minimal case.
    phases=[Phase.explicit, Phase.generate],
    print_blob=False,
)

FUZZ_REPLY_SECS = 15.0
"""How long one example may take to get every reply it is owed."""

INT64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)
JSON_LEAVES = (
    st.none()
    | st.booleans()
    | INT64
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
)
JSON_VALUES = st.recursive(
    JSON_LEAVES,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=10,
)
HARMLESS_SOURCES = st.sampled_from(
    ["1 + 1", "print('fuzz')", "x = 3", "raise ValueError('fuzz')", "", "import sys"]
) | st.text(max_size=30).map(lambda text: "# " + " ".join(text.splitlines()))
SAFE_NAMES = st.from_regex(r"[a-z][a-z0-9]{0,7}(\.ipynb)?", fullmatch=True)
METHODS = st.sampled_from(
    [
        "ping",
        "tools/list",
        "tools/call",
        "initialize",
        "server/discover",
        "resources/list",
        "prompts/get",
        "notifications/initialized",
        "notifications/progress",
    ]
) | st.text(max_size=12)
TOOL_NAMES = sorted(TOOLS_BY_NAME)


def _valid_value(name: str, schema: dict[str, Any], cell_ids: list[str]) -> Any:
    """A strategy for a well-typed value of one argument, aimed so nothing runs for long."""
    arms = schema.get("anyOf", [schema])
    (kind,) = [arm["type"] for arm in arms if arm["type"] != "null"]
    if name in ("cell_id", "after_cell_id"):
        return st.sampled_from(cell_ids) | st.text(max_size=10)
    if name == "source":
        return HARMLESS_SOURCES
    if name in ("path", "working_dir"):
        return SAFE_NAMES
    if name == "runtime":
        # Never a real kernelspec: a generated notebook must not start a kernel.
        return st.text(max_size=8).map(lambda text: "no-such-kernel-" + text)
    if name == "format":
        return st.sampled_from(["summary", "json", "rich"]) | st.text(max_size=6)
    if kind == "integer":
        return st.integers(-3, 12) | INT64
    if kind == "number":
        return st.floats(-1, 1.5) | st.integers(-1, 2)
    if kind == "boolean":
        return st.booleans()
    return st.text(max_size=16)


@st.composite
def tool_arguments(draw: Any, tool: str, cell_ids: list[str]) -> Any:
    """Arguments for ``tool``: mostly well-typed, sometimes wrong, sometimes unknown."""
    schema = TOOLS_BY_NAME[tool].to_mcp()["inputSchema"]
    if draw(st.integers(0, 9)) == 0:
        return draw(JSON_VALUES)
    arguments: dict[str, Any] = {}
    for name, prop in schema["properties"].items():
        if tool == "create_notebook" and name == "runtime":
            arguments[name] = draw(_valid_value(name, prop, cell_ids))
            continue
        choice = draw(st.sampled_from(["skip", "valid", "valid", "wrong"]))
        if choice == "valid":
            arguments[name] = draw(_valid_value(name, prop, cell_ids))
        elif choice == "wrong":
            arguments[name] = draw(JSON_VALUES)
    if draw(st.integers(0, 5)) == 0:
        arguments[draw(st.text(min_size=1, max_size=8))] = draw(JSON_VALUES)
    return arguments


@st.composite
def fuzz_line(draw: Any, cell_ids: list[str]) -> tuple[str, Any]:
    """One line to write: ("bytes", raw) or ("message", object with an "id" placeholder).

    A message's "id" may be the placeholder "FRESH" (replaced by a unique id when the line
    is written), a value of a type no id may have, or absent.
    """
    kind = draw(st.sampled_from(["bytes", "value", "message", "tool", "tool"]))
    if kind == "bytes":
        return "bytes", draw(st.binary(max_size=40).filter(lambda b: b"\n" not in b))
    if kind == "value":
        value = draw(JSON_VALUES)
        if isinstance(value, dict):
            value.pop("id", None)
        return "message", value
    message: dict[str, Any] = {}
    if kind == "tool":
        tool = draw(st.sampled_from(TOOL_NAMES) | st.text(max_size=10))
        params: dict[str, Any] = {"name": tool}
        if tool in TOOLS_BY_NAME:
            params["arguments"] = draw(tool_arguments(tool, cell_ids))
        message = {"jsonrpc": "2.0", "id": "FRESH", "method": "tools/call", "params": params}
        return "message", message
    jsonrpc = draw(st.sampled_from(["2.0", "2.0", "2.0", "1.0", None]))
    if jsonrpc is not None:
        message["jsonrpc"] = jsonrpc
    message["method"] = draw(METHODS | JSON_LEAVES)
    params_choice = draw(st.sampled_from(["none", "object", "array", "other"]))
    if params_choice == "object":
        message["params"] = draw(st.dictionaries(st.text(max_size=8), JSON_VALUES, max_size=3))
    elif params_choice == "array":
        message["params"] = draw(st.lists(JSON_VALUES, max_size=3))
    elif params_choice == "other":
        message["params"] = draw(JSON_LEAVES)
    id_choice = draw(st.sampled_from(["fresh", "fresh", "absent", "bad"]))
    if id_choice == "fresh":
        message["id"] = "FRESH"
    elif id_choice == "bad":
        message["id"] = draw(st.none() | st.booleans() | st.floats() | st.lists(INT64, max_size=2))
    if draw(st.integers(0, 7)) == 0:
        message["result"] = draw(JSON_VALUES)
    return "message", message


def _is_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def expected_reply(line: bytes) -> str:
    """What JSON-RPC 2.0 owes a line: "one" reply, "none", or "error" (an error reply)."""
    if not line.strip():
        return "none"
    try:
        message = orjson.loads(line)
    except orjson.JSONDecodeError:
        return "error"
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return "error"
    if "method" in message:
        well_formed = (
            isinstance(message["method"], str)
            and "result" not in message
            and "error" not in message
            and ("params" not in message or isinstance(message["params"], dict | list))
        )
        if not well_formed:
            return "error"
        if "id" not in message:
            return "none"
        return "one" if _is_id(message["id"]) else "error"
    if "result" in message and "error" not in message and _is_id(message.get("id")):
        return "none"
    return "error"


def test_generated_lines_each_get_the_reply_they_are_owed(
    daemon: RunningDaemon, tmp_path: Path
) -> None:
    """Random JSON values, random messages and random tool calls on one running server.

    Every request gets exactly one reply with its id; a line that is not a valid message
    gets at most one error reply (exactly one when it is not JSON or not an object);
    notifications and responses get none. Afterwards a plain tools/call still works.
    """
    with raw_server(daemon.paths.root, daemon.env, cwd=tmp_path) as server:
        server.initialize()
        notebook_id = server.call("create_notebook")["structuredContent"]["notebook_id"]
        warm = server.call("create_cell", {"source": "x = 1", "and_run": True})
        assert warm["structuredContent"]["execution"]["status"] == "done"
        cell_ids = [warm["structuredContent"]["cell_id"]] + [
            server.call("create_cell", {"source": source})["structuredContent"]["cell_id"]
            for source in ("print(x)", "# notes")
        ]
        fresh_ids = itertools.count(1_000_000)
        seen: set[str] = set()

        def fresh() -> int | str:
            n = next(fresh_ids)
            return n if n % 2 else f"fuzz-{n}"

        @FUZZ
        @given(lines=st.lists(fuzz_line(cell_ids), min_size=1, max_size=6))
        # Found by this test; generated only now and then, so pinned here.
        @example(lines=[("message", {**ARRAY_PARAMS_CALL, "id": "FRESH"})])
        def check(lines: list[tuple[str, Any]]) -> None:
            # Start every example in the notebook: a generated call may have left it.
            server.call("connect_notebook", {"notebook_id": notebook_id})

            owed: dict[str, str] = {}
            must_have_null_errors = 0
            may_have_null_errors = 0
            for kind, payload in lines:
                if kind == "bytes":
                    line = payload
                else:
                    if isinstance(payload, dict) and payload.get("id") == "FRESH":
                        payload = {**payload, "id": fresh()}
                    line = orjson.dumps(payload)
                expectation = expected_reply(line)
                message = payload if kind == "message" else None
                has_id = isinstance(message, dict) and _is_id(message.get("id"))
                if expectation == "one" or (expectation == "error" and has_id):
                    owed[repr(message["id"])] = expectation
                elif expectation == "error":
                    may_have_null_errors += 1
                    if kind == "bytes" or not isinstance(message, dict):
                        must_have_null_errors += 1
                server.write_line(line)
            sentinel = fresh()
            server.send({"jsonrpc": "2.0", "id": sentinel, "method": "ping"})

            replies: dict[str, dict[str, Any]] = {}
            null_errors = 0
            required = {key for key, why in owed.items() if why == "one"} | {repr(sentinel)}
            deadline = time.monotonic() + FUZZ_REPLY_SECS
            while not required <= replies.keys():
                message = server.read(max(0.1, deadline - time.monotonic()))
                if "method" in message:
                    server.notifications.append(message)
                    continue
                key = repr(message.get("id"))
                if message.get("id") is None:
                    assert "error" in message, message
                    null_errors += 1
                    continue
                assert key in owed or key == repr(sentinel), f"unasked-for reply {message}"
                assert key not in replies, f"second reply to {key}: {message}"
                assert key not in seen, f"a reply to an earlier example's {key}: {message}"
                replies[key] = message
                if owed.get(key) == "error":
                    assert "error" in message, message
            seen.update(replies)
            assert must_have_null_errors <= null_errors <= may_have_null_errors, (
                null_errors,
                lines,
            )

        check()

        # Late or doubled replies from the last example would show up here.
        server.send({"jsonrpc": "2.0", "id": "final-ping", "method": "ping"})
        assert server.reply("final-ping")["result"] == {}
        server.call("connect_notebook", {"notebook_id": notebook_id})
        # The generated calls ended the kernel once in a full run (not reproduced since;
        # an interrupt landing as ipykernel leaves a cell is the suspect). The server
        # must then say so, and a restart must bring it back.
        cell_id = server.call("create_cell", {"source": "40 + 2"})["structuredContent"]["cell_id"]
        run = {"name": "execute_cell", "arguments": {"cell_id": cell_id}}
        ran = server.request("tools/call", run)["result"]
        if ran["isError"]:
            assert ran["structuredContent"]["code"] == "kernel_died", ran
            server.call("restart_kernel")
            ran = server.call("execute_cell", {"cell_id": cell_id})
        execution = ran["structuredContent"]["execution"]
        assert execution["status"] == "done"
        assert execution["outputs"] == [{"output_type": "execute_result", "text": "42"}]
    assert_stdout_is_only_json_rpc(server)
