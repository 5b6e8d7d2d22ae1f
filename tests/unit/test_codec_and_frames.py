"""The wire codec (dataclass <-> dict), the replies it carries and the frame envelope
(SPEC §5 Wire)."""

from __future__ import annotations

import asyncio
import dataclasses
import enum
import socket
import struct
import types
import typing
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, TypedDict

import orjson
import pytest

from nbstage.protocol.common.codec import OMIT_WHEN_NONE, dumps, from_wire, to_wire
from nbstage.protocol.common.errors import ErrorCode, NbstageError
from nbstage.protocol.daemon.frames import (
    MAX_FRAME_BYTES,
    WIRE_VERSION,
    FrameError,
    FrameKind,
    decode_body,
    decode_daemon_frame,
    encode_frame,
    read_frame,
    recv_frame,
)
from nbstage.protocol.daemon.replies import (
    REPLY_TYPES,
    CellsShown,
    CellsSummarized,
    DaemonRefused,
    decode_reply,
    reply_type,
)
from nbstage.protocol.daemon.requests import (
    REQUEST_TYPES,
    WIRE_NAMES,
    CellsFormat,
    GetCells,
    decode_request,
)

# --- building sample values from annotations --------------------------------------------


def _arms(hint: Any) -> tuple[Any, ...]:
    """The non-None types a field accepts."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return tuple(a for a in typing.get_args(hint) if a is not type(None))
    return (hint,)


def _optional(hint: Any) -> bool:
    return typing.get_origin(hint) in (typing.Union, types.UnionType) and type(
        None
    ) in typing.get_args(hint)


def _sample(hint: Any, name: str) -> Any:
    """A valid, non-default value for a field."""
    arm = _arms(hint)[0]
    origin = typing.get_origin(arm)
    if isinstance(arm, type) and issubclass(arm, enum.Enum):
        return list(arm)[-1]
    if dataclasses.is_dataclass(arm):
        return _full(arm)
    if typing.is_typeddict(arm):
        hints = typing.get_type_hints(arm).items()
        return {key: _sample(hint, f"{name}.{key}") for key, hint in hints}
    if origin is list:
        (item,) = typing.get_args(arm)
        return [_sample(item, f"{name}[0]")]
    if origin is tuple:
        return tuple(_sample(item, f"{name}[{i}]") for i, item in enumerate(typing.get_args(arm)))
    if arm is str:
        return f"sample-{name}"
    if arm is bool:
        return True
    if arm is int:
        return 7
    if arm is float:
        return 2.5
    if arm is dict or typing.get_origin(arm) is dict:
        return {"label": "tester", "pids": [1, 2]}
    raise AssertionError(f"no sample for {hint!r} ({name})")


def _wrong(hint: Any) -> Any:
    """A JSON value the field must refuse."""
    arm = _arms(hint)[0]
    if arm is str or (isinstance(arm, type) and issubclass(arm, enum.Enum)):
        return 12
    if arm is bool:
        return "yes"
    if arm in (int, float):
        return "seven"
    if arm is dict or typing.get_origin(arm) is dict:
        return ["not", "an", "object"]
    if typing.get_origin(arm) is list:
        return "not a list"
    raise AssertionError(f"no wrong value for {hint!r}")


def _required(cls: type) -> list[dataclasses.Field]:
    return [
        f
        for f in dataclasses.fields(cls)
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    ]


def _minimal(cls: type) -> Any:
    hints = typing.get_type_hints(cls)
    return cls(**{f.name: _sample(hints[f.name], f.name) for f in _required(cls)})


def _full(cls: type) -> Any:
    hints = typing.get_type_hints(cls)
    return cls(**{f.name: _sample(hints[f.name], f.name) for f in dataclasses.fields(cls)})


REQUEST_CLASSES = [pytest.param(cls, id=name) for name, cls in sorted(REQUEST_TYPES.items())]
FIELDS = [
    pytest.param(cls, f.name, id=f"{name}.{f.name}")
    for name, cls in sorted(REQUEST_TYPES.items())
    for f in dataclasses.fields(cls)
]
REQUIRED_FIELDS = [
    pytest.param(cls, f.name, id=f"{name}.{f.name}")
    for name, cls in sorted(REQUEST_TYPES.items())
    for f in _required(cls)
]


# --- request round trips ----------------------------------------------------------------


@pytest.mark.parametrize("cls", REQUEST_CLASSES)
def test_a_request_with_its_defaults_survives_a_round_trip(cls: type) -> None:
    message = _minimal(cls)
    wire = to_wire(message)
    assert list(wire) == [f.name for f in dataclasses.fields(cls)]
    assert from_wire(cls, orjson.loads(orjson.dumps(wire))) == message


@pytest.mark.parametrize("cls", REQUEST_CLASSES)
def test_a_request_with_every_field_set_survives_a_round_trip(cls: type) -> None:
    message = _full(cls)
    assert from_wire(cls, orjson.loads(orjson.dumps(to_wire(message)))) == message


@pytest.mark.parametrize("cls", REQUEST_CLASSES)
def test_leaving_out_optional_fields_gives_the_declared_defaults(cls: type) -> None:
    required = {f.name: _sample(typing.get_type_hints(cls)[f.name], f.name) for f in _required(cls)}
    assert from_wire(cls, required) == cls(**required)


@pytest.mark.parametrize("cls", REQUEST_CLASSES)
def test_decode_request_builds_the_class_registered_for_the_type(cls: type) -> None:
    message = _full(cls)
    frame = {"v": WIRE_VERSION, "type": WIRE_NAMES[cls], "id": 9, **to_wire(message)}
    assert decode_request(frame) == message


def test_every_registered_type_maps_back_to_its_wire_name() -> None:
    assert {WIRE_NAMES[cls]: cls for cls in REQUEST_TYPES.values()} == REQUEST_TYPES


# --- request field errors ---------------------------------------------------------------


@pytest.mark.parametrize(("cls", "field_name"), FIELDS)
def test_a_wrong_type_in_a_field_is_a_bad_request_naming_the_field(
    cls: type, field_name: str
) -> None:
    data = to_wire(_minimal(cls))
    data[field_name] = _wrong(typing.get_type_hints(cls)[field_name])
    with pytest.raises(NbstageError) as info:
        from_wire(cls, data)
    assert info.value.code is ErrorCode.BAD_REQUEST
    assert f"'{field_name}'" in info.value.message


@pytest.mark.parametrize(("cls", "field_name"), FIELDS)
def test_null_is_refused_exactly_where_the_field_is_not_optional(
    cls: type, field_name: str
) -> None:
    data = to_wire(_minimal(cls))
    data[field_name] = None
    if _optional(typing.get_type_hints(cls)[field_name]):
        assert getattr(from_wire(cls, data), field_name) is None
    else:
        with pytest.raises(NbstageError) as info:
            from_wire(cls, data)
        assert info.value.code is ErrorCode.BAD_REQUEST
        assert f"'{field_name}'" in info.value.message


@pytest.mark.parametrize(("cls", "field_name"), REQUIRED_FIELDS)
def test_a_missing_required_field_is_a_bad_request_naming_it(cls: type, field_name: str) -> None:
    data = to_wire(_minimal(cls))
    del data[field_name]
    with pytest.raises(NbstageError) as info:
        from_wire(cls, data)
    assert info.value.code is ErrorCode.BAD_REQUEST
    assert info.value.message == f"missing field '{field_name}'"


@pytest.mark.parametrize(
    ("kind", "fields", "field_name"),
    [
        pytest.param("get_cells", {"start": True}, "start", id="a boolean is not an integer"),
        pytest.param("get_cells", {"start": 1.0}, "start", id="a float is not an integer"),
        pytest.param("execute", {"wait_secs": False}, "wait_secs", id="a boolean is not a number"),
        pytest.param("create", {"ephemeral": 0}, "ephemeral", id="zero is not a boolean"),
        pytest.param("create", {"ephemeral": "false"}, "ephemeral", id="a string is no boolean"),
        pytest.param("watch", {"client": "me"}, "client", id="a string is not an object"),
    ],
)
def test_near_miss_values_are_refused(kind: str, fields: dict, field_name: str) -> None:
    cls = REQUEST_TYPES[kind]
    data = {**to_wire(_minimal(cls)), **fields}
    with pytest.raises(NbstageError) as info:
        from_wire(cls, data)
    assert f"'{field_name}'" in info.value.message


def test_an_integer_is_accepted_where_a_number_is_expected_and_becomes_a_float() -> None:
    request = from_wire(
        REQUEST_TYPES["execute"], {"notebook_id": "n", "cell_id": "c", "wait_secs": 3}
    )
    assert request.wait_secs == 3.0
    assert isinstance(request.wait_secs, float)


def test_unknown_fields_are_ignored() -> None:
    request = from_wire(REQUEST_TYPES["open"], {"path": "/a.ipynb", "colour": "blue"})
    assert request == REQUEST_TYPES["open"]("/a.ipynb")


@pytest.mark.parametrize("data", [[], "open", 3, None], ids=["a list", "a string", "int", "null"])
def test_a_request_body_that_is_not_an_object_is_a_bad_request(data: object) -> None:
    with pytest.raises(NbstageError) as info:
        from_wire(REQUEST_TYPES["open"], data)
    assert info.value.code is ErrorCode.BAD_REQUEST
    assert "must be an object" in info.value.message


def test_an_unknown_request_type_is_refused_and_the_known_types_are_listed() -> None:
    with pytest.raises(NbstageError) as info:
        decode_request({"v": 1, "type": "teleport", "id": 1})
    assert info.value.code is ErrorCode.UNKNOWN_REQUEST
    assert "'teleport'" in info.value.message
    for name in REQUEST_TYPES:
        assert name in info.value.message


@pytest.mark.parametrize(
    ("frame", "named"),
    [
        pytest.param({"type": "attach", "notebook_id": "n", "notebookid": "n"}, "notebookid"),
        pytest.param({"type": "identity", "verbose": True}, "verbose"),
        pytest.param(
            {"type": "manage_dependencies", "notebook_id": "n", "fingerprint": "f"},
            "fingerprint",
            id="a misspelt guard is refused, not skipped",
        ),
    ],
)
def test_a_field_the_request_does_not_have_is_refused_by_name(frame: dict, named: str) -> None:
    with pytest.raises(NbstageError) as info:
        decode_request({"v": 1, "id": 1, **frame})
    assert info.value.code is ErrorCode.BAD_REQUEST
    assert f"unknown field {named!r}" in info.value.message


def test_decode_request_ignores_the_envelope_keys() -> None:
    request = decode_request({"v": 1, "type": "attach", "id": "req-1", "notebook_id": "n"})
    assert request == REQUEST_TYPES["attach"]("n")


# --- replies ------------------------------------------------------------------------------

REPLY_CLASSES = sorted({*REPLY_TYPES.values(), CellsShown, DaemonRefused}, key=lambda c: c.__name__)


def test_every_request_type_has_a_reply_type() -> None:
    assert set(REPLY_TYPES) == set(REQUEST_TYPES.values())


@pytest.mark.parametrize(
    ("request_", "expected"),
    [
        pytest.param(GetCells("n"), CellsSummarized, id="get_cells summarizes by default"),
        pytest.param(GetCells("n", CellsFormat.JSON), CellsShown, id="get_cells as json shows"),
        *(
            pytest.param(_minimal(cls), REPLY_TYPES[cls], id=name)
            for name, cls in sorted(REQUEST_TYPES.items())
            if cls is not GetCells
        ),
    ],
)
def test_each_request_expects_its_reply_type(request_: object, expected: type) -> None:
    assert reply_type(request_) is expected


@pytest.mark.parametrize("cls", [pytest.param(c, id=c.__name__) for c in REPLY_CLASSES])
def test_a_reply_is_a_frozen_slotted_dataclass(cls: type) -> None:
    assert dataclasses.is_dataclass(cls)
    assert cls.__dataclass_params__.frozen
    assert "__slots__" in cls.__dict__


@pytest.mark.parametrize("cls", [pytest.param(c, id=c.__name__) for c in REPLY_CLASSES])
def test_a_reply_with_every_field_set_survives_a_round_trip(cls: type) -> None:
    reply = _full(cls)
    assert from_wire(cls, orjson.loads(orjson.dumps(to_wire(reply)))) == reply


@pytest.mark.parametrize("cls", [pytest.param(c, id=c.__name__) for c in REPLY_CLASSES])
def test_dumps_writes_what_to_wire_gives(cls: type) -> None:
    reply = _full(cls)
    assert orjson.loads(dumps(reply)) == orjson.loads(orjson.dumps(to_wire(reply)))


@pytest.mark.parametrize("cls", [pytest.param(c, id=c.__name__) for c in REPLY_CLASSES])
def test_decode_reply_reads_a_result_frame_as_the_expected_reply(cls: type) -> None:
    reply = _full(cls)
    frame = {"v": 1, "id": 3, "type": "result", "result": to_wire(reply)}
    assert decode_reply(orjson.loads(orjson.dumps(frame)), cls) == reply


def test_decode_reply_reads_an_error_frame_as_a_refusal() -> None:
    frame = {"v": 1, "id": 3, "type": "error", "error": {"code": "no_kernel", "message": "none"}}
    assert decode_reply(frame, CellsShown) == DaemonRefused(ErrorCode.NO_KERNEL, "none")


def test_a_refusal_with_an_unknown_code_is_rejected() -> None:
    with pytest.raises(NbstageError) as info:
        from_wire(DaemonRefused, {"code": "daemon_on_fire", "message": "it burns"})
    assert "field 'code' must be one of" in info.value.message


@pytest.mark.parametrize(
    ("frame", "phrase"),
    [
        pytest.param(
            {"type": "result", "result": {"cells": []}},
            "malformed CellsShown: missing field 'total'",
            id="a missing field",
        ),
        pytest.param(
            {"type": "result", "result": {"cells": {}, "total": 1}},
            "malformed CellsShown: field 'cells' must be a list",
            id="a field of the wrong shape",
        ),
        pytest.param(
            {"type": "error", "error": {"code": "daemon_on_fire", "message": "it burns"}},
            "malformed refusal: field 'code' must be one of",
            id="a refusal with an unknown code",
        ),
        pytest.param(
            {"type": "heartbeat", "identity": {}},
            "'heartbeat' frame where CellsShown was due",
            id="a frame that is no answer",
        ),
    ],
)
def test_a_malformed_reply_is_a_bad_reply_saying_what_is_wrong(frame: dict, phrase: str) -> None:
    with pytest.raises(NbstageError) as info:
        decode_reply({"v": 1, "id": 3, **frame}, CellsShown)
    assert info.value.code is ErrorCode.BAD_REPLY
    assert phrase in info.value.message


# --- the codec's other shapes -----------------------------------------------------------


class Colour(StrEnum):
    RED = "red"
    BLUE = "blue"


@dataclass(frozen=True)
class Inner:
    n: int


@dataclass(frozen=True)
class Outer:
    colour: Colour
    inner: Inner
    numbers: list[int]
    inners: list[Inner]
    maybe: Inner | None = None
    extra: dict[str, Any] | None = None


@dataclass(frozen=True)
class Unsupported:
    things: set[int]


@dataclass(frozen=True)
class Pair:
    pair: tuple[int, float]


@dataclass(frozen=True)
class Note:
    text: str | None = dataclasses.field(default=None, metadata=OMIT_WHEN_NONE)
    kept: str | None = None


def _outer() -> Outer:
    return Outer(Colour.BLUE, Inner(1), [1, 2], [Inner(3), Inner(4)], Inner(5), {"k": [1]})


def test_enums_nested_dataclasses_and_lists_become_plain_values() -> None:
    assert to_wire(_outer()) == {
        "colour": "blue",
        "inner": {"n": 1},
        "numbers": [1, 2],
        "inners": [{"n": 3}, {"n": 4}],
        "maybe": {"n": 5},
        "extra": {"k": [1]},
    }


def test_enums_nested_dataclasses_and_lists_survive_a_round_trip() -> None:
    assert from_wire(Outer, orjson.loads(orjson.dumps(to_wire(_outer())))) == _outer()


def test_a_tuple_goes_out_as_a_list() -> None:
    assert to_wire(Inner((1, 2)))["n"] == [1, 2]


def test_a_field_omitted_when_none_is_on_the_wire_only_when_set() -> None:
    assert to_wire(Note()) == {"kept": None}
    assert to_wire(Note("hi")) == {"text": "hi", "kept": None}
    assert from_wire(Note, to_wire(Note())) == Note()


def test_dumps_leaves_out_a_none_that_to_wire_omits() -> None:
    @dataclass(frozen=True)
    class Holder:
        note: Note
        notes: list[Note]

    assert orjson.loads(dumps(Note())) == {"kept": None}
    assert orjson.loads(dumps(Holder(Note(), [Note("x")]))) == {
        "note": {"kept": None},
        "notes": [{"text": "x", "kept": None}],
    }
    assert orjson.loads(dumps(_outer())) == to_wire(_outer())


class Row(TypedDict):
    name: str
    size: float
    tag: str | None


@dataclass(frozen=True)
class Rows:
    rows: list[Row]


def test_a_typeddict_row_is_checked_and_kept_as_the_same_dict() -> None:
    row = {"name": "a", "size": 1.5, "tag": None}
    decoded = from_wire(Rows, {"rows": [row]})
    assert decoded.rows[0] is row


def test_a_typeddict_row_gets_its_declared_types_and_loses_unknown_keys() -> None:
    row = {"name": "a", "size": 2, "tag": "t", "later": True}
    (decoded,) = from_wire(Rows, {"rows": [row]}).rows
    assert decoded == {"name": "a", "size": 2.0, "tag": "t"}
    assert type(decoded["size"]) is float
    assert row == {"name": "a", "size": 2, "tag": "t", "later": True}


@pytest.mark.parametrize(
    ("row", "phrase"),
    [
        ({"name": "a", "size": 1.0}, "missing field 'rows[0].tag'"),
        ({"name": 3, "size": 1.0, "tag": None}, "field 'rows[0].name' must be a string"),
        ({"name": "a", "size": "big", "tag": None}, "field 'rows[0].size' must be a number"),
        ("row", "field 'rows[0]' must be an object"),
    ],
)
def test_a_bad_typeddict_row_is_refused_with_the_field_named(row: object, phrase: str) -> None:
    with pytest.raises(NbstageError) as info:
        from_wire(Rows, {"rows": [row]})
    assert phrase in info.value.message


def test_a_tuple_field_comes_back_as_a_tuple_of_its_types() -> None:
    assert from_wire(Pair, {"pair": [1, 2]}) == Pair((1, 2.0))


@pytest.mark.parametrize(
    ("value", "phrase"),
    [
        pytest.param([1], "field 'pair' must be a list of 2 items", id="too short"),
        pytest.param([1, 2.0, 3], "field 'pair' must be a list of 2 items", id="too long"),
        pytest.param({"a": 1}, "field 'pair' must be a list of 2 items", id="not a list"),
        pytest.param([1.5, 2.0], "field 'pair[0]' must be an integer", id="a wrong item"),
    ],
)
def test_a_tuple_field_wants_a_list_of_its_length(value: object, phrase: str) -> None:
    with pytest.raises(NbstageError) as info:
        from_wire(Pair, {"pair": value})
    assert phrase in info.value.message


@pytest.mark.parametrize(
    ("change", "phrase"),
    [
        pytest.param({"colour": "green"}, "field 'colour' must be one of 'red', 'blue'", id="enum"),
        pytest.param({"numbers": [1, "2"]}, "field 'numbers[1]' must be an integer", id="item"),
        pytest.param({"numbers": {"a": 1}}, "field 'numbers' must be a list", id="list"),
        pytest.param({"inner": {"n": "x"}}, "field 'n' must be an integer", id="nested field"),
        pytest.param({"inner": {}}, "missing field 'n'", id="nested missing field"),
        pytest.param({"inners": [{"n": 1}, 5]}, "Inner must be an object", id="nested item"),
        pytest.param({"extra": [1]}, "field 'extra' must be an object", id="optional object"),
    ],
)
def test_errors_in_nested_shapes_name_what_is_wrong(change: dict, phrase: str) -> None:
    data = {**to_wire(_outer()), **change}
    with pytest.raises(NbstageError) as info:
        from_wire(Outer, data)
    assert info.value.code is ErrorCode.BAD_REQUEST
    assert phrase in info.value.message


def test_an_unsupported_annotation_is_a_programming_error_naming_the_field() -> None:
    with pytest.raises(TypeError, match="things"):
        from_wire(Unsupported, {"things": [1]})


# --- frames: encoding and envelopes -----------------------------------------------------


def _body(size: int) -> dict[str, Any]:
    """A valid frame payload whose encoding is exactly ``size`` bytes."""
    payload = {"v": 1, "type": "pad", "id": 1, "pad": ""}
    overhead = len(orjson.dumps(payload))
    payload["pad"] = "a" * (size - overhead)
    assert len(orjson.dumps(payload)) == size
    return payload


def test_a_frame_is_a_big_endian_length_followed_by_the_orjson_body() -> None:
    payload = {"v": 1, "type": "identity", "id": 3}
    frame = encode_frame(payload)
    body = orjson.dumps(payload)
    assert frame[:4] == len(body).to_bytes(4, "big")
    assert frame[4:] == body
    assert decode_body(frame[4:]) == payload


def test_a_frame_of_exactly_the_limit_is_encoded() -> None:
    frame = encode_frame(_body(MAX_FRAME_BYTES))
    assert struct.unpack(">I", frame[:4])[0] == MAX_FRAME_BYTES


def test_a_frame_one_byte_over_the_limit_is_refused() -> None:
    with pytest.raises(FrameError, match="exceeds"):
        encode_frame(_body(MAX_FRAME_BYTES + 1))


@pytest.mark.parametrize(
    "frame_id", [0, -1, 2**63 - 1, "", "req-7", "ü"], ids=lambda v: f"id {v!r}"
)
def test_integer_and_string_ids_are_accepted(frame_id: object) -> None:
    payload = {"v": 1, "type": "identity", "id": frame_id, "extra": [1, {"a": None}]}
    assert decode_body(orjson.dumps(payload)) == payload


@pytest.mark.parametrize(
    ("body", "phrase"),
    [
        pytest.param(b"", "not valid JSON", id="an empty body"),
        pytest.param(b"{", "not valid JSON", id="cut-off JSON"),
        pytest.param(b"\xff\xfe", "not valid JSON", id="bytes that are not UTF-8"),
        pytest.param(b'{"v":1,"type":"x","id":1} x', "not valid JSON", id="trailing garbage"),
        pytest.param(b"[1, 2]", "must be a JSON object", id="a list"),
        pytest.param(b'"identity"', "must be a JSON object", id="a string"),
        pytest.param(b"null", "must be a JSON object", id="null"),
        pytest.param(b'{"type":"x","id":1}', "v=1", id="no version"),
        pytest.param(b'{"v":2,"type":"x","id":1}', "v=1", id="another version"),
        pytest.param(b'{"v":"1","type":"x","id":1}', "v=1", id="the version as a string"),
        pytest.param(b'{"v":true,"type":"x","id":1}', "v=1", id="the version as true"),
        pytest.param(b'{"v":1.0,"type":"x","id":1}', "v=1", id="the version as a float"),
        pytest.param(b'{"v":1,"id":1}', "'type'", id="no type"),
        pytest.param(b'{"v":1,"type":5,"id":1}', "'type'", id="a numeric type"),
        pytest.param(b'{"v":1,"type":null,"id":1}', "'type'", id="a null type"),
        pytest.param(b'{"v":1,"type":"x"}', "'id'", id="no id"),
        pytest.param(b'{"v":1,"type":"x","id":null}', "'id'", id="a null id"),
        pytest.param(b'{"v":1,"type":"x","id":true}', "'id'", id="a boolean id"),
        pytest.param(b'{"v":1,"type":"x","id":1.5}', "'id'", id="a float id"),
        pytest.param(b'{"v":1,"type":"x","id":[1]}', "'id'", id="a list id"),
    ],
)
def test_a_bad_body_is_a_frame_error_saying_what_is_wrong(body: bytes, phrase: str) -> None:
    with pytest.raises(FrameError) as info:
        decode_body(body)
    assert phrase in str(info.value)


@pytest.mark.parametrize(
    ("body", "said"),
    [
        pytest.param(b"{", "session frame is not valid JSON", id="cut-off JSON"),
        pytest.param(b"[1]", "session frame must be a JSON object", id="a list"),
        pytest.param(b"null\0raw", "session frame must be a JSON object", id="null, then raw"),
    ],
)
def test_a_session_frame_that_is_no_json_object_is_refused_the_same_way(
    body: bytes, said: str
) -> None:
    """Both frame formats read their object through frames.json_object."""
    from nbstage.protocol.session import session_frames

    with pytest.raises(FrameError) as info:
        session_frames.decode(body)
    assert str(info.value).startswith(said)


# --- frames: reading from a stream ------------------------------------------------------


def _read_all(data: bytes, eof: bool = True) -> list[Any]:
    """Feed ``data`` to a StreamReader and read frames until None or an error."""

    async def run() -> list[Any]:
        reader = asyncio.StreamReader()
        reader.feed_data(data)
        if eof:
            reader.feed_eof()
        frames: list[Any] = []
        while True:
            try:
                frame = await asyncio.wait_for(read_frame(reader), 5)
            except FrameError as exc:
                frames.append(exc)
                return frames
            frames.append(frame)
            if frame is None:
                return frames

    return asyncio.run(run())


FRAME_A = {"v": 1, "type": "identity", "id": 1}
FRAME_B = {"v": 1, "type": "open", "id": "two", "path": "/x.ipynb"}


def test_frames_are_read_in_order_and_a_clean_end_gives_none() -> None:
    assert _read_all(encode_frame(FRAME_A) + encode_frame(FRAME_B)) == [FRAME_A, FRAME_B, None]


def test_an_empty_stream_gives_none() -> None:
    assert _read_all(b"") == [None]


@pytest.mark.parametrize("cut", [1, 2, 3], ids=lambda n: f"{n} header bytes")
def test_a_stream_ending_inside_a_header_is_a_frame_error(cut: int) -> None:
    (error,) = _read_all(encode_frame(FRAME_A)[:cut])
    assert isinstance(error, FrameError)
    assert "header" in str(error)


@pytest.mark.parametrize("missing", [1, 10], ids=lambda n: f"{n} bytes short")
def test_a_stream_ending_inside_a_body_is_a_frame_error(missing: int) -> None:
    (error,) = _read_all(encode_frame(FRAME_A)[:-missing])
    assert isinstance(error, FrameError)
    assert "body" in str(error)


def test_a_header_over_the_limit_fails_at_once_without_waiting_for_the_body() -> None:
    (error,) = _read_all(struct.pack(">I", MAX_FRAME_BYTES + 1), eof=False)
    assert isinstance(error, FrameError)
    assert "exceeds" in str(error)


def test_a_header_of_exactly_the_limit_is_read() -> None:
    payload = _body(MAX_FRAME_BYTES)
    frames = _read_all(encode_frame(payload))
    assert frames == [payload, None]


def test_a_bad_body_in_a_stream_is_a_frame_error() -> None:
    (error,) = _read_all(struct.pack(">I", 2) + b"[]")
    assert isinstance(error, FrameError)


# --- frames: blocking reads from a socket -----------------------------------------------


@pytest.fixture
def pair():
    left, right = socket.socketpair()
    left.settimeout(5)
    right.settimeout(5)
    yield left, right
    left.close()
    right.close()


REPLY_A = {"v": 1, "type": "heartbeat", "id": 1}
REPLY_B = {"v": 1, "type": "result", "id": "two", "result": {"path": "/x.ipynb"}}


def test_recv_frame_reads_a_frame_sent_in_pieces(pair) -> None:
    left, right = pair
    data = encode_frame(REPLY_B)
    for i in range(len(data)):
        right.sendall(data[i : i + 1])
    assert recv_frame(left) == REPLY_B


def test_recv_frame_reads_back_to_back_frames(pair) -> None:
    left, right = pair
    right.sendall(encode_frame(REPLY_A) + encode_frame(REPLY_B))
    assert [recv_frame(left), recv_frame(left)] == [REPLY_A, REPLY_B]


@pytest.mark.parametrize("kind", list(FrameKind))
def test_a_daemon_frame_s_type_is_read_as_its_kind(kind: FrameKind) -> None:
    frame = decode_daemon_frame(orjson.dumps({"v": 1, "type": kind.value, "id": None}))
    assert frame["type"] is kind


def test_a_daemon_frame_of_no_known_kind_is_malformed(pair) -> None:
    left, right = pair
    right.sendall(encode_frame(FRAME_B))
    with pytest.raises(FrameError, match="sends no 'open' frame"):
        recv_frame(left)


def test_recv_frame_says_the_peer_closed_inside_a_frame(pair) -> None:
    left, right = pair
    right.sendall(encode_frame(FRAME_A)[:-1])
    right.close()
    with pytest.raises(ConnectionError):
        recv_frame(left)


def test_recv_frame_refuses_an_oversized_header_without_reading_on(pair) -> None:
    left, right = pair
    right.sendall(struct.pack(">I", MAX_FRAME_BYTES + 1))
    with pytest.raises(FrameError, match="exceeds"):
        recv_frame(left)
