"""Judging one MCP request's envelope, and what the lifecycle may decide about it.

An :data:`Admission` is :class:`Answer` (the lifecycle replies itself), :class:`Reject`
(a JSON-RPC error) or :class:`Dispatch` (hand the request on, with the protocol version
and client identity it runs under). The checks here read a request's ``params`` and
``_meta`` only: whether it carries the 2026-07-28 envelope, whether that envelope is
well formed and names a served version, and whether a ``tools/call``'s progress token
is usable. Nothing here does I/O or holds state.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field
from typing import Any, Final

from nbstage.protocol.common.frozen import frozen
from nbstage.protocol.mcp.jsonrpc import (
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    UNSUPPORTED_PROTOCOL_VERSION,
    ErrorResponse,
    RequestId,
    Response,
)
from nbstage.protocol.mcp.versions import (
    CLIENT_CAPABILITIES_KEY,
    CLIENT_INFO_KEY,
    ENVELOPE_KEYS,
    LATEST_LEGACY_VERSION,
    LOG_LEVEL_KEY,
    LOG_LEVELS,
    MODERN_VERSION,
    PROTOCOL_VERSION_KEY,
    SUPPORTED_LEGACY_VERSIONS,
    SUPPORTED_MODERN_VERSIONS,
    is_modern_version,
)


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
