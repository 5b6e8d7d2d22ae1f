"""The MCP lifecycle of one stdio connection, as a pure state machine.

A :class:`Lifecycle` sees every request before anything acts on it and returns an
:data:`Admission`: :class:`Answer` (the lifecycle replies itself: ``initialize``,
``ping``, ``server/discover``), :class:`Reject` (a JSON-RPC error) or :class:`Dispatch`
(hand the request on, with the protocol version and client identity it runs under).
Nothing here does I/O or reads a clock.

Two protocol eras share one process:

* Legacy (2024-11-05 .. 2025-11-25): ``initialize`` negotiates a version once, and the
  rest of the connection runs under it.
* Modern (2026-07-28): no handshake. Every request carries
  ``_meta["io.modelcontextprotocol/protocolVersion"]`` and
  ``_meta["io.modelcontextprotocol/clientCapabilities"]`` (``clientInfo`` and
  ``logLevel`` are optional) and is judged on its own.

The first request that is admitted as ``initialize`` or with the modern ``_meta``
fixes the era; a rejected request fixes nothing. After that the connection does not
switch: a request carrying the modern envelope on a legacy connection gets -32600
(Invalid Request), and the ``initialize`` handshake on a modern connection gets -32022
naming the versions served there. This is how the official Python SDK's dual-era server
behaves, so clients that probe with ``server/discover`` and fall back see the same answers.

An ``initialize`` is the legacy handshake when its params name a ``protocolVersion``
(even if a client also stamped the modern envelope on it). Without one but with the
modern ``_meta``, it is a 2026-07-28 request: its envelope is checked like any other's,
and a valid one gets -32601 because that revision removed the method. The official
conformance suite's ``server-stateless`` scenario expects this; the SDK's stdio loop
answers -32602 or -32022 instead.

Other decisions the spec leaves open:

* A request before ``initialize`` that is neither ``ping`` nor modern gets -32600:
  the handshake must come first.
* ``ping`` without the modern ``_meta`` is answered before the era is fixed, and
  fixes nothing. With the modern ``_meta``, or on a modern connection, it is -32601:
  2026-07-28 removed it.
* A second ``initialize`` gets -32600.
* ``tools/call`` whose ``_meta`` is not an object, or whose ``_meta.progressToken`` is
  neither a string nor an integer, gets -32602 in both eras (booleans are not integers).
* ``server/discover`` lists only the modern version: it describes the per-request
  path. Its ``tools`` capability has no ``listChanged``, because 2026-07-28 delivers
  that notification only on ``subscriptions/listen`` streams, which are not served.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import field
from typing import Any, Final

import orjson

from nbstage.protocol.common.frozen import frozen
from nbstage.protocol.mcp.jsonrpc import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    UNSUPPORTED_PROTOCOL_VERSION,
    ErrorResponse,
    Notification,
    Request,
    RequestId,
    Response,
)

SUPPORTED_LEGACY_VERSIONS: Final = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
LATEST_LEGACY_VERSION: Final = SUPPORTED_LEGACY_VERSIONS[-1]
MODERN_VERSION: Final = "2026-07-28"
SUPPORTED_MODERN_VERSIONS: Final = (MODERN_VERSION,)

PROTOCOL_VERSION_KEY: Final = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES_KEY: Final = "io.modelcontextprotocol/clientCapabilities"
CLIENT_INFO_KEY: Final = "io.modelcontextprotocol/clientInfo"
LOG_LEVEL_KEY: Final = "io.modelcontextprotocol/logLevel"
SERVER_INFO_KEY: Final = "io.modelcontextprotocol/serverInfo"

# Keys that exist only in the 2026-07-28 request envelope. Other reserved keys, such as
# 2025-11-25's "io.modelcontextprotocol/related-task", say nothing about the era.
ENVELOPE_KEYS: Final = frozenset(
    {PROTOCOL_VERSION_KEY, CLIENT_CAPABILITIES_KEY, CLIENT_INFO_KEY, LOG_LEVEL_KEY}
)

LOG_LEVELS: Final = (
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
)

# Results of these methods carry cache hints in 2026-07-28; clients reject them without.
CACHEABLE_METHODS: Final = frozenset(
    {
        "server/discover",
        "tools/list",
        "prompts/list",
        "resources/list",
        "resources/templates/list",
        "resources/read",
    }
)
LEGACY_ONLY_RESULT_KEYS: Final = ("resultType", "ttlMs", "cacheScope")

INSTRUCTIONS: Final = (
    "nbstage runs Jupyter notebooks in a background daemon that outlives this "
    "connection. Start every task with connect_notebook (a .ipynb path, or a notebook_id "
    "from list_active_notebooks) or create_notebook; the cell tools then work on that "
    "active notebook. Read with get_all_cells or get_cell, edit with create_cell, set_cell, "
    "replace_match or move_cell, and run with execute_cell or and_run=true. A run that "
    "outlasts timeout_secs returns status 'running': fetch the rest with "
    "get_results(execution_id). After a restart your notebook is rejoined by itself: a "
    "server restart keeps the kernel and its variables; a daemon restart starts a new "
    "kernel, so rerun the cells you need. If a tool reports no active session, reconnect "
    "with connect_notebook(notebook_id=...). Call save_notebook to write the file."
)


class State(enum.Enum):
    NEW = "new"
    LEGACY_INITIALIZING = "legacy_initializing"
    """``initialize`` answered, ``notifications/initialized`` not yet received."""
    LEGACY_READY = "legacy_ready"
    MODERN = "modern"
    CLOSED = "closed"


def is_modern_version(version: str) -> bool:
    return version in SUPPORTED_MODERN_VERSIONS


@frozen
class ClientInfo:
    """The client's ``Implementation`` as far as the server uses it."""

    name: str
    version: str | None = None
    title: str | None = None

    @property
    def label(self) -> str:
        """What to show people: the title when it has one, else the name."""
        if self.title and self.title.strip():
            return self.title.strip()
        return self.name

    @classmethod
    def from_wire(cls, value: object) -> ClientInfo:
        """Read an ``Implementation`` object; raise ValueError saying what is wrong."""
        if not isinstance(value, Mapping):
            raise ValueError("must be an object")
        name, version, title = value.get("name"), value.get("version"), value.get("title")
        if not isinstance(name, str):
            raise ValueError('"name" must be a string')
        if version is not None and not isinstance(version, str):
            raise ValueError('"version" must be a string')
        if title is not None and not isinstance(title, str):
            raise ValueError('"title" must be a string')
        return cls(name=name, version=version, title=title)


@frozen
class Answer:
    """Reply with ``result``; the lifecycle has handled the request."""

    result: dict[str, Any]

    def response(self, request_id: RequestId) -> Response:
        return Response(request_id, self.result)


@frozen
class Reject:
    """Reply with a JSON-RPC error; nothing else happens."""

    code: int
    message: str
    data: Any = None

    def response(self, request_id: RequestId) -> ErrorResponse:
        return ErrorResponse(request_id, self.code, self.message, self.data)


@frozen
class Dispatch:
    """Hand the request on, to run under ``version`` for the client described here."""

    version: str
    client_info: ClientInfo | None
    client_capabilities: Mapping[str, Any] = field(default_factory=dict)
    log_level: str | None = None
    progress_token: str | int | None = None

    @property
    def modern(self) -> bool:
        return is_modern_version(self.version)


Admission = Answer | Reject | Dispatch


def method_not_found(method: str) -> Reject:
    return Reject(METHOD_NOT_FOUND, f"Method not found: {method}", method)


def _is_progress_token(value: object) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def progress_token_of(params: object) -> str | int | None:
    """``params._meta.progressToken`` when it is a string or an integer, else None."""
    meta = params.get("_meta") if isinstance(params, Mapping) else None
    token = meta.get("progressToken") if isinstance(meta, Mapping) else None
    return token if _is_progress_token(token) else None


_JSON_TYPE_NAMES: Final = {
    bool: "a boolean",
    int: "an integer",
    float: "a number",
    str: "a string",
    list: "an array",
    dict: "an object",
}


def _json_type_name(value: object) -> str:
    if value is None:
        return "null"
    return _JSON_TYPE_NAMES.get(type(value), type(value).__name__)


def check_request_meta(params: object) -> Reject | None:
    """-32602 when ``params._meta`` is present but not an object, or carries a
    ``progressToken`` that is neither a string nor an integer; None when all is well."""
    if not isinstance(params, Mapping) or "_meta" not in params:
        return None
    meta = params["_meta"]
    if not isinstance(meta, Mapping):
        return Reject(
            INVALID_PARAMS,
            f"Invalid params: '_meta' must be an object, not {_json_type_name(meta)}",
        )
    if "progressToken" in meta and not _is_progress_token(meta["progressToken"]):
        return Reject(
            INVALID_PARAMS,
            "Invalid params: '_meta.progressToken' must be a string or an integer, not "
            + _json_type_name(meta["progressToken"]),
        )
    return None


def _meta_of(params: object) -> Mapping[str, Any] | None:
    meta = params.get("_meta") if isinstance(params, Mapping) else None
    return meta if isinstance(meta, Mapping) else None


def carries_modern_envelope(params: object) -> bool:
    """Whether ``params._meta`` holds any 2026-07-28 envelope key."""
    meta = _meta_of(params)
    return meta is not None and not ENVELOPE_KEYS.isdisjoint(meta)


def unsupported_version(requested: object) -> Reject:
    data: dict[str, Any] = {"supported": list(SUPPORTED_MODERN_VERSIONS)}
    if isinstance(requested, str):
        data["requested"] = requested
    return Reject(
        UNSUPPORTED_PROTOCOL_VERSION,
        f"Unsupported protocol version {requested!r}: "
        f"requests with per-request _meta must use {MODERN_VERSION}",
        data,
    )


def modern_initialize(params: object) -> Reject | None:
    """The answer to an ``initialize`` sent as a 2026-07-28 request, else None.

    Such a request carries the modern ``_meta`` envelope and no handshake
    ``protocolVersion``. Its envelope is judged as any modern request's; a valid one gets
    -32601, since 2026-07-28 removed the method. Anything else is the legacy handshake.
    """
    if not isinstance(params, Mapping) or "protocolVersion" in params:
        return None
    if not carries_modern_envelope(params):
        return None
    envelope = read_envelope(params)
    if isinstance(envelope, Reject):
        return envelope
    message = (
        f"Method not found: initialize (removed in protocol {MODERN_VERSION}, whose requests "
        "carry their version and capabilities in _meta; send initialize without that _meta "
        f"for protocol {SUPPORTED_LEGACY_VERSIONS[0]} to {LATEST_LEGACY_VERSION})"
    )
    return Reject(METHOD_NOT_FOUND, message, "initialize")


def read_envelope(params: object) -> Dispatch | Reject:
    """Check one request's 2026-07-28 ``_meta`` envelope.

    Missing or malformed fields are -32602 (Invalid params); a well-formed version that
    is not served is -32022 with ``data: {supported, requested}``.
    """
    if not isinstance(params, Mapping):
        return Reject(
            INVALID_PARAMS,
            f"Invalid params: protocol {MODERN_VERSION} requests need an object 'params' "
            f"whose '_meta' carries '{PROTOCOL_VERSION_KEY}' and '{CLIENT_CAPABILITIES_KEY}'",
        )
    meta = params.get("_meta")
    if not isinstance(meta, Mapping):
        return Reject(
            INVALID_PARAMS,
            f"Invalid params: '_meta' must be an object carrying '{PROTOCOL_VERSION_KEY}' "
            f"and '{CLIENT_CAPABILITIES_KEY}'",
        )
    missing = [key for key in (PROTOCOL_VERSION_KEY, CLIENT_CAPABILITIES_KEY) if key not in meta]
    if missing:
        return Reject(
            INVALID_PARAMS,
            "Invalid params: '_meta' is missing " + " and ".join(f"'{k}'" for k in missing),
        )
    version = meta[PROTOCOL_VERSION_KEY]
    if not isinstance(version, str):
        return Reject(INVALID_PARAMS, f"Invalid params: '{PROTOCOL_VERSION_KEY}' must be a string")
    if not is_modern_version(version):
        return unsupported_version(version)
    capabilities = meta[CLIENT_CAPABILITIES_KEY]
    if not isinstance(capabilities, Mapping):
        return Reject(
            INVALID_PARAMS, f"Invalid params: '{CLIENT_CAPABILITIES_KEY}' must be an object"
        )
    client_info = None
    if meta.get(CLIENT_INFO_KEY) is not None:
        try:
            client_info = ClientInfo.from_wire(meta[CLIENT_INFO_KEY])
        except ValueError as exc:
            return Reject(INVALID_PARAMS, f"Invalid params: '{CLIENT_INFO_KEY}' {exc}")
    log_level = meta.get(LOG_LEVEL_KEY)
    if log_level is not None and log_level not in LOG_LEVELS:
        return Reject(
            INVALID_PARAMS,
            f"Invalid params: '{LOG_LEVEL_KEY}' must be one of {', '.join(LOG_LEVELS)}",
        )
    return Dispatch(
        version=version,
        client_info=client_info,
        client_capabilities=dict(capabilities),
        log_level=log_level,
        progress_token=progress_token_of(params),
    )


def negotiate_version(requested: str) -> str:
    """The legacy version to answer ``initialize`` with."""
    return requested if requested in SUPPORTED_LEGACY_VERSIONS else LATEST_LEGACY_VERSION


def decorate_result(
    result: Mapping[str, Any],
    *,
    version: str,
    method: str | None = None,
    server_info: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Shape a result for the era of ``version``; returns a new dict.

    Modern: ``resultType`` defaults to ``"complete"``, results of cacheable methods get
    ``ttlMs: 0`` and ``cacheScope: "private"`` unless set, and ``server_info`` is stamped
    into ``_meta`` unless the result already names one. Legacy: those 2026-only keys are
    removed.
    """
    shaped = dict(result)
    if not is_modern_version(version):
        for key in LEGACY_ONLY_RESULT_KEYS:
            shaped.pop(key, None)
        return shaped
    shaped.setdefault("resultType", "complete")
    if method in CACHEABLE_METHODS:
        shaped.setdefault("ttlMs", 0)
        shaped.setdefault("cacheScope", "private")
    if server_info is not None:
        meta = shaped.get("_meta")
        if meta is None:
            shaped["_meta"] = {SERVER_INFO_KEY: dict(server_info)}
        elif isinstance(meta, Mapping) and meta.get(SERVER_INFO_KEY) is None:
            shaped["_meta"] = {**meta, SERVER_INFO_KEY: dict(server_info)}
    return shaped


class Lifecycle:
    """The protocol state of one client connection."""

    def __init__(
        self,
        *,
        version: str,
        name: str = "nbstage",
        title: str | None = None,
        instructions: str = INSTRUCTIONS,
    ) -> None:
        self.server_info: dict[str, Any] = {"name": name, "version": version}
        if title is not None:
            self.server_info["title"] = title
        self.instructions = instructions
        self.state = State.NEW
        self.legacy_version: str | None = None
        self.client_info: ClientInfo | None = None
        self.client_capabilities: Mapping[str, Any] = {}

    @property
    def client_label(self) -> str | None:
        """The client's display label (title, else name), once the client has said.

        Legacy: from ``initialize``. Modern: from the latest admitted request that named
        a ``clientInfo``; for display only, never for behaviour.
        """
        return self.client_info.label if self.client_info is not None else None

    @property
    def may_send_list_changed(self) -> bool:
        """Whether ``notifications/tools/list_changed`` may be written unasked.

        Only on a legacy connection past ``notifications/initialized``: 2026-07-28
        sends it on ``subscriptions/listen`` streams alone.
        """
        return self.state is State.LEGACY_READY

    def _capabilities(self, *, modern: bool) -> dict[str, Any]:
        return {"tools": {} if modern else {"listChanged": True}}

    def close(self) -> None:
        self.state = State.CLOSED

    def decorate(self, result: Mapping[str, Any], *, version: str, method: str) -> dict[str, Any]:
        """:func:`decorate_result` with this server's identity."""
        return decorate_result(result, version=version, method=method, server_info=self.server_info)

    def notice(self, notification: Notification) -> bool:
        """Take in a client notification; True when it should be passed on.

        ``notifications/initialized`` completes the legacy handshake and stops here.
        Anything arriving before an era is fixed, or after close, is dropped.
        """
        if notification.method == "notifications/initialized":
            if self.state is State.LEGACY_INITIALIZING:
                self.state = State.LEGACY_READY
            return False
        return self.state in (State.LEGACY_INITIALIZING, State.LEGACY_READY, State.MODERN)

    def admit(self, request: Request) -> Admission:
        match self.state:
            case State.NEW:
                return self._admit_new(request)
            case State.LEGACY_INITIALIZING | State.LEGACY_READY:
                return self._admit_legacy(request)
            case State.MODERN:
                return self._admit_modern(request)
        return Reject(INTERNAL_ERROR, "The server is shutting down")

    def _admit_new(self, request: Request) -> Admission:
        if request.method == "initialize":
            removed = modern_initialize(request.params)
            return removed if removed is not None else self._initialize(request.params)
        if carries_modern_envelope(request.params) or request.method == "server/discover":
            if request.method == "ping":
                return self._ping_removed()
            admission = self._admit_modern(request)
            if not isinstance(admission, Reject):
                self.state = State.MODERN
            return admission
        if request.method == "ping":
            return Answer({})
        return Reject(
            INVALID_REQUEST,
            f"Received '{request.method}' before initialize. Send initialize first "
            f"(protocol {SUPPORTED_LEGACY_VERSIONS[0]} to {LATEST_LEGACY_VERSION}), or carry "
            f"'{PROTOCOL_VERSION_KEY}' and '{CLIENT_CAPABILITIES_KEY}' in every request's _meta "
            f"(protocol {MODERN_VERSION}).",
        )

    def _admit_legacy(self, request: Request) -> Admission:
        assert self.legacy_version is not None
        if request.method == "initialize":
            return Reject(
                INVALID_REQUEST,
                f"Already initialized with protocol {self.legacy_version}; "
                "initialize is accepted once per connection",
            )
        if carries_modern_envelope(request.params):
            return Reject(
                INVALID_REQUEST,
                f"This connection was initialized with protocol {self.legacy_version}; "
                f"requests carrying the {MODERN_VERSION} _meta envelope are not accepted on it. "
                "Start a new connection to use the new protocol.",
            )
        if request.method == "ping":
            return Answer({})
        if request.method == "server/discover":
            return method_not_found(request.method)
        refusal = self._check_call_meta(request)
        if refusal is not None:
            return refusal
        return Dispatch(
            version=self.legacy_version,
            client_info=self.client_info,
            client_capabilities=self.client_capabilities,
            progress_token=progress_token_of(request.params),
        )

    def _admit_modern(self, request: Request) -> Admission:
        if request.method == "initialize":
            removed = modern_initialize(request.params)
            if removed is not None:
                return removed
            params = request.params if isinstance(request.params, Mapping) else {}
            rejection = unsupported_version(params.get("protocolVersion"))
            return Reject(
                rejection.code,
                f"This connection speaks protocol {MODERN_VERSION} with per-request _meta; "
                "initialize is not accepted on it",
                rejection.data,
            )
        if request.method == "ping":
            return self._ping_removed()
        admission = read_envelope(request.params)
        if isinstance(admission, Reject):
            return admission
        refusal = self._check_call_meta(request)
        if refusal is not None:
            return refusal
        if admission.client_info is not None:
            self.client_info = admission.client_info
        if request.method == "server/discover":
            return Answer(self._discover_result())
        return admission

    def _check_call_meta(self, request: Request) -> Reject | None:
        """A ``tools/call`` whose ``_meta`` or progress token is malformed is refused."""
        return check_request_meta(request.params) if request.method == "tools/call" else None

    def _ping_removed(self) -> Reject:
        message = f"Method not found: ping (removed in protocol {MODERN_VERSION})"
        return Reject(METHOD_NOT_FOUND, message, "ping")

    def _initialize(self, params: object) -> Admission:
        if not isinstance(params, Mapping):
            return Reject(INVALID_PARAMS, "Invalid params: initialize needs an object 'params'")
        requested = params.get("protocolVersion")
        if not isinstance(requested, str):
            return Reject(INVALID_PARAMS, "Invalid params: 'protocolVersion' must be a string")
        capabilities = params.get("capabilities", {})
        if not isinstance(capabilities, Mapping):
            return Reject(INVALID_PARAMS, "Invalid params: 'capabilities' must be an object")
        client_info = None
        if params.get("clientInfo") is not None:
            try:
                client_info = ClientInfo.from_wire(params["clientInfo"])
            except ValueError as exc:
                return Reject(INVALID_PARAMS, f"Invalid params: 'clientInfo' {exc}")
        negotiated = negotiate_version(requested)
        self.state = State.LEGACY_INITIALIZING
        self.legacy_version = negotiated
        self.client_info = client_info
        self.client_capabilities = dict(capabilities)
        return Answer(
            {
                "protocolVersion": negotiated,
                "capabilities": self._capabilities(modern=False),
                "serverInfo": dict(self.server_info),
                "instructions": self.instructions,
            }
        )

    def _discover_result(self) -> dict[str, Any]:
        result = {
            "supportedVersions": list(SUPPORTED_MODERN_VERSIONS),
            "capabilities": self._capabilities(modern=True),
            "instructions": self.instructions,
        }
        return self.decorate(result, version=MODERN_VERSION, method="server/discover")


def text_content(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def image_content(data_base64: str, mime_type: str) -> dict[str, Any]:
    return {"type": "image", "data": data_base64, "mimeType": mime_type}


def tool_result(
    structured: Any = None,
    *,
    text: str | None = None,
    content: Sequence[Mapping[str, Any]] = (),
    is_error: bool = False,
) -> dict[str, Any]:
    """A ``tools/call`` result: text for people first, then ``content``, then the data.

    With neither ``text`` nor ``content``, the structured value is serialized as JSON
    into the one text item, as the spec asks for clients that do not read
    ``structuredContent``.
    """
    if text is None and not content and structured is not None:
        text = orjson.dumps(structured).decode()
    blocks = [text_content(text)] if text is not None else []
    blocks.extend(dict(block) for block in content)
    result: dict[str, Any] = {"content": blocks, "isError": is_error}
    if structured is not None:
        result["structuredContent"] = structured
    return result


def tool_error(
    message: str, structured: Mapping[str, Any] | None = None, next_call: str | None = None
) -> dict[str, Any]:
    """A tool failure the model can act on: ``isError`` with ``message`` as its text, and
    in its structured part as ``error`` (clients that read that part show nothing else),
    with ``code`` and the ``next_call`` to make where there are some. Claude Code shows
    only the text of a failure, so the text names the next call too."""
    shown: dict[str, Any] = {"error": message, **(structured or {})}
    if next_call is not None:
        shown["next_call"] = next_call
        if next_call.partition("(")[0] not in message:
            message += f" Next: {next_call}"
    return tool_result(shown, text=message, is_error=True)


def progress_notification(
    token: str | int, progress: float, *, total: float | None = None, message: str | None = None
) -> Notification:
    if isinstance(token, bool) or not isinstance(token, str | int):
        raise TypeError("a progress token is a string or an integer")
    params: dict[str, Any] = {"progressToken": token, "progress": progress}
    if total is not None:
        params["total"] = total
    if message is not None:
        params["message"] = message
    return Notification("notifications/progress", params)


def tools_list_changed() -> Notification:
    return Notification("notifications/tools/list_changed")
