"""JSON-RPC 2.0 framing for MCP over stdio: one UTF-8 JSON message per line.

``parse_line`` turns one line into a :class:`Request`, :class:`Notification`,
:class:`Response` or :class:`ErrorResponse`, or raises :class:`JsonRpcError` carrying
the code and, when it could be read, the id to answer with. ``encode`` is the way
back: compact JSON ending in a single ``\\n``.

MCP narrows JSON-RPC in three ways that are enforced here: request ids are strings
or integers and never null, batches (top-level arrays) are refused since protocol
2025-06-18, and every message is a JSON object.
"""

from __future__ import annotations

from typing import Any, Final, TypeGuard

import orjson

from nbstage.protocol.common.frozen import frozen

JSONRPC_VERSION: Final = "2.0"

PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
METHOD_NOT_FOUND: Final = -32601
INVALID_PARAMS: Final = -32602
INTERNAL_ERROR: Final = -32603

# MCP codes in the -32000..-32099 server-error band.
RESOURCE_NOT_FOUND: Final = -32002
"""Resource not found, protocol 2025-11-25 and earlier (2026-07-28 uses -32602)."""
URL_ELICITATION_REQUIRED: Final = -32042
"""A URL-mode elicitation must happen first (2025-11-25 only)."""
HEADER_MISMATCH: Final = -32020
"""HTTP headers disagree with the request body (2026-07-28, HTTP transport only)."""
MISSING_REQUIRED_CLIENT_CAPABILITY: Final = -32021
"""The request lacks a client capability the server needs (2026-07-28)."""
UNSUPPORTED_PROTOCOL_VERSION: Final = -32022
"""The request's ``_meta`` protocol version is not served (2026-07-28)."""

RequestId = str | int
Params = dict[str, Any] | list[Any] | None


@frozen
class Request:
    id: RequestId
    method: str
    params: Params = None


@frozen
class Notification:
    method: str
    params: Params = None


@frozen
class Response:
    id: RequestId
    result: Any


@frozen
class ErrorResponse:
    """An error reply; ``id`` is None when the failed message's id could not be read."""

    id: RequestId | None
    code: int
    message: str
    data: Any = None


Message = Request | Notification | Response | ErrorResponse


class JsonRpcError(Exception):
    """A line that cannot be accepted, with the code and id to answer it with."""

    def __init__(self, code: int, message: str, id: RequestId | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.id = id

    def __repr__(self) -> str:
        return f"JsonRpcError({self.code}, {self.message!r}, id={self.id!r})"

    def to_response(self) -> ErrorResponse:
        return ErrorResponse(self.id, self.code, self.message)


def _is_id(value: object) -> TypeGuard[str | int]:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def parse_line(line: bytes) -> Message:
    """Decode one line (trailing newline allowed) into a message, or raise JsonRpcError."""
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        raise JsonRpcError(PARSE_ERROR, f"Parse error: {exc}") from None
    if isinstance(obj, list):
        raise JsonRpcError(INVALID_REQUEST, "Invalid request: JSON-RPC batches are not supported")
    if not isinstance(obj, dict):
        raise JsonRpcError(INVALID_REQUEST, "Invalid request: a message must be a JSON object")

    raw_id = obj.get("id")
    reply_id = raw_id if _is_id(raw_id) else None

    def invalid(reason: str) -> JsonRpcError:
        return JsonRpcError(INVALID_REQUEST, f"Invalid request: {reason}", reply_id)

    if obj.get("jsonrpc") != JSONRPC_VERSION:
        raise invalid('"jsonrpc" must be "2.0"')

    if "method" in obj:
        if "result" in obj or "error" in obj:
            raise invalid('a message cannot carry both "method" and "result"/"error"')
        method = obj["method"]
        if not isinstance(method, str):
            raise invalid('"method" must be a string')
        params = obj.get("params")
        if "params" in obj and not isinstance(params, dict | list):
            raise invalid('"params" must be an object or an array')
        if "id" not in obj:
            return Notification(method, params)
        if not _is_id(raw_id):
            raise invalid('"id" must be a string or an integer')
        return Request(raw_id, method, params)

    if "result" in obj and "error" in obj:
        raise invalid('a response cannot carry both "result" and "error"')
    if "result" in obj:
        if not _is_id(raw_id):
            raise invalid('a response "id" must be a string or an integer')
        return Response(raw_id, obj["result"])
    if "error" in obj:
        if "id" not in obj or not (raw_id is None or _is_id(raw_id)):
            raise invalid('an error response "id" must be a string, an integer or null')
        error = obj["error"]
        if not isinstance(error, dict):
            raise invalid('"error" must be an object')
        code, message = error.get("code"), error.get("message")
        if not isinstance(code, int) or isinstance(code, bool) or not isinstance(message, str):
            raise invalid('"error" needs an integer "code" and a string "message"')
        return ErrorResponse(raw_id, code, message, error.get("data"))
    raise invalid('a message needs "method", "result" or "error"')


def to_wire(message: Message) -> dict[str, Any]:
    """The JSON-RPC object for ``message``, as plain values."""
    match message:
        case Request(id=id_, method=method, params=params):
            wire: dict[str, Any] = {"jsonrpc": JSONRPC_VERSION, "id": id_, "method": method}
            if params is not None:
                wire["params"] = params
            return wire
        case Notification(method=method, params=params):
            wire = {"jsonrpc": JSONRPC_VERSION, "method": method}
            if params is not None:
                wire["params"] = params
            return wire
        case Response(id=id_, result=result):
            return {"jsonrpc": JSONRPC_VERSION, "id": id_, "result": result}
        case ErrorResponse(id=id_, code=code, message=text, data=data):
            error: dict[str, Any] = {"code": code, "message": text}
            if data is not None:
                error["data"] = data
            return {"jsonrpc": JSONRPC_VERSION, "id": id_, "error": error}
    raise TypeError(f"not a JSON-RPC message: {message!r}")


def encode(message: Message) -> bytes:
    """One line of compact JSON for ``message``, ending in ``b"\\n"``.

    orjson escapes control characters inside strings, so the only raw newline in
    the output is the terminator.
    """
    return orjson.dumps(to_wire(message)) + b"\n"


def encode_response(request_id: RequestId, result_json: bytes) -> bytes:
    """A success response around an already encoded result, as one line."""
    return b"".join(
        (b'{"jsonrpc":"2.0","id":', orjson.dumps(request_id), b',"result":', result_json, b"}\n")
    )
