from __future__ import annotations

import pytest

from nbstage.protocol.mcp.jsonrpc import (
    INVALID_REQUEST,
    PARSE_ERROR,
    ErrorResponse,
    JsonRpcError,
    Notification,
    Request,
    Response,
    encode,
    parse_line,
)


@pytest.mark.parametrize(
    "line",
    [
        pytest.param(b"hello", id="plain text is not JSON"),
        pytest.param(b'{"jsonrpc": "2.0", "id": 1', id="a truncated object is not JSON"),
        pytest.param(b"", id="an empty line is not JSON"),
        pytest.param(b"   \n", id="a line of whitespace is not JSON"),
        pytest.param(b'{"jsonrpc": "2.0"} {"x": 1}', id="two objects on one line are not JSON"),
        pytest.param(b'{"method": "\xff\xfe"}', id="invalid UTF-8 is not JSON"),
        pytest.param(b"{'jsonrpc': '2.0'}", id="single quotes are not JSON"),
    ],
)
def test_a_line_that_is_not_json_is_a_parse_error_without_an_id(line: bytes) -> None:
    with pytest.raises(JsonRpcError) as caught:
        parse_line(line)
    assert caught.value.code == PARSE_ERROR
    assert caught.value.id is None


@pytest.mark.parametrize(
    ("line", "fragment", "reply_id"),
    [
        pytest.param(b"[]", "batches", None, id="an empty batch is refused"),
        pytest.param(
            b'[{"jsonrpc": "2.0", "id": 1, "method": "ping"}]',
            "batches",
            None,
            id="a batch of one request is refused",
        ),
        pytest.param(b'"ping"', "JSON object", None, id="a bare string is not a message"),
        pytest.param(b"42", "JSON object", None, id="a bare number is not a message"),
        pytest.param(b"null", "JSON object", None, id="null is not a message"),
        pytest.param(b'{"id": 1, "method": "ping"}', '"jsonrpc"', 1, id="jsonrpc is missing"),
        pytest.param(
            b'{"jsonrpc": "1.0", "id": 1, "method": "ping"}',
            '"jsonrpc"',
            1,
            id="jsonrpc 1.0 is the wrong version",
        ),
        pytest.param(
            b'{"jsonrpc": 2.0, "id": "a", "method": "ping"}',
            '"jsonrpc"',
            "a",
            id="jsonrpc as a number is the wrong version",
        ),
        pytest.param(
            b'{"jsonrpc": "2.0", "id": 1, "method": 5}',
            '"method"',
            1,
            id="a numeric method is refused",
        ),
        pytest.param(
            b'{"jsonrpc": "2.0", "id": 1, "method": null}',
            '"method"',
            1,
            id="a null method is refused",
        ),
        pytest.param(
            b'{"jsonrpc": "2.0", "id": null, "method": "ping"}',
            '"id"',
            None,
            id="a request with a null id is refused",
        ),
        pytest.param(
            b'{"jsonrpc": "2.0", "id": 1.5, "method": "ping"}',
            '"id"',
            None,
            id="a fractional id is refused",
        ),
        pytest.param(
            b'{"jsonrpc": "2.0", "id": 1.0, "method": "ping"}',
            '"id"',
            None,
            id="a float id is refused even when whole",
        ),
        pytest.param(
            b'{"jsonrpc": "2.0", "id": 99999999999999999999999, "method": "ping"}',
            '"id"',
            None,
            id="an id too large for 64 bits reads as a float and is refused",
        ),
        pytest.param(
            b'{"jsonrpc": "2.0", "id": true, "method": "ping"}',
            '"id"',
            None,
            id="a boolean id is refused",
        ),
        pytest.param(
            b'{"jsonrpc": "2.0", "id": {"n": 1}, "method": "ping"}',
            '"id"',
            None,
            id="an object id is refused",
        ),
        pytest.param(
            b'{"jsonrpc": "2.0", "id": 3, "method": "ping", "params": "x"}',
            '"params"',
            3,
            id="string params are refused",
        ),
        pytest.param(
            b'{"jsonrpc": "2.0", "id": 3, "method": "ping", "params": 7}',
            '"params"',
            3,
            id="numeric params are refused",
        ),
        pytest.param(
            b'{"jsonrpc": "2.0", "id": 3, "method": "ping", "params": null}',
            '"params"',
            3,
            id="null params are refused",
        ),
        pytest.param(
            b'{"jsonrpc": "2.0", "method": "notifications/x", "params": true}',
            '"params"',
            None,
            id="a notification with boolean params is refused",
        ),
        pytest.param(
            b'{"jsonrpc": "2.0", "id": 4, "method": "ping", "result": {}}',
            "both",
            4,
            id="a message with method and result is refused",
        ),
        pytest.param(
            b'{"jsonrpc": "2.0", "id": 4, "result": {}, "error": {"code": 1, "message": "x"}}',
            "both",
            4,
            id="a response with result and error is refused",
        ),
        pytest.param(b'{"jsonrpc": "2.0", "id": 4}', "needs", 4, id="an id alone is not a message"),
        pytest.param(
            b'{"jsonrpc": "2.0", "id": null, "result": {}}',
            '"id"',
            None,
            id="a success response with a null id is refused",
        ),
        pytest.param(
            b'{"jsonrpc": "2.0", "result": {}}',
            '"id"',
            None,
            id="a success response without an id is refused",
        ),
        pytest.param(
            b'{"jsonrpc": "2.0", "error": {"code": 1, "message": "x"}}',
            '"id"',
            None,
            id="an error response without an id is refused",
        ),
        pytest.param(
            b'{"jsonrpc": "2.0", "id": 5, "error": "boom"}',
            '"error"',
            5,
            id="an error that is not an object is refused",
        ),
        pytest.param(
            b'{"jsonrpc": "2.0", "id": 5, "error": {"message": "boom"}}',
            '"code"',
            5,
            id="an error without a code is refused",
        ),
        pytest.param(
            b'{"jsonrpc": "2.0", "id": 5, "error": {"code": true, "message": "boom"}}',
            '"code"',
            5,
            id="an error with a boolean code is refused",
        ),
        pytest.param(
            b'{"jsonrpc": "2.0", "id": 5, "error": {"code": -1}}',
            '"message"',
            5,
            id="an error without a message is refused",
        ),
    ],
)
def test_a_malformed_message_is_an_invalid_request_answered_with_its_id_when_readable(
    line: bytes, fragment: str, reply_id: str | int | None
) -> None:
    with pytest.raises(JsonRpcError) as caught:
        parse_line(line)
    assert caught.value.code == INVALID_REQUEST
    assert fragment in caught.value.message
    assert caught.value.id == reply_id


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        pytest.param(
            b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}\n',
            Request(1, "ping"),
            id="a request without params",
        ),
        pytest.param(
            b'{"jsonrpc":"2.0","id":"abc","method":"tools/call","params":{"name":"x"}}\r\n',
            Request("abc", "tools/call", {"name": "x"}),
            id="a request with a string id and CRLF ending",
        ),
        pytest.param(
            b'{"jsonrpc": "2.0", "id": 0, "method": "m", "params": [1, 2]}',
            Request(0, "m", [1, 2]),
            id="a request with array params and id zero",
        ),
        pytest.param(
            b'{"jsonrpc": "2.0", "id": -7, "method": "m", "extra": 1}',
            Request(-7, "m"),
            id="a request with a negative id and an unknown member",
        ),
        pytest.param(
            b'  {"jsonrpc": "2.0", "method": "notifications/initialized"}  ',
            Notification("notifications/initialized"),
            id="a notification surrounded by spaces",
        ),
        pytest.param(
            b'{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 3}}',
            Notification("notifications/cancelled", {"requestId": 3}),
            id="a notification with params",
        ),
        pytest.param(
            b'{"jsonrpc": "2.0", "id": 2, "result": {"ok": true}}',
            Response(2, {"ok": True}),
            id="a success response",
        ),
        pytest.param(
            b'{"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "bad"}}',
            ErrorResponse(None, -32700, "bad"),
            id="an error response with a null id",
        ),
        pytest.param(
            b'{"jsonrpc": "2.0", "id": "q", "error": {"code": 5, "message": "m", "data": [1]}}',
            ErrorResponse("q", 5, "m", [1]),
            id="an error response with data",
        ),
    ],
)
def test_a_well_formed_line_parses_into_its_message(line: bytes, expected: object) -> None:
    assert parse_line(line) == expected


MESSAGES = [
    pytest.param(Request(1, "ping"), id="a request without params"),
    pytest.param(
        Request("r-1", "tools/call", {"name": "get_cell", "arguments": {"cell_id": "a"}}),
        id="a request with nested params",
    ),
    pytest.param(Request(2, "m", [1, "two"]), id="a request with array params"),
    pytest.param(Notification("notifications/tools/list_changed"), id="a bare notification"),
    pytest.param(
        Notification("notifications/progress", {"progressToken": "t", "progress": 1.5}),
        id="a progress notification with a float",
    ),
    pytest.param(Response(3, {}), id="an empty result"),
    pytest.param(
        Response(4, {"content": [{"type": "text", "text": "line one\nline two\r\n\ttabbed"}]}),
        id="a result whose text holds newlines and tabs",
    ),
    pytest.param(
        Response("x", {"text": "naïve ✓ \U0001d518 \u2028 \x00"}),
        id="a result with non-ASCII, a line separator and a NUL",
    ),
    pytest.param(ErrorResponse(None, -32700, "Parse error"), id="an error with a null id"),
    pytest.param(
        ErrorResponse(5, -32022, "Unsupported", {"supported": ["2026-07-28"], "requested": "x"}),
        id="an error with data",
    ),
]


@pytest.mark.parametrize("message", MESSAGES)
def test_an_encoded_message_parses_back_to_itself(message: object) -> None:
    assert parse_line(encode(message)) == message


@pytest.mark.parametrize("message", MESSAGES)
def test_an_encoded_message_is_one_line_ending_in_a_newline(message: object) -> None:
    line = encode(message)
    assert line.endswith(b"\n")
    assert line.count(b"\n") == 1
    assert b"\r" not in line


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        pytest.param(
            Request(1, "ping"), b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n', id="no params key"
        ),
        pytest.param(
            Notification("notifications/tools/list_changed"),
            b'{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}\n',
            id="a notification has no id",
        ),
        pytest.param(
            ErrorResponse(7, -32601, "Method not found"),
            b'{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"Method not found"}}\n',
            id="no data key when data is None",
        ),
        pytest.param(
            ErrorResponse(None, -32700, "Parse error"),
            b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}\n',
            id="an unknown id is written as null",
        ),
    ],
)
def test_encode_writes_compact_json_without_empty_members(message: object, expected: bytes) -> None:
    assert encode(message) == expected


def test_encode_refuses_something_that_is_not_a_message() -> None:
    with pytest.raises(TypeError):
        encode({"jsonrpc": "2.0"})  # type: ignore[arg-type]


def test_a_json_rpc_error_becomes_an_error_response_with_its_id() -> None:
    with pytest.raises(JsonRpcError) as caught:
        parse_line(b'{"jsonrpc": "2.0", "id": 9, "method": 1}')
    assert caught.value.to_response() == ErrorResponse(9, INVALID_REQUEST, caught.value.message)
