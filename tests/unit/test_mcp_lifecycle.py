from __future__ import annotations

from typing import Any

import mcp_types
import orjson
import pytest

from nbstage.entrypoints.mcp.envelope import Answer, ClientInfo, Dispatch, Reject
from nbstage.entrypoints.mcp.lifecycle import Lifecycle, State
from nbstage.protocol.mcp.jsonrpc import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    UNSUPPORTED_PROTOCOL_VERSION,
    ErrorResponse,
    Notification,
    Request,
    Response,
    encode,
)
from nbstage.protocol.mcp.tool_results import (
    progress_notification,
    tool_error,
    tool_result,
    tools_list_changed,
)
from nbstage.protocol.mcp.versions import (
    CLIENT_CAPABILITIES_KEY,
    CLIENT_INFO_KEY,
    LOG_LEVEL_KEY,
    MODERN_VERSION,
    PROTOCOL_VERSION_KEY,
    SERVER_INFO_KEY,
    SUPPORTED_LEGACY_VERSIONS,
    decorate_result,
)

SERVER_INFO = {"name": "nbstage", "version": "1.2.3", "title": "nbstage (daemon 1.2.0)"}
CLIENT = {"name": "claude-code", "title": "Claude Code", "version": "2.0.0"}


def lifecycle() -> Lifecycle:
    return Lifecycle(version="1.2.3", title="nbstage (daemon 1.2.0)")


def envelope(**overrides: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {
        PROTOCOL_VERSION_KEY: MODERN_VERSION,
        CLIENT_CAPABILITIES_KEY: {},
        CLIENT_INFO_KEY: CLIENT,
    }
    for key, value in overrides.items():
        if value is None:
            meta.pop(key, None)
        else:
            meta[key] = value
    return meta


def modern(method: str, request_id: int = 1, **params: Any) -> Request:
    params.setdefault("_meta", envelope())
    return Request(request_id, method, params)


def initialize(version: str = "2025-11-25", client_info: object = CLIENT) -> Request:
    params: dict[str, Any] = {"protocolVersion": version, "capabilities": {"roots": {}}}
    if client_info is not None:
        params["clientInfo"] = client_info
    return Request(0, "initialize", params)


def legacy_ready(version: str = "2025-11-25") -> Lifecycle:
    life = lifecycle()
    assert isinstance(life.admit(initialize(version)), Answer)
    life.notice(Notification("notifications/initialized"))
    return life


def modern_connection() -> Lifecycle:
    life = lifecycle()
    assert isinstance(life.admit(modern("tools/list")), Dispatch)
    return life


def meta_with(**keys: Any) -> dict[str, Any]:
    return envelope(**{KEYS[name]: value for name, value in keys.items()})


KEYS = {
    "version": PROTOCOL_VERSION_KEY,
    "caps": CLIENT_CAPABILITIES_KEY,
    "info": CLIENT_INFO_KEY,
    "level": LOG_LEVEL_KEY,
}


@pytest.mark.parametrize(
    ("requested", "negotiated"),
    [
        *(
            pytest.param(v, v, id=f"legacy version {v} is echoed")
            for v in SUPPORTED_LEGACY_VERSIONS
        ),
        pytest.param("2099-01-01", "2025-11-25", id="an unknown future version gets the latest"),
        pytest.param("2024-01-01", "2025-11-25", id="an unknown old version gets the latest"),
        pytest.param("not-a-date", "2025-11-25", id="a nonsense version gets the latest"),
        pytest.param(
            MODERN_VERSION, "2025-11-25", id="the modern version through initialize gets the latest"
        ),
    ],
)
def test_initialize_answers_with_the_negotiated_legacy_version(
    requested: str, negotiated: str
) -> None:
    life = lifecycle()
    admission = life.admit(initialize(requested))
    assert isinstance(admission, Answer)
    assert admission.result["protocolVersion"] == negotiated
    assert life.state is State.LEGACY_INITIALIZING
    assert life.legacy_version == negotiated


def test_initialize_names_the_server_its_capabilities_and_instructions() -> None:
    admission = lifecycle().admit(initialize())
    assert isinstance(admission, Answer)
    result = admission.result
    assert result["serverInfo"] == SERVER_INFO
    assert result["capabilities"] == {
        "tools": {"listChanged": True},
        "resources": {"subscribe": True, "listChanged": True},
    }
    for word in ("connect_notebook", "create_notebook", "restart"):
        assert word in result["instructions"]
    assert "resultType" not in result
    mcp_types.InitializeResult.model_validate(result)


def test_a_server_without_a_title_leaves_title_out_of_server_info() -> None:
    admission = Lifecycle(version="0.1.0").admit(initialize())
    assert isinstance(admission, Answer)
    assert admission.result["serverInfo"] == {"name": "nbstage", "version": "0.1.0"}


@pytest.mark.parametrize(
    ("params", "fragment"),
    [
        pytest.param(None, "'params'", id="initialize without params"),
        pytest.param(["2025-11-25"], "'params'", id="initialize with array params"),
        pytest.param({"capabilities": {}}, "'protocolVersion'", id="initialize without a version"),
        pytest.param({"protocolVersion": 20251125}, "'protocolVersion'", id="a numeric version"),
        pytest.param(
            {"protocolVersion": "2025-11-25", "capabilities": []},
            "'capabilities'",
            id="capabilities as an array",
        ),
        pytest.param(
            {"protocolVersion": "2025-11-25", "clientInfo": "claude"},
            "'clientInfo'",
            id="clientInfo as a string",
        ),
        pytest.param(
            {"protocolVersion": "2025-11-25", "clientInfo": {"title": "No Name"}},
            "'clientInfo'",
            id="clientInfo without a name",
        ),
    ],
)
def test_initialize_with_bad_params_is_invalid_params_and_starts_nothing(
    params: Any, fragment: str
) -> None:
    life = lifecycle()
    admission = life.admit(Request(0, "initialize", params))
    assert isinstance(admission, Reject)
    assert admission.code == INVALID_PARAMS
    assert fragment in admission.message
    assert life.state is State.NEW


@pytest.mark.parametrize(
    "request_",
    [
        pytest.param(Request(1, "tools/list"), id="tools/list"),
        pytest.param(Request(1, "tools/call", {"name": "get_cell"}), id="tools/call"),
        pytest.param(
            Request(1, "tools/call", {"name": "x", "_meta": {"progressToken": 1}}),
            id="tools/call with only a progress token in _meta",
        ),
        pytest.param(
            Request(1, "resources/list", {"_meta": {"io.modelcontextprotocol/related-task": {}}}),
            id="a request with a 2025 reserved _meta key",
        ),
    ],
)
def test_a_request_before_initialize_is_an_invalid_request_and_starts_nothing(
    request_: Request,
) -> None:
    life = lifecycle()
    admission = life.admit(request_)
    assert isinstance(admission, Reject)
    assert admission.code == INVALID_REQUEST
    assert request_.method in admission.message
    assert "initialize" in admission.message
    assert life.state is State.NEW


@pytest.mark.parametrize(
    ("make", "state"),
    [
        pytest.param(lifecycle, State.NEW, id="ping before initialize"),
        pytest.param(
            lambda: _after(lifecycle(), initialize()),
            State.LEGACY_INITIALIZING,
            id="ping between initialize and initialized",
        ),
        pytest.param(legacy_ready, State.LEGACY_READY, id="ping after initialized"),
    ],
)
def test_ping_without_modern_meta_is_answered_with_an_empty_result(make: Any, state: State) -> None:
    life = make()
    assert life.admit(Request("p", "ping")) == Answer({})
    assert life.state is state


def _after(life: Lifecycle, request: Request) -> Lifecycle:
    life.admit(request)
    return life


@pytest.mark.parametrize(
    ("make", "request_", "state"),
    [
        pytest.param(
            modern_connection, Request("p", "ping"), State.MODERN, id="ping on a modern connection"
        ),
        pytest.param(
            modern_connection, modern("ping"), State.MODERN, id="enveloped ping on a modern one"
        ),
        pytest.param(lifecycle, modern("ping"), State.NEW, id="enveloped ping before any era"),
    ],
)
def test_ping_in_the_modern_era_is_method_not_found(
    make: Any, request_: Request, state: State
) -> None:
    life = make()
    admission = life.admit(request_)
    assert isinstance(admission, Reject)
    assert admission.code == METHOD_NOT_FOUND
    assert "ping" in admission.message
    assert life.state is state


@pytest.mark.parametrize(
    ("meta", "expected"),
    [
        pytest.param(
            envelope(),
            Dispatch(MODERN_VERSION, ClientInfo("claude-code", "2.0.0", "Claude Code"), {}),
            id="the full envelope",
        ),
        pytest.param(
            envelope(**{CLIENT_INFO_KEY: None}),
            Dispatch(MODERN_VERSION, None, {}),
            id="no clientInfo",
        ),
        pytest.param(
            envelope(**{CLIENT_CAPABILITIES_KEY: {"sampling": {}}, LOG_LEVEL_KEY: "warning"}),
            Dispatch(
                MODERN_VERSION,
                ClientInfo("claude-code", "2.0.0", "Claude Code"),
                {"sampling": {}},
                log_level="warning",
            ),
            id="capabilities and a log level",
        ),
        pytest.param(
            {**envelope(), "progressToken": "tok"},
            Dispatch(
                MODERN_VERSION,
                ClientInfo("claude-code", "2.0.0", "Claude Code"),
                {},
                progress_token="tok",
            ),
            id="a progress token",
        ),
    ],
)
def test_a_modern_request_with_good_metadata_is_dispatched_and_fixes_the_era(
    meta: dict[str, Any], expected: Dispatch
) -> None:
    life = lifecycle()
    admission = life.admit(Request(1, "tools/call", {"name": "get_cell", "_meta": meta}))
    assert admission == expected
    assert isinstance(admission, Dispatch)
    assert admission.modern
    assert life.state is State.MODERN


BAD_MODERN = [
    pytest.param(
        Request(1, "server/discover"),
        INVALID_PARAMS,
        "'_meta'",
        id="discover without params",
    ),
    pytest.param(
        Request(1, "server/discover", [envelope()]),
        INVALID_PARAMS,
        "'params'",
        id="discover with array params",
    ),
    pytest.param(
        Request(1, "server/discover", {"_meta": "2026-07-28"}),
        INVALID_PARAMS,
        "'_meta'",
        id="_meta as a string",
    ),
    pytest.param(
        modern("tools/list", _meta=meta_with(version=None)),
        INVALID_PARAMS,
        PROTOCOL_VERSION_KEY,
        id="no protocol version",
    ),
    pytest.param(
        modern("tools/list", _meta=meta_with(caps=None)),
        INVALID_PARAMS,
        CLIENT_CAPABILITIES_KEY,
        id="no client capabilities",
    ),
    pytest.param(
        modern("tools/list", _meta=meta_with(version=20260728)),
        INVALID_PARAMS,
        PROTOCOL_VERSION_KEY,
        id="a numeric protocol version",
    ),
    pytest.param(
        modern("tools/list", _meta=meta_with(version="2025-11-25")),
        UNSUPPORTED_PROTOCOL_VERSION,
        "2025-11-25",
        id="a legacy version in _meta",
    ),
    pytest.param(
        modern("tools/list", _meta=meta_with(version="2099-01-01")),
        UNSUPPORTED_PROTOCOL_VERSION,
        "2099-01-01",
        id="an unknown future version",
    ),
    pytest.param(
        modern("tools/list", _meta=meta_with(caps=["sampling"])),
        INVALID_PARAMS,
        CLIENT_CAPABILITIES_KEY,
        id="capabilities as an array",
    ),
    pytest.param(
        modern("tools/list", _meta=meta_with(info="claude")),
        INVALID_PARAMS,
        CLIENT_INFO_KEY,
        id="clientInfo as a string",
    ),
    pytest.param(
        modern("tools/list", _meta=meta_with(info={"version": "1"})),
        INVALID_PARAMS,
        CLIENT_INFO_KEY,
        id="clientInfo without a name",
    ),
    pytest.param(
        modern("tools/list", _meta=meta_with(level="loud")),
        INVALID_PARAMS,
        LOG_LEVEL_KEY,
        id="an unknown log level",
    ),
]


@pytest.mark.parametrize(("request_", "code", "fragment"), BAD_MODERN)
def test_a_modern_request_with_bad_metadata_is_refused_and_starts_nothing(
    request_: Request, code: int, fragment: str
) -> None:
    life = lifecycle()
    admission = life.admit(request_)
    assert isinstance(admission, Reject)
    assert admission.code == code
    assert fragment in admission.message
    assert life.state is State.NEW
    assert life.client_info is None


@pytest.mark.parametrize(("request_", "code", "fragment"), BAD_MODERN)
def test_a_modern_connection_still_judges_every_request_on_its_own(
    request_: Request, code: int, fragment: str
) -> None:
    life = modern_connection()
    admission = life.admit(request_)
    assert isinstance(admission, Reject)
    assert admission.code == code
    assert life.state is State.MODERN


def test_a_modern_connection_refuses_a_request_without_any_metadata() -> None:
    admission = modern_connection().admit(Request(2, "tools/list"))
    assert isinstance(admission, Reject)
    assert admission.code == INVALID_PARAMS


@pytest.mark.parametrize(
    "requested",
    [
        pytest.param("2025-11-25", id="a legacy version"),
        pytest.param("2099-01-01", id="an unknown version"),
    ],
)
def test_an_unsupported_modern_version_names_the_supported_and_requested_versions(
    requested: str,
) -> None:
    admission = lifecycle().admit(modern("tools/list", _meta=meta_with(version=requested)))
    assert isinstance(admission, Reject)
    assert admission.data == {"supported": [MODERN_VERSION], "requested": requested}


def test_server_discover_describes_the_modern_protocol() -> None:
    life = lifecycle()
    admission = life.admit(modern("server/discover"))
    assert admission == Answer(
        {
            "resultType": "complete",
            "supportedVersions": [MODERN_VERSION],
            "capabilities": {
                "tools": {"listChanged": True},
                "resources": {"subscribe": True, "listChanged": True},
            },
            "instructions": life.instructions,
            "ttlMs": 0,
            "cacheScope": "private",
            "_meta": {SERVER_INFO_KEY: SERVER_INFO},
        }
    )
    assert life.state is State.MODERN
    parsed = mcp_types.DiscoverResult.model_validate(admission.result)
    assert parsed.supported_versions == [MODERN_VERSION]


@pytest.mark.parametrize(
    ("request_", "code"),
    [
        pytest.param(modern("tools/call", name="x"), INVALID_REQUEST, id="an enveloped tools/call"),
        pytest.param(modern("server/discover"), INVALID_REQUEST, id="an enveloped discover"),
        pytest.param(modern("ping"), INVALID_REQUEST, id="an enveloped ping"),
        pytest.param(
            Request(1, "tools/list", {"_meta": {CLIENT_CAPABILITIES_KEY: {}}}),
            INVALID_REQUEST,
            id="a request with only modern capabilities in _meta",
        ),
        pytest.param(Request(1, "server/discover"), METHOD_NOT_FOUND, id="a bare discover"),
        pytest.param(initialize("2025-06-18"), INVALID_REQUEST, id="a second initialize"),
    ],
)
def test_a_legacy_connection_does_not_switch_in_place(request_: Request, code: int) -> None:
    life = legacy_ready()
    admission = life.admit(request_)
    assert isinstance(admission, Reject)
    assert admission.code == code
    assert life.state is State.LEGACY_READY
    assert life.legacy_version == "2025-11-25"


@pytest.mark.parametrize(
    ("request_", "data"),
    [
        pytest.param(
            initialize("2025-11-25"),
            {"supported": [MODERN_VERSION], "requested": "2025-11-25"},
            id="initialize with a legacy version",
        ),
        pytest.param(
            Request(3, "initialize", {"capabilities": {}}),
            {"supported": [MODERN_VERSION]},
            id="initialize without a version",
        ),
    ],
)
def test_a_modern_connection_refuses_initialize_naming_its_versions(
    request_: Request, data: dict[str, Any]
) -> None:
    life = modern_connection()
    admission = life.admit(request_)
    assert isinstance(admission, Reject)
    assert admission.code == UNSUPPORTED_PROTOCOL_VERSION
    assert admission.data == data
    assert life.state is State.MODERN


MODERN_INITIALIZE = Request(7, "initialize", {"_meta": envelope()})
"""``initialize`` as a 2026-07-28 request: the per-request envelope and no handshake
``protocolVersion``, as the conformance suite's ``server-stateless`` scenario sends it."""


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lifecycle, id="as the first request"),
        pytest.param(modern_connection, id="on a modern connection"),
    ],
)
def test_initialize_with_the_modern_envelope_is_a_removed_method(make: Any) -> None:
    life = make()
    state = life.state
    admission = life.admit(MODERN_INITIALIZE)
    assert isinstance(admission, Reject)
    assert admission.code == METHOD_NOT_FOUND
    assert "initialize" in admission.message
    assert MODERN_VERSION in admission.message
    assert admission.response(7) == ErrorResponse(
        7, METHOD_NOT_FOUND, admission.message, admission.data
    )
    assert life.state is state, "a refused initialize fixes no era"
    assert life.legacy_version is None


@pytest.mark.parametrize(
    ("meta", "code"),
    [
        pytest.param(meta_with(caps=None), INVALID_PARAMS, id="without client capabilities"),
        pytest.param(
            meta_with(version="2099-01-01"), UNSUPPORTED_PROTOCOL_VERSION, id="unknown version"
        ),
    ],
)
def test_initialize_with_a_broken_modern_envelope_gets_the_envelope_error(
    meta: dict[str, Any], code: int
) -> None:
    life = lifecycle()
    admission = life.admit(Request(8, "initialize", {"_meta": meta}))
    assert isinstance(admission, Reject)
    assert admission.code == code
    assert life.state is State.NEW


def test_legacy_initialize_still_opens_after_a_removed_modern_initialize() -> None:
    life = lifecycle()
    assert isinstance(life.admit(MODERN_INITIALIZE), Reject)
    admission = life.admit(initialize())
    assert isinstance(admission, Answer)
    assert admission.result["protocolVersion"] == "2025-11-25"
    assert life.state is State.LEGACY_INITIALIZING


def test_initialize_on_a_legacy_connection_is_still_a_second_initialize() -> None:
    life = legacy_ready()
    admission = life.admit(MODERN_INITIALIZE)
    assert isinstance(admission, Reject)
    assert admission.code == INVALID_REQUEST
    assert life.state is State.LEGACY_READY


def test_initialize_carrying_modern_metadata_still_opens_a_legacy_connection() -> None:
    life = lifecycle()
    request = Request(0, "initialize", {"protocolVersion": MODERN_VERSION, "_meta": envelope()})
    admission = life.admit(request)
    assert isinstance(admission, Answer)
    assert admission.result["protocolVersion"] == "2025-11-25"
    assert life.state is State.LEGACY_INITIALIZING


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda: _after(lifecycle(), initialize()), id="before initialized"),
        pytest.param(legacy_ready, id="after initialized"),
    ],
)
def test_a_legacy_request_is_dispatched_under_the_negotiated_version(make: Any) -> None:
    life = make()
    request = Request(4, "tools/call", {"name": "x", "_meta": {"progressToken": 4}})
    assert life.admit(request) == Dispatch(
        "2025-11-25",
        ClientInfo("claude-code", "2.0.0", "Claude Code"),
        {"roots": {}},
        progress_token=4,
    )


BAD_CALL_META = [
    pytest.param("tok", "'_meta'", id="_meta as a string"),
    pytest.param(["progressToken", 1], "'_meta'", id="_meta as an array"),
    pytest.param(7, "'_meta'", id="_meta as a number"),
    pytest.param(None, "'_meta'", id="_meta as null"),
    pytest.param({"progressToken": True}, "progressToken", id="a boolean token"),
    pytest.param({"progressToken": False}, "progressToken", id="a false token"),
    pytest.param({"progressToken": 1.5}, "progressToken", id="a float token"),
    pytest.param({"progressToken": None}, "progressToken", id="a null token"),
    pytest.param({"progressToken": ["t"]}, "progressToken", id="an array token"),
    pytest.param({"progressToken": {"t": 1}}, "progressToken", id="an object token"),
]


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda: _after(lifecycle(), initialize()), id="before initialized"),
        pytest.param(legacy_ready, id="after initialized"),
    ],
)
@pytest.mark.parametrize(("meta", "fragment"), BAD_CALL_META)
def test_a_legacy_tools_call_with_bad_meta_is_invalid_params(
    make: Any, meta: Any, fragment: str
) -> None:
    life = make()
    state = life.state
    admission = life.admit(Request(5, "tools/call", {"name": "get_cell", "_meta": meta}))
    assert isinstance(admission, Reject)
    assert admission.code == INVALID_PARAMS
    assert fragment in admission.message
    assert life.state is state


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lifecycle, id="as the first request"),
        pytest.param(modern_connection, id="on a modern connection"),
    ],
)
@pytest.mark.parametrize(("meta", "fragment"), [p for p in BAD_CALL_META if p.id.endswith("token")])
def test_a_modern_tools_call_with_a_bad_progress_token_is_invalid_params(
    make: Any, meta: dict[str, Any], fragment: str
) -> None:
    life = make()
    state, client_info = life.state, life.client_info
    request = Request(6, "tools/call", {"name": "get_cell", "_meta": {**envelope(), **meta}})
    admission = life.admit(request)
    assert isinstance(admission, Reject)
    assert admission.code == INVALID_PARAMS
    assert fragment in admission.message
    assert (life.state, life.client_info) == (state, client_info), "a refusal changes nothing"


@pytest.mark.parametrize(
    "token",
    [
        pytest.param(0, id="zero"),
        pytest.param(-(2**63), id="a big negative"),
        pytest.param("", id="empty"),
    ],
)
def test_a_tools_call_keeps_any_string_or_integer_progress_token(token: str | int) -> None:
    legacy = legacy_ready().admit(
        Request(5, "tools/call", {"name": "x", "_meta": {"progressToken": token}})
    )
    assert isinstance(legacy, Dispatch)
    assert legacy.progress_token == token
    meta = {**envelope(), "progressToken": token}
    modern_ = lifecycle().admit(Request(6, "tools/call", {"name": "x", "_meta": meta}))
    assert isinstance(modern_, Dispatch)
    assert modern_.progress_token == token


@pytest.mark.parametrize(
    ("result", "version", "method", "expected"),
    [
        pytest.param(
            {"content": []},
            MODERN_VERSION,
            "tools/call",
            {"content": [], "resultType": "complete", "_meta": {SERVER_INFO_KEY: SERVER_INFO}},
            id="a modern result gets resultType and the server stamp",
        ),
        pytest.param(
            {"resultType": "input_required", "inputRequests": {}},
            MODERN_VERSION,
            "tools/call",
            {
                "resultType": "input_required",
                "inputRequests": {},
                "_meta": {SERVER_INFO_KEY: SERVER_INFO},
            },
            id="a modern result keeps a resultType it has",
        ),
        pytest.param(
            {"tools": []},
            MODERN_VERSION,
            "tools/list",
            {
                "tools": [],
                "resultType": "complete",
                "ttlMs": 0,
                "cacheScope": "private",
                "_meta": {SERVER_INFO_KEY: SERVER_INFO},
            },
            id="a modern list result gets cache hints",
        ),
        pytest.param(
            {"tools": [], "ttlMs": 5000, "cacheScope": "public"},
            MODERN_VERSION,
            "tools/list",
            {
                "tools": [],
                "ttlMs": 5000,
                "cacheScope": "public",
                "resultType": "complete",
                "_meta": {SERVER_INFO_KEY: SERVER_INFO},
            },
            id="a modern list result keeps its own cache hints",
        ),
        pytest.param(
            {"_meta": {"x": 1}},
            MODERN_VERSION,
            "tools/call",
            {"_meta": {"x": 1, SERVER_INFO_KEY: SERVER_INFO}, "resultType": "complete"},
            id="a modern result keeps its own _meta keys",
        ),
        pytest.param(
            {"_meta": {SERVER_INFO_KEY: {"name": "child"}}},
            MODERN_VERSION,
            "tools/call",
            {"_meta": {SERVER_INFO_KEY: {"name": "child"}}, "resultType": "complete"},
            id="a modern result keeps a server stamp it has",
        ),
        pytest.param(
            {"content": [], "resultType": "complete", "ttlMs": 0, "cacheScope": "private"},
            "2025-06-18",
            "tools/call",
            {"content": []},
            id="a legacy result loses the 2026-only keys",
        ),
        pytest.param(
            {"tools": [], "_meta": {"x": 1}},
            "2024-11-05",
            "tools/list",
            {"tools": [], "_meta": {"x": 1}},
            id="a legacy result is otherwise untouched",
        ),
    ],
)
def test_results_are_decorated_for_the_era_of_their_request(
    result: dict[str, Any], version: str, method: str, expected: dict[str, Any]
) -> None:
    original = orjson.loads(orjson.dumps(result))
    assert lifecycle().decorate(result, version=version, method=method) == expected
    assert result == original


def test_decorating_without_server_info_leaves_meta_alone() -> None:
    assert decorate_result({}, version=MODERN_VERSION) == {"resultType": "complete"}


@pytest.mark.parametrize(
    ("client_info", "label"),
    [
        pytest.param(
            {"name": "codex", "title": "Codex CLI", "version": "1"}, "Codex CLI", id="title"
        ),
        pytest.param({"name": "codex", "version": "1"}, "codex", id="no title falls back to name"),
        pytest.param({"name": "codex", "title": ""}, "codex", id="an empty title falls back"),
        pytest.param({"name": "codex", "title": "  "}, "codex", id="a blank title falls back"),
        pytest.param(
            {"name": "codex", "title": " Codex "}, "Codex", id="a padded title is trimmed"
        ),
        pytest.param(None, None, id="no clientInfo gives no label"),
    ],
)
def test_the_client_label_is_the_title_else_the_name(
    client_info: dict[str, Any] | None, label: str | None
) -> None:
    life = lifecycle()
    life.admit(initialize(client_info=client_info))
    assert life.client_label == label


def test_a_modern_client_label_follows_the_latest_request_that_names_one() -> None:
    life = lifecycle()
    life.admit(modern("tools/list", _meta=meta_with(info={"name": "a"})))
    assert life.client_label == "a"
    life.admit(modern("tools/list", _meta=meta_with(info=None)))
    assert life.client_label == "a"
    life.admit(modern("tools/list", _meta=meta_with(info={"name": "b", "title": "B"})))
    assert life.client_label == "B"


@pytest.mark.parametrize(
    ("make", "method", "passed_on", "state"),
    [
        pytest.param(
            lambda: _after(lifecycle(), initialize()),
            "notifications/initialized",
            False,
            State.LEGACY_READY,
            id="initialized completes the legacy handshake",
        ),
        pytest.param(
            lifecycle,
            "notifications/initialized",
            False,
            State.NEW,
            id="initialized before initialize is dropped",
        ),
        pytest.param(
            modern_connection,
            "notifications/initialized",
            False,
            State.MODERN,
            id="initialized on a modern connection is dropped",
        ),
        pytest.param(
            legacy_ready,
            "notifications/cancelled",
            True,
            State.LEGACY_READY,
            id="cancelled on a legacy connection is passed on",
        ),
        pytest.param(
            modern_connection,
            "notifications/cancelled",
            True,
            State.MODERN,
            id="cancelled on a modern connection is passed on",
        ),
        pytest.param(
            lifecycle,
            "notifications/cancelled",
            False,
            State.NEW,
            id="cancelled before any era is dropped",
        ),
    ],
)
def test_notifications_move_the_handshake_or_pass_through(
    make: Any, method: str, passed_on: bool, state: State
) -> None:
    life = make()
    assert life.notice(Notification(method, {"requestId": 1})) is passed_on
    assert life.state is state


@pytest.mark.parametrize(
    ("make", "allowed"),
    [
        pytest.param(lifecycle, False, id="not before initialize"),
        pytest.param(lambda: _after(lifecycle(), initialize()), False, id="not before initialized"),
        pytest.param(legacy_ready, True, id="yes on a ready legacy connection"),
        pytest.param(modern_connection, False, id="not unasked on a modern connection"),
    ],
)
def test_list_changed_may_be_sent_only_on_a_ready_legacy_connection(
    make: Any, allowed: bool
) -> None:
    assert make().may_send_list_changed is allowed


@pytest.mark.parametrize(
    "request_",
    [
        pytest.param(Request(1, "tools/list"), id="a legacy-looking request"),
        pytest.param(modern("tools/list"), id="a modern request"),
        pytest.param(initialize(), id="initialize"),
    ],
)
def test_a_closed_connection_refuses_everything(request_: Request) -> None:
    life = legacy_ready()
    life.close()
    admission = life.admit(request_)
    assert isinstance(admission, Reject)
    assert admission.code == INTERNAL_ERROR
    assert life.notice(Notification("notifications/cancelled")) is False


def test_admissions_become_responses_to_the_request_id() -> None:
    assert Answer({}).response("a") == Response("a", {})
    assert Reject(-32601, "nope", "m").response(3) == ErrorResponse(3, -32601, "nope", "m")


@pytest.mark.parametrize(
    ("result", "expected"),
    [
        pytest.param(
            tool_result({"cell_id": "c1"}, text="Created cell c1"),
            {
                "content": [{"type": "text", "text": "Created cell c1"}],
                "structuredContent": {"cell_id": "c1"},
                "isError": False,
            },
            id="text and structured content",
        ),
        pytest.param(
            tool_result({"deleted": True}),
            {
                "content": [{"type": "text", "text": '{"deleted":true}'}],
                "structuredContent": {"deleted": True},
                "isError": False,
            },
            id="structured content alone is also serialized as text",
        ),
        pytest.param(
            tool_result(
                {"n": 1},
                text="plot",
                content=[{"type": "image", "data": "iVBO", "mimeType": "image/png"}],
            ),
            {
                "content": [
                    {"type": "text", "text": "plot"},
                    {"type": "image", "data": "iVBO", "mimeType": "image/png"},
                ],
                "structuredContent": {"n": 1},
                "isError": False,
            },
            id="extra content follows the text",
        ),
        pytest.param(
            tool_result({"n": 1}, content=[{"type": "text", "text": "rendered"}]),
            {
                "content": [{"type": "text", "text": "rendered"}],
                "structuredContent": {"n": 1},
                "isError": False,
            },
            id="rendered content stands in for the json text",
        ),
        pytest.param(
            tool_error("No active notebook session. Call connect_notebook first."),
            {
                "content": [
                    {
                        "type": "text",
                        "text": "No active notebook session. Call connect_notebook first.",
                    }
                ],
                "isError": True,
                "structuredContent": {
                    "error": "No active notebook session. Call connect_notebook first."
                },
            },
            id="a tool error",
        ),
    ],
)
def test_tool_results_carry_text_structured_content_and_is_error(
    result: dict[str, Any], expected: dict[str, Any]
) -> None:
    assert result == expected
    mcp_types.CallToolResult.model_validate(result)


@pytest.mark.parametrize(
    ("notification", "line"),
    [
        pytest.param(
            progress_notification("t", 1),
            b'{"jsonrpc":"2.0","method":"notifications/progress",'
            b'"params":{"progressToken":"t","progress":1}}\n',
            id="progress with a string token",
        ),
        pytest.param(
            progress_notification(7, 2.5, total=10, message="cell 3 running"),
            b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":7,'
            b'"progress":2.5,"total":10,"message":"cell 3 running"}}\n',
            id="progress with total and message",
        ),
        pytest.param(
            tools_list_changed(),
            b'{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}\n',
            id="tools list changed has no params",
        ),
    ],
)
def test_notifications_encode_as_the_spec_shows(notification: Notification, line: bytes) -> None:
    assert encode(notification) == line


@pytest.mark.parametrize(
    "token",
    [
        pytest.param(True, id="a boolean token"),
        pytest.param(1.5, id="a float token"),
        pytest.param(None, id="no token"),
    ],
)
def test_a_progress_notification_needs_a_string_or_integer_token(token: Any) -> None:
    with pytest.raises(TypeError):
        progress_notification(token, 1)
