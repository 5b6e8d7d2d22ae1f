"""One mapping between frozen dataclasses and plain wire dicts.

``to_wire`` turns a message into a dict orjson can encode. ``from_wire`` builds a
message from a decoded dict and checks every field against its annotation, so a
bad frame fails here, with the field named, before any actor sees it.
Only the shapes the wire uses are supported: str, int, float, bool, None,
``X | None``, ``list[X]``, ``tuple[X, Y]``, ``dict[str, Any]``, StrEnums, nested
dataclasses and TypedDicts. A tuple travels as a list of its length. A field declared
with ``metadata=OMIT_WHEN_NONE`` is left out of the wire while it is None. A TypedDict
is for rows that come in bulk (a cell summary): it is checked key by key and kept as
the dict it arrived as, so a 1,000-row answer builds no objects.

``dumps`` encodes a message straight to JSON bytes. orjson writes dataclasses, enums
and tuples itself, in C, and gives the same JSON as ``to_wire``; only a type with an
``OMIT_WHEN_NONE`` field somewhere inside goes through ``to_wire`` first.

Both directions are compiled once per type (``functools.cache``) into plain
functions, because a 1,000-cell answer is 1,000 nested dataclasses: reading the
annotations on every value cost about 0.4 s per answer.
"""

from __future__ import annotations

import dataclasses
import enum
import types
import typing
from collections.abc import Callable
from functools import cache
from typing import Any, TypeVar

import orjson

from nbstage.protocol.common.errors import ErrorCode, NbstageError

OMIT_WHEN_NONE = types.MappingProxyType({"omit_when_none": True})


def dumps(message: object) -> bytes:
    """The message as JSON bytes, equal to ``orjson.dumps(to_wire(message))``."""
    # Any: typeshed's functools.cache takes Hashable arguments, which mypy does not see a
    # class as
    cls: Any = type(message)
    if _orjson_writes_alone(cls):
        return orjson.dumps(message)
    return orjson.dumps(to_wire(message))


@cache
def _orjson_writes_alone(cls: type) -> bool:
    """True when no field of ``cls``, or of a dataclass inside it, omits a None."""
    if any(f.metadata.get("omit_when_none") for f in dataclasses.fields(cls)):
        return False
    return not any(_omits_somewhere(hint) for hint in typing.get_type_hints(cls).values())


def _omits_somewhere(hint: Any) -> bool:
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return not _orjson_writes_alone(hint)
    return any(_omits_somewhere(arg) for arg in typing.get_args(hint))


def to_wire(message: object) -> dict[str, Any]:
    """Return the message's fields as a dict of plain values."""
    cls: Any = type(message)
    return _encoder(cls)(message)


@cache
def _encoder(cls: type) -> Callable[[object], dict[str, Any]]:
    fields = tuple(
        (f.name, bool(f.metadata.get("omit_when_none"))) for f in dataclasses.fields(cls)
    )

    def encode(message: object) -> dict[str, Any]:
        wire: dict[str, Any] = {}
        for name, omit_when_none in fields:
            value = getattr(message, name)
            if type(value) in _AS_IS:
                wire[name] = value
            elif value is not None:
                wire[name] = _plain(value)
            elif not omit_when_none:
                wire[name] = None
        return wire

    return encode


def _as_is_types(hint: Any) -> frozenset[type] | None:
    """The exact types a field of this annotation holds unchanged on the wire, when it is
    a plain scalar (optionally nullable); None for anything that needs converting or
    checking in depth. Decoding takes a value of one of these types as it is, and sends
    anything else through the full check, which gives the error message."""
    arms = (
        typing.get_args(hint)
        if typing.get_origin(hint) in (typing.Union, types.UnionType)
        else (hint,)
    )
    if all(arm in (str, int, bool, type(None)) for arm in arms):
        return frozenset(arms)
    return None


_AS_IS = frozenset({str, int, float, bool, dict})


def _plain(value: object) -> object:
    if type(value) in _AS_IS:
        return value
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return to_wire(value)
    return value


T = TypeVar("T")
Decoder = Callable[[object, str], object]


def from_wire(cls: type[T], data: object) -> T:
    """Build ``cls`` from ``data``; raise NbstageError(BAD_REQUEST) naming the bad field."""
    key: Any = cls
    made: T = _class_decoder(key)(data)
    return made


@cache
def _class_decoder(cls: type) -> Callable[[object], Any]:
    hints = typing.get_type_hints(cls)
    fields = []
    for f in dataclasses.fields(cls):
        try:
            decode = _decoder(hints[f.name])
        except TypeError as exc:
            raise TypeError(f"{exc} (field {f.name} of {cls.__name__})") from None
        required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        fields.append((f.name, decode, required, _as_is_types(hints[f.name]) or frozenset()))

    def build(data: object) -> Any:
        if not isinstance(data, dict):
            raise NbstageError(ErrorCode.BAD_REQUEST, f"{cls.__name__} must be an object")
        kwargs: dict[str, Any] = {}
        for name, decode, required, as_is in fields:
            if name in data:
                value = data[name]
                kwargs[name] = value if type(value) in as_is else decode(value, name)
            elif required:
                raise NbstageError(ErrorCode.BAD_REQUEST, f"missing field '{name}'")
        return cls(**kwargs)

    return build


@cache
def _decoder(hint: Any) -> Decoder:
    """The checking function for one annotation, built once."""
    origin = typing.get_origin(hint)
    if hint is Any:
        return _as_is
    if origin in (typing.Union, types.UnionType):
        return _union_decoder(typing.get_args(hint))
    if origin is list:
        return _list_decoder(_decoder(typing.get_args(hint)[0]))
    if origin is tuple:
        return _tuple_decoder(tuple(_decoder(item) for item in typing.get_args(hint)))
    if origin is dict or hint is dict:
        return _object_decoder
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return _enum_decoder(hint)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        build = _class_decoder(hint)
        return lambda value, name: build(value)
    if typing.is_typeddict(hint):
        return _typeddict_decoder(hint)
    if hint in _SCALAR_DECODERS:
        return _SCALAR_DECODERS[hint]
    raise TypeError(f"codec does not support {hint!r}")


def _as_is(value: object, name: str) -> object:
    return value


def _union_decoder(arms: tuple[Any, ...]) -> Decoder:
    nullable = type(None) in arms
    decoders = [_decoder(arm) for arm in arms if arm is not type(None)]

    def decode(value: object, name: str) -> object:
        if value is None and nullable:
            return None
        errors = []
        for arm in decoders:
            try:
                return arm(value, name)
            except NbstageError as exc:
                errors.append(exc.message)
        raise NbstageError(ErrorCode.BAD_REQUEST, errors[0] if errors else f"bad field '{name}'")

    return decode


def _typeddict_decoder(kind: Any) -> Decoder:
    hints = typing.get_type_hints(kind)
    keys = tuple(
        (key, _decoder(hint), key in kind.__required_keys__, _as_is_types(hint) or frozenset())
        for key, hint in hints.items()
    )

    def decode(value: object, name: str) -> object:
        if not isinstance(value, dict):
            raise _wrong(name, "an object", value)
        checked = value
        present = 0
        for key, check, required, as_is in keys:
            if key not in value:
                if required:
                    raise NbstageError(ErrorCode.BAD_REQUEST, f"missing field '{name}.{key}'")
                continue
            present += 1
            item = value[key]
            if type(item) in as_is:
                continue
            fixed = check(item, f"{name}.{key}")
            if fixed is not item:
                if checked is value:
                    checked = dict(value)
                checked[key] = fixed
        if present != len(value):
            checked = {key: checked[key] for key in hints if key in checked}
        return checked

    return decode


def _list_decoder(item: Decoder) -> Decoder:
    """Items are named (``cells[3]``) only once one of them is refused, by checking the list
    again: naming each of 1,000 summary rows cost a fifth of checking them."""

    def decode(value: object, name: str) -> object:
        if not isinstance(value, list):
            raise _wrong(name, "a list", value)
        try:
            return [item(v, name) for v in value]
        except NbstageError:
            return [item(v, f"{name}[{i}]") for i, v in enumerate(value)]

    return decode


def _tuple_decoder(items: tuple[Decoder, ...]) -> Decoder:
    def decode(value: object, name: str) -> object:
        if not isinstance(value, list) or len(value) != len(items):
            raise NbstageError(
                ErrorCode.BAD_REQUEST, f"field '{name}' must be a list of {len(items)} items"
            )
        pairs = enumerate(zip(items, value, strict=True))
        return tuple(item(v, f"{name}[{i}]") for i, (item, v) in pairs)

    return decode


def _object_decoder(value: object, name: str) -> object:
    if not isinstance(value, dict):
        raise _wrong(name, "an object", value)
    return value


def _enum_decoder(kind: type[enum.Enum]) -> Decoder:
    def decode(value: object, name: str) -> object:
        try:
            return kind(value)
        except ValueError:
            allowed = ", ".join(repr(m.value) for m in kind)
            raise NbstageError(
                ErrorCode.BAD_REQUEST, f"field '{name}' must be one of {allowed}"
            ) from None

    return decode


def _number(value: object, name: str) -> object:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _wrong(name, "a number", value)
    return float(value)


def _integer(value: object, name: str) -> object:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _wrong(name, "an integer", value)
    return value


def _string(value: object, name: str) -> object:
    if not isinstance(value, str):
        raise _wrong(name, "a string", value)
    return value


def _boolean(value: object, name: str) -> object:
    if not isinstance(value, bool):
        raise _wrong(name, "a boolean", value)
    return value


_SCALAR_DECODERS: dict[Any, Decoder] = {
    float: _number,
    int: _integer,
    str: _string,
    bool: _boolean,
}


def _wrong(name: str, expected: str, value: object) -> NbstageError:
    return NbstageError(
        ErrorCode.BAD_REQUEST, f"field '{name}' must be {expected}, not {type(value).__name__}"
    )
