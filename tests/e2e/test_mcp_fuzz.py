"""Generated lines on one real `nbstage mcp`'s stdin, read back raw (SPEC §3.4, §12; issue 13).

One ``nbstage mcp`` process, against one real daemon, serves the whole module. It is
initialized once (protocol 2025-11-25); then every example writes a few generated lines
in one go, followed by a ``ping`` sentinel, and reads stdout until each line has been
answered as the protocol requires and the sentinel has come back:

- a line that is not JSON (invalid UTF-8 and raw control bytes included): -32700, id null;
- JSON that is not an object, a batch (array), or an id that is neither a string nor an
  integer (floats, objects, booleans, null, integers past 64 bits): -32600, id null;
- a wrong ``jsonrpc``, a bad ``method`` or ``params``, a message that is both a request
  and a response, a second ``initialize``, the 2026-07-28 ``_meta`` envelope on this
  legacy connection: -32600 with the request's id;
- an unknown method, and a notification's method sent with an id: -32601 with its id;
- ``tools/call`` without an object ``params``, without a known tool ``name``, or with a
  malformed ``_meta``: -32602 with its id;
- ``tools/call`` of a real tool with arguments it cannot take (wrong types, unknown
  names, missing required ones, NUL bytes in paths, deep nesting, huge strings): a result
  with ``isError: true`` saying "Invalid arguments for <tool>";
- well-formed requests: their result; notifications and client responses: nothing.

Every id the fuzz sends is unique (a drawn id that was used before gets a suffix), since
tool calls are keyed by id. Nothing else may appear on stdout but server notifications.
After the fuzz the same process runs a normal workflow, the daemon answers ``status``, and
closing stdin ends the process with nothing of it left.

Reproducible: the property has a fixed ``@seed`` and no example database, so every run
sends the same lines. There is no shrinking phase: each step would cost round trips to the
shared process, so a failure is reported as generated, with the lines still unanswered. The
module counts the generated lines it writes; a test after the fuzz requires at least 2,000.
"""

from __future__ import annotations

import enum
import itertools
import tempfile
import time
import types
import typing
from collections import Counter
from collections.abc import Iterator
from dataclasses import MISSING, dataclass, fields
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

from nbstage.protocol.mcp.page_links import APP_ONLY_TOOLS
from nbstage.protocol.mcp.tools import TOOLS_BY_NAME
from tests.conftest import daemon_of_a_module
from tests.raw_mcp import RawMcpProcess
from tests.support import RunningDaemon, wait_edge_tree_gone

pytestmark = pytest.mark.e2e

READ_TIMEOUT = 30.0
"""No read of stdout waits longer than this; a line never answered fails the example."""

MIN_GENERATED_LINES = 2000
EXAMPLES = 650

ANSWERED_DEPTH = 1021
UNPARSED_DEPTH = 1022
"""Arguments nested up to ANSWERED_DEPTH deep get their "Invalid arguments" result (past
64 levels the supervisor refuses them before the session child), and a line nested past
orjson's parse limit (1024 levels in all) gets -32700."""

FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    phases=[Phase.explicit, Phase.generate],
    # The only function-scoped fixture is the autouse one that points Jupyter's dirs at a
    # temp dir; sharing it across examples is harmless.
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

SERVER_NOTIFICATIONS = {
    "notifications/tools/list_changed",
    "notifications/progress",
    "notifications/message",
}
LIFECYCLE_METHODS = {"initialize", "ping", "server/discover", "tools/list", "tools/call"}
ENVELOPE_KEY = "io.modelcontextprotocol/protocolVersion"

PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS = -32700, -32600, -32601, -32602

fed = Counter()
"""Generated lines written to the server, by kind."""


# --- the server on raw pipes --------------------------------------------------------------


class StdioServer(RawMcpProcess):
    """``nbstage mcp`` on pipes, against a running daemon (it never autostarts one)."""

    def __init__(self, daemon: RunningDaemon, cwd: Path) -> None:
        super().__init__(daemon.paths.root, daemon.env, "--no-autostart", cwd=cwd)

    def read(self, deadline: float) -> dict[str, Any]:
        """The next message that is not a server notification; fails on timeout or EOF."""
        while True:
            message = self.next_message(deadline - time.monotonic())
            assert isinstance(message, dict), str(message)[:300]
            assert message.get("jsonrpc") == "2.0", str(message)[:300]
            if "method" in message:
                assert message["method"] in SERVER_NOTIFICATIONS, message
                assert "id" not in message, message
                self.notifications.append(message)
                continue
            return message

    def request(self, request_id: str, method: str, params: Any = None) -> dict[str, Any]:
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        answer = self.read(time.monotonic() + READ_TIMEOUT)
        assert answer.get("id") == request_id, answer
        return answer


@pytest.fixture(scope="module")
def fuzz_daemon() -> Iterator[RunningDaemon]:
    with daemon_of_a_module() as daemon:
        yield daemon


@pytest.fixture(scope="module")
def server(fuzz_daemon: RunningDaemon) -> Iterator[StdioServer]:
    with tempfile.TemporaryDirectory(prefix="nbs-cwd-") as cwd:
        running = StdioServer(fuzz_daemon, Path(cwd))
        try:
            params = {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "fuzz", "title": "fuzz", "version": "1"},
            }
            answer = running.request("init", "initialize", params)
            assert answer["result"]["protocolVersion"] == "2025-11-25", answer
            running.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            yield running
        finally:
            running.stop()


# --- what a line must get -------------------------------------------------------------------


@dataclass(frozen=True)
class Expect:
    """The one answer a line must get: ``silent`` (none), ``null_error`` (that code, id null),
    ``error`` (that code, the line's id) or ``result`` (checked by ``check``)."""

    answer: str
    code: int | None = None
    check: str | None = None
    tool: str | None = None


SILENT = Expect("silent")


@dataclass(frozen=True)
class Template:
    """A generated line. In ``message`` (or between the ``@ID@`` marks of ``raw``) the id
    is a drawn shape; ``render`` swaps in a unique id of the same type."""

    kind: str
    expect: Expect
    message: Any = None
    raw: bytes | None = None
    drawn_id: Any = None
    nested_ids: tuple[int, ...] = ()
    """Indexes of the batch items whose ids ``render`` makes unique too."""


class Ids:
    """Ids for the lines of the whole module, each used once."""

    def __init__(self) -> None:
        self.used: set[tuple[type, Any]] = set()
        self.serial = itertools.count(1)

    def fresh(self, drawn: Any) -> Any:
        if (type(drawn), drawn) not in self.used:
            self.used.add((type(drawn), drawn))
            return drawn
        while True:
            n = next(self.serial)
            candidate = (
                f"{drawn}~{n}" if isinstance(drawn, str) else 2**62 + n if drawn >= 0 else -n
            )
            if (type(candidate), candidate) not in self.used:
                self.used.add((type(candidate), candidate))
                return candidate


IDS = Ids()


def render(template: Template) -> tuple[bytes, Expect, Any]:
    """The line's bytes (no newline), what it must get, and the id it was sent with."""
    if template.raw is not None:
        request_id = None if template.drawn_id is None else IDS.fresh(template.drawn_id)
        data = template.raw
        if request_id is not None:
            data = data.replace(b"@ID@", orjson.dumps(request_id))
        return data, template.expect, request_id
    message = template.message
    request_id = None
    if template.drawn_id is not None:
        request_id = IDS.fresh(template.drawn_id)
        message = {**message, "id": request_id}
    if template.nested_ids:
        message = [
            {**item, "id": IDS.fresh(item["id"])} if i in template.nested_ids else item
            for i, item in enumerate(message)
        ]
    if template.kind == "cancel":
        params = {**message["params"], "requestId": IDS.fresh(message["params"]["requestId"])}
        message = {**message, "params": params}
    return orjson.dumps(message), template.expect, request_id


# --- strategies ------------------------------------------------------------------------------


INT64 = st.integers(min_value=-(2**63), max_value=2**64 - 1)
json_scalars = st.none() | st.booleans() | INT64 | st.floats(allow_nan=False, allow_infinity=False)
json_values = st.recursive(
    json_scalars | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)
objects_without_meta = st.dictionaries(
    st.text(max_size=8).filter(lambda key: key != "_meta"), json_values, max_size=4
)
huge_strings = st.builds(
    lambda char, size: char * size,
    st.sampled_from(["x", "é", "\0", "😀", "\\", '"', "\n"]),
    st.integers(min_value=10_000, max_value=150_000),
)
request_ids = st.one_of(INT64, st.integers(-3, 1000), st.text(max_size=20), huge_strings)
bad_ids = (
    st.floats(allow_nan=False, allow_infinity=False)
    | st.booleans()
    | st.none()
    | st.lists(json_values, max_size=3)
    | st.dictionaries(st.text(max_size=5), json_values, max_size=3)
)
out_of_range_ints = st.integers(min_value=2**64, max_value=2**80) | st.integers(
    min_value=-(2**80), max_value=-(2**63) - 1
)


def _not_json(data: bytes) -> bool:
    try:
        orjson.loads(data)
    except orjson.JSONDecodeError:
        return True
    return False


def _blank(data: bytes) -> bool:
    return not data or data.isspace()


no_newline = st.binary(max_size=200).map(lambda data: data.replace(b"\n", b""))
garbage = (
    no_newline
    | st.text(max_size=80).map(lambda text: text.replace("\n", "").encode())
    | json_values.map(lambda value: orjson.dumps(value)[:-1])
).filter(lambda data: not _blank(data) and _not_json(data))


def _request(method: str, params: Any = None, **extra: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    return {**message, **extra}


@st.composite
def not_json_lines(draw: st.DrawFn) -> Template:
    return Template("not json", Expect("null_error", PARSE_ERROR), raw=draw(garbage))


@st.composite
def invalid_utf8_lines(draw: st.DrawFn) -> Template:
    """A request otherwise well formed whose string holds bytes that are not UTF-8, or a raw
    control character (a NUL among them), which JSON strings may not hold unescaped."""
    bad = draw(
        st.sampled_from([b"\xff", b"\xfe\xfe", b"\xc3(", b"\xed\xa0\x80", b"\x80", b"\0", b"\x01"])
    )
    where = draw(st.sampled_from(["method", "cell_id", "name"]))
    head = b'{"jsonrpc":"2.0","id":@ID@,'
    if where == "method":
        body = b'"method":"pi' + bad + b'ng"}'
    else:
        value = b'"c' + bad + b'1"'
        name = value if where == "name" else b'"get_cell"'
        cell = value if where == "cell_id" else b'"c1"'
        body = b'"method":"tools/call","params":{"name":%s,"arguments":{"cell_id":%s}}}' % (
            name,
            cell,
        )
    return Template(
        "invalid utf-8",
        Expect("null_error", PARSE_ERROR),
        raw=head + body,
        drawn_id=draw(request_ids),
    )


blank_lines = st.sampled_from([b"", b" ", b"\t", b"\r", b" \x0b\x0c "]).map(
    lambda raw: Template("blank", SILENT, raw=raw)
)

not_objects = json_values.filter(lambda value: not isinstance(value, dict | list)).map(
    lambda value: Template("not an object", Expect("null_error", INVALID_REQUEST), message=value)
)


@st.composite
def batches(draw: st.DrawFn) -> Template:
    """A JSON-RPC batch: refused whole, so not even its well-formed requests are answered."""
    requests = st.builds(
        lambda i, m: _request(m, id=i), request_ids, st.sampled_from(["ping", "tools/list"])
    )
    items = draw(st.lists(st.tuples(st.booleans(), requests, json_values), max_size=4))
    message = [request if is_request else value for is_request, request, value in items]
    nested = tuple(i for i, (is_request, _, _) in enumerate(items) if is_request)
    return Template(
        "batch", Expect("null_error", INVALID_REQUEST), message=message, nested_ids=nested
    )


@st.composite
def wrong_versions(draw: st.DrawFn) -> Template:
    message = _request(draw(st.sampled_from(["ping", "tools/list", "tools/call", "no/such"])))
    version = draw(
        st.sampled_from(["1.0", "2", "2.0 ", "", 2.0, 2, None])
        | json_values.filter(lambda v: v != "2.0")
    )
    if draw(st.booleans()):
        message["jsonrpc"] = version
    else:
        del message["jsonrpc"]
    return Template(
        "wrong jsonrpc", Expect("error", INVALID_REQUEST), message, drawn_id=draw(request_ids)
    )


@st.composite
def bad_id_lines(draw: st.DrawFn) -> Template:
    method = draw(st.sampled_from(["ping", "tools/list", "tools/call", "initialize", "no/such"]))
    if draw(st.integers(0, 3)) == 0:
        number = str(draw(out_of_range_ints)).encode()
        raw = b'{"jsonrpc":"2.0","id":%s,"method":"%s"}' % (number, method.encode())
        return Template("bad id", Expect("null_error", INVALID_REQUEST), raw=raw)
    if draw(st.booleans()):
        message = _request(method, id=draw(bad_ids))
    else:
        message = {
            "jsonrpc": "2.0",
            "id": draw(bad_ids.filter(lambda v: v is not None)),
            "result": {},
        }
    return Template("bad id", Expect("null_error", INVALID_REQUEST), message=message)


methods = st.text(max_size=30).filter(lambda m: m not in LIFECYCLE_METHODS)


@st.composite
def unknown_methods(draw: st.DrawFn) -> Template:
    method = draw(
        methods
        | st.sampled_from(
            [
                "notifications/initialized",
                "notifications/cancelled",
                "completion/complete",
                "prompts/get",
                "server/discover",
                "tools/List",
                "",
            ]
        )
    )
    params = draw(st.none() | objects_without_meta | st.lists(json_values, max_size=3))
    return Template(
        "unknown method",
        Expect("error", METHOD_NOT_FOUND),
        _request(method, params),
        drawn_id=draw(request_ids),
    )


@st.composite
def malformed_requests(draw: st.DrawFn) -> Template:
    """Requests with a readable id that JSON-RPC or the lifecycle refuses (-32600)."""
    shape = draw(st.sampled_from(["params", "method", "both", "initialize", "envelope"]))
    method = draw(st.sampled_from(["ping", "tools/list", "tools/call", "no/such"]))
    if shape == "params":
        message = {**_request(method), "params": draw(json_scalars | st.text(max_size=10))}
    elif shape == "method":
        message = {
            "jsonrpc": "2.0",
            "method": draw(json_values.filter(lambda v: not isinstance(v, str))),
        }
    elif shape == "both":
        message = {
            **_request(method),
            draw(st.sampled_from(["result", "error"])): draw(json_values),
        }
    elif shape == "initialize":
        params = {"protocolVersion": draw(st.sampled_from(["2025-11-25", "2024-11-05", "1999"]))}
        message = _request("initialize", {**params, "capabilities": {}})
    else:
        meta = {
            ENVELOPE_KEY: draw(st.sampled_from(["2026-07-28", "2025-11-25"])),
            **draw(objects_without_meta),
        }
        message = _request(method, {"name": "list_active_notebooks", "_meta": meta})
    return Template(
        "malformed request", Expect("error", INVALID_REQUEST), message, drawn_id=draw(request_ids)
    )


@st.composite
def notifications(draw: st.DrawFn) -> Template:
    shape = draw(st.sampled_from(["plain", "cancel", "bad params", "bad method"]))
    if shape == "cancel":
        params = {"requestId": draw(request_ids), "reason": draw(st.text(max_size=20))}
        return Template("cancel", SILENT, _request("notifications/cancelled", params))
    method = draw(
        methods | st.sampled_from(["notifications/initialized", "notifications/progress"])
    )
    if shape == "plain":
        params = draw(st.none() | objects_without_meta | st.lists(json_values, max_size=3))
        return Template("notification", SILENT, _request(method, params))
    if shape == "bad params":
        message = {**_request(method), "params": draw(json_scalars | st.text(max_size=10))}
    else:
        message = {
            "jsonrpc": "2.0",
            "method": draw(json_values.filter(lambda v: not isinstance(v, str))),
        }
    return Template("bad notification", Expect("null_error", INVALID_REQUEST), message)


@st.composite
def client_responses(draw: st.DrawFn) -> Template:
    """Responses from the client: the server sent no request, so it answers none, unless
    the response is itself malformed."""
    shape = draw(st.sampled_from(["result", "error", "bad error", "both"]))
    if shape == "result":
        return Template(
            "response",
            SILENT,
            {"jsonrpc": "2.0", "result": draw(json_values)},
            drawn_id=draw(request_ids),
        )
    if shape == "error":
        error = {"code": draw(INT64), "message": draw(st.text(max_size=20))}
        return Template(
            "response", SILENT, {"jsonrpc": "2.0", "error": error}, drawn_id=draw(request_ids)
        )
    if shape == "bad error":
        error = draw(
            json_values.filter(
                lambda v: (
                    not (
                        isinstance(v, dict)
                        and type(v.get("code")) is int
                        and isinstance(v.get("message"), str)
                    )
                )
            )
        )
        message = {"jsonrpc": "2.0", "error": error}
    else:
        message = {
            "jsonrpc": "2.0",
            "result": draw(json_values),
            "error": {"code": 1, "message": "x"},
        }
    return Template(
        "bad response", Expect("error", INVALID_REQUEST), message, drawn_id=draw(request_ids)
    )


FUZZED_TOOLS = sorted(name for name in TOOLS_BY_NAME if name not in {"reconnect", *APP_ONLY_TOOLS})
"""``reconnect`` restarts the session server when its arguments are right, so the fuzz
leaves it out; its bad arguments have a test of their own below. The MCP App's own tool
is not there for this client (it declares no extension)."""

SAFE_WHEN_VALID = sorted(
    name
    for name in FUZZED_TOOLS
    if name not in ("create_notebook", "connect_notebook", "save_notebook", "list_active_notebooks")
)
"""Tools that, given arguments they take, only report that no notebook is active."""


def _hints(name: str) -> dict[str, Any]:
    return typing.get_type_hints(TOOLS_BY_NAME[name].args)


def _arms(hint: Any) -> tuple[Any, ...]:
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return typing.get_args(hint)
    return (hint,)


def _accepts(hint: Any, value: Any) -> bool:
    """Whether a tool argument annotated ``hint`` takes ``value``."""
    for arm in _arms(hint):
        if arm is type(None) and value is None:
            return True
        if isinstance(arm, type) and issubclass(arm, enum.Enum):
            if value in [member.value for member in arm]:
                return True
            continue
        if typing.get_origin(arm) is list and isinstance(value, list):
            (item,) = typing.get_args(arm)
            if all(_accepts(item, one) for one in value):
                return True
        if arm is str and isinstance(value, str):
            return True
        if arm is bool and isinstance(value, bool):
            return True
        if arm is int and type(value) is int:
            return True
        if arm is float and type(value) in (int, float):
            return True
    return False


def _required(name: str) -> list[str]:
    return [
        f.name
        for f in fields(TOOLS_BY_NAME[name].args)
        if f.default is MISSING and f.default_factory is MISSING
    ]


def _valid_value(hint: Any) -> st.SearchStrategy[Any]:
    arms = [arm for arm in _arms(hint) if arm is not type(None)]
    base: st.SearchStrategy[Any]
    if arms == [str]:
        base = st.text(max_size=20) | huge_strings
    elif arms == [bool]:
        base = st.booleans()
    elif arms == [int]:
        base = st.integers(min_value=-5, max_value=50)
    elif arms == [float]:
        base = st.floats(min_value=0.0, max_value=0.5)
    elif typing.get_origin(arms[0]) is list:
        base = st.lists(st.text(max_size=20), max_size=3)
    else:
        base = st.sampled_from([member.value for member in arms[0]])
    return st.none() | base if len(arms) < len(_arms(hint)) else base


def _nested(depth: int, leaf: Any) -> bytes:
    """JSON nested ``depth`` deep, written out by hand: orjson.dumps stops at 254 levels."""
    opens = b"".join(b"[" if i % 2 else b'{"k":' for i in range(depth))
    closes = b"".join(b"]" if i % 2 else b"}" for i in reversed(range(depth)))
    return opens + orjson.dumps(leaf) + closes


@dataclass(frozen=True)
class Deep:
    depth: int
    leaf: Any


@st.composite
def bad_arguments(draw: st.DrawFn) -> tuple[str, Any, str]:
    """A real tool and arguments it must refuse, with how they are wrong."""
    name = draw(st.sampled_from(FUZZED_TOOLS))
    hints = _hints(name)
    shape = draw(
        st.sampled_from(
            ["not an object", "unknown", "wrong type", "missing", "path", "deep", "huge"]
        )
    )
    required = _required(name)
    if shape == "missing" and not required:
        shape = "unknown"
    if shape in ("wrong type", "deep", "huge") and not hints:
        shape = "not an object"
    if shape == "path" and not {"path", "working_dir"} & set(hints):
        shape = "unknown"
    base = {field_name: "c1" for field_name in required}
    if shape == "not an object":
        return (
            name,
            draw(json_values.filter(lambda v: v is not None and not isinstance(v, dict))),
            shape,
        )
    if shape == "unknown":
        extra = draw(st.text(max_size=12).filter(lambda key: key not in hints))
        return name, {**base, extra: draw(json_values)}, shape
    if shape == "missing":
        return name, {}, shape
    if shape == "path":
        where = draw(st.sampled_from(sorted({"path", "working_dir"} & set(hints))))
        path = draw(
            st.text(max_size=10).map(lambda t: f"{t}\0.ipynb")
            | st.integers(4096, 20_000).map(lambda n: "p" * n)
        )
        return name, {**base, where: path}, shape
    field_name = draw(st.sampled_from(sorted(hints)))
    if shape == "deep":
        depth = draw(st.integers(1, ANSWERED_DEPTH) | st.integers(UNPARSED_DEPTH, 1100))
        value = Deep(depth, draw(json_scalars))
    elif shape == "huge":
        value = draw(huge_strings | st.builds(lambda s: [s], huge_strings))
        if _accepts(hints[field_name], value):
            value = {"huge": value}
    else:
        value = draw(json_values.filter(lambda v: not _accepts(hints[field_name], v)))
    return name, {**base, field_name: value}, shape


@st.composite
def tool_calls_with_bad_arguments(draw: st.DrawFn) -> Template:
    name, arguments, shape = draw(bad_arguments())
    request_id = draw(request_ids)
    expect = Expect("result", check="invalid arguments", tool=name)
    deep = [
        (key, value)
        for key, value in (arguments.items() if isinstance(arguments, dict) else ())
        if isinstance(value, Deep)
    ]
    if not deep:
        message = _request("tools/call", {"name": name, "arguments": arguments})
        return Template(f"bad arguments ({shape})", expect, message, drawn_id=request_id)
    ((key, value),) = deep
    rest = {k: v for k, v in arguments.items() if k != key}
    head = orjson.dumps({"jsonrpc": "2.0", "id": "@", "method": "tools/call", "name": name})
    head = head.replace(b'"@"', b"@ID@").replace(b',"name":', b',"params":{"name":')[:-1]
    raw = b'%s,"arguments":{%s%s:%s}}}' % (
        head,
        orjson.dumps(rest)[1:-1] + b"," if rest else b"",
        orjson.dumps(key),
        _nested(value.depth, value.leaf),
    )
    if _not_json(raw.replace(b"@ID@", b"0")):
        expect = Expect("null_error", PARSE_ERROR)
    return Template("bad arguments (deep)", expect, raw=raw, drawn_id=request_id)


@st.composite
def tool_calls_with_bad_params(draw: st.DrawFn) -> Template:
    shape = draw(st.sampled_from(["none", "array", "no name", "unknown", "bad meta", "bad token"]))
    if shape == "none":
        params = None
    elif shape == "array":
        params = draw(st.lists(json_values, max_size=3))
    elif shape == "no name":
        params = draw(objects_without_meta.filter(lambda p: "name" not in p))
    elif shape == "unknown":
        name = draw(
            json_values.filter(lambda n: not (isinstance(n, str) and n in TOOLS_BY_NAME))
            | huge_strings
        )
        params = {"name": name, "arguments": draw(json_values)}
    elif shape == "bad meta":
        params = {
            "name": draw(st.sampled_from(FUZZED_TOOLS)),
            "_meta": draw(json_values.filter(lambda m: not isinstance(m, dict))),
        }
    else:
        token = draw(
            json_values.filter(lambda t: isinstance(t, bool) or not isinstance(t, str | int))
        )
        params = {"name": "list_active_notebooks", "_meta": {"progressToken": token}}
    return Template(
        f"bad params ({shape})",
        Expect("error", INVALID_PARAMS),
        _request("tools/call", params),
        drawn_id=draw(request_ids),
    )


@st.composite
def valid_requests(draw: st.DrawFn) -> Template:
    shape = draw(st.sampled_from(["ping", "tools/list", "list", "no session"]))
    request_id = draw(request_ids)
    if shape == "ping":
        params = draw(st.none() | st.just({}) | st.just({"_meta": {}}))
        return Template(
            "ping", Expect("result", check="empty"), _request("ping", params), drawn_id=request_id
        )
    if shape == "tools/list":
        return Template(
            "tools/list",
            Expect("result", check="tools"),
            _request("tools/list"),
            drawn_id=request_id,
        )
    if shape == "list":
        params = {"name": "list_active_notebooks", "arguments": draw(st.none() | st.just({}))}
        if draw(st.booleans()):
            params["_meta"] = {"progressToken": draw(st.text(max_size=10) | INT64)}
        return Template(
            "list notebooks",
            Expect("result", check="ok"),
            _request("tools/call", params),
            drawn_id=request_id,
        )
    name = draw(st.sampled_from(SAFE_WHEN_VALID))
    hints = _hints(name)
    arguments = {}
    for field_name, hint in hints.items():
        if field_name in _required(name) or draw(st.booleans()):
            arguments[field_name] = draw(_valid_value(hint))
    params = {"name": name, "arguments": arguments}
    return Template(
        "no session",
        Expect("result", check="no session", tool=name),
        _request("tools/call", params),
        drawn_id=request_id,
    )


lines = st.one_of(
    not_json_lines(),
    invalid_utf8_lines(),
    blank_lines,
    not_objects,
    batches(),
    wrong_versions(),
    bad_id_lines(),
    unknown_methods(),
    malformed_requests(),
    notifications(),
    client_responses(),
    tool_calls_with_bad_params(),
    tool_calls_with_bad_arguments(),
    valid_requests(),
)


# --- checking answers --------------------------------------------------------------------------


def _key(request_id: Any) -> tuple[type, Any]:
    return type(request_id), request_id


def check_result(expect: Expect, answer: dict[str, Any], line: bytes) -> None:
    assert "result" in answer, (line[:300], answer)
    result = answer["result"]
    if expect.check == "empty":
        assert result == {}, answer
        return
    if expect.check == "tools":
        assert {tool["name"] for tool in result["tools"]} == set(TOOLS_BY_NAME) - APP_ONLY_TOOLS
        return
    assert isinstance(result["content"], list), answer
    assert result["content"], answer
    text = result["content"][0]["text"]
    if expect.check == "ok":
        assert result["isError"] is False, answer
        assert "notebooks" in result["structuredContent"], answer
    elif expect.check == "invalid arguments":
        assert result["isError"] is True, (line[:300], answer)
        assert text.startswith(f"Invalid arguments for {expect.tool}: "), (line[:300], text[:300])
    else:
        assert result["isError"] is True, (line[:300], str(answer)[:500])
        assert not text.startswith("Invalid arguments"), (line[:300], text[:300])


sentinels = itertools.count(1)


def feed(server: StdioServer, templates: list[Template]) -> None:
    """Write the lines and a sentinel ping at once; read until every answer is in."""
    rendered = [render(template) for template in templates]
    sentinel = f"sentinel-{next(sentinels)}"
    data = b"".join(line + b"\n" for line, _, _ in rendered)
    server.write(data + orjson.dumps(_request("ping", id=sentinel)) + b"\n")
    for template in templates:
        fed[template.kind] += 1

    awaited: dict[tuple[type, Any], tuple[Expect, bytes]] = {}
    null_errors: list[int] = []
    for line, expect, request_id in rendered:
        if expect.answer in ("error", "result"):
            assert request_id is not None
            awaited[_key(request_id)] = (expect, line)
        elif expect.answer == "null_error":
            null_errors.append(expect.code)
    got_null_errors: list[int] = []
    sentinel_seen = False
    deadline = time.monotonic() + READ_TIMEOUT
    while awaited or not sentinel_seen:
        try:
            answer = server.read(deadline)
        except AssertionError as exc:
            unanswered = [(expect, line[:300]) for expect, line in awaited.values()]
            raise AssertionError(
                f"{exc}; unanswered: {unanswered}; sentinel seen: {sentinel_seen}; "
                f"id-null errors {got_null_errors}, expected {null_errors}"
            ) from None
        assert set(answer) in ({"jsonrpc", "id", "result"}, {"jsonrpc", "id", "error"}), answer
        request_id = answer["id"]
        if request_id == sentinel:
            assert answer["result"] == {}, answer
            assert not sentinel_seen, "two answers to the sentinel"
            sentinel_seen = True
            assert got_null_errors == null_errors, (got_null_errors, null_errors, templates)
            continue
        if request_id is None:
            assert not sentinel_seen, f"an id-null answer after the sentinel: {answer}"
            assert isinstance(answer["error"]["code"], int), answer
            assert isinstance(answer["error"]["message"], str), answer
            got_null_errors.append(answer["error"]["code"])
            continue
        assert _key(request_id) in awaited, (
            f"an answer to no line, or a second one: {str(answer)[:500]}"
        )
        expect, line = awaited.pop(_key(request_id))
        if expect.answer == "error":
            assert answer.get("error", {}).get("code") == expect.code, (
                line[:300],
                str(answer)[:500],
            )
            assert isinstance(answer["error"]["message"], str)
        else:
            check_result(expect, answer, line)
    assert server.proc.poll() is None, server.stderr_tail()


# --- the properties ------------------------------------------------------------------------


@FUZZ
@seed(20261313)
@given(templates=st.lists(lines, min_size=1, max_size=8))
def test_every_generated_line_gets_exactly_the_answer_the_protocol_requires(
    server: StdioServer, templates: list[Template]
) -> None:
    feed(server, templates)


def test_the_fuzz_fed_at_least_2000_generated_lines(server: StdioServer) -> None:
    if not fed:
        pytest.skip("the fuzz property did not run in this session")
    assert sum(fed.values()) >= MIN_GENERATED_LINES, dict(fed)
    assert len(fed) >= 20, f"too few kinds of line were fed: {sorted(fed)}"


def test_a_tool_call_nested_too_deep_for_the_session_frames_is_still_answered(
    server: StdioServer,
) -> None:
    depth = 253
    head = b'{"jsonrpc":"2.0","id":"too-deep","method":"tools/call",'
    body = b'"params":{"name":"get_cell","arguments":{"cell_id":%s}}}' % _nested(depth, 0)
    server.write(head + body + b"\n")
    answer = server.read(time.monotonic() + 5)
    assert answer["id"] == "too-deep", answer
    assert answer["result"]["isError"] is True, answer
    assert answer["result"]["content"][0]["text"].startswith("Invalid arguments for get_cell")


@pytest.mark.parametrize("arguments", ["junk", {"bogus": 1}, [1]])
def test_reconnect_with_bad_arguments_is_refused_and_restarts_nothing(
    server: StdioServer, arguments: object
) -> None:
    answer = server.request(
        f"reconnect-{type(arguments).__name__}",
        "tools/call",
        {"name": "reconnect", "arguments": arguments},
    )
    assert answer["result"]["isError"] is True, answer
    assert answer["result"]["content"][0]["text"].startswith("Invalid arguments for reconnect")


def test_after_the_fuzz_a_workflow_works_the_daemon_answers_and_eof_ends_the_process(
    server: StdioServer, fuzz_daemon: RunningDaemon
) -> None:
    def call(request_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        answer = server.request(request_id, "tools/call", {"name": name, "arguments": arguments})
        assert answer["result"]["isError"] is False, answer
        return answer["result"]["structuredContent"]

    created = call("workflow-create", "create_notebook", {})
    ran = call("workflow-run", "create_cell", {"source": "1+1", "and_run": True})
    execution = ran["execution"]
    assert execution["status"] == "done", execution
    assert execution["outputs"] == [{"output_type": "execute_result", "text": "2"}], execution
    cells = call("workflow-read", "get_all_cells", {"format": "json"})
    assert [cell["source"] for cell in cells["cells"]] == ["1+1"], cells

    status = fuzz_daemon.status()
    assert status["pid"] == fuzz_daemon.pid, status
    rooms = fuzz_daemon.request("list_rooms")["rooms"]
    assert created["notebook_id"] in [room["notebook_id"] for room in rooms]

    server.close_stdin()
    assert server.proc.wait(timeout=60) == 0, server.stderr_tail()
    server._reader.join(10)
    wait_edge_tree_gone(server.proc.pid)

    ids = Counter()
    for line in server.lines:
        assert line.endswith(b"\n"), line[:300]
        message = orjson.loads(line)
        assert isinstance(message, dict), line[:300]
        assert message.get("jsonrpc") == "2.0", line[:300]
        if "method" not in message and message["id"] is not None:
            ids[_key(message["id"])] += 1
    twice = [key for key, count in ids.items() if count > 1]
    assert not twice, f"ids answered more than once: {twice[:5]}"
