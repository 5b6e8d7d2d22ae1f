"""One mapping between frozen dataclasses and plain wire dicts.

``to_wire`` turns a message into a dict orjson can encode. ``from_wire`` builds a
message from a decoded dict and checks every field against its annotation, so a
bad frame fails here, with the field named, before any actor sees it.
Only the shapes the wire uses are supported: str, int, float, bool, None,
``X | None``, ``list[X]``, ``tuple[X, Y]``, ``dict[str, Any]``, StrEnums and nested
dataclasses. A tuple travels as a list of its length. A field declared with
``metadata=OMIT_WHEN_NONE`` is left out of the wire while it is None.
"""

from __future__ import annotations

import dataclasses
import enum
import types
import typing
from functools import cache
from typing import Any, TypeVar

from nbstage.protocol.errors import ErrorCode, NbstageError

OMIT_WHEN_NONE = types.MappingProxyType({"omit_when_none": True})


def to_wire(message: object) -> dict[str, Any]:
    """Return the message's fields as a dict of plain values."""
    wire = {}
    for f in dataclasses.fields(message):
        value = getattr(message, f.name)
        if value is not None or not f.metadata.get("omit_when_none"):
            wire[f.name] = _plain(value)
    return wire


def _plain(value: object) -> object:
    if isinstance(value, enum.Enum):
        return value.value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return to_wire(value)
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


T = TypeVar("T")


def from_wire(cls: type[T], data: object) -> T:
    """Build ``cls`` from ``data``; raise NbstageError(BAD_REQUEST) naming the bad field."""
    if not isinstance(data, dict):
        raise NbstageError(ErrorCode.BAD_REQUEST, f"{cls.__name__} must be an object")
    hints = _hints(cls)
    kwargs: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.name in data:
            kwargs[f.name] = _check(hints[f.name], data[f.name], f.name)
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise NbstageError(ErrorCode.BAD_REQUEST, f"missing field '{f.name}'")
    return cls(**kwargs)


@cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _check(hint: Any, value: object, name: str) -> object:
    origin = typing.get_origin(hint)
    if hint is Any:
        return value
    if origin in (typing.Union, types.UnionType):
        arms = typing.get_args(hint)
        if value is None and type(None) in arms:
            return None
        errors = []
        for arm in arms:
            if arm is type(None):
                continue
            try:
                return _check(arm, value, name)
            except NbstageError as exc:
                errors.append(exc.message)
        raise NbstageError(ErrorCode.BAD_REQUEST, errors[0] if errors else f"bad field '{name}'")
    if origin is list:
        if not isinstance(value, list):
            raise _wrong(name, "a list", value)
        (item,) = typing.get_args(hint)
        return [_check(item, v, f"{name}[{i}]") for i, v in enumerate(value)]
    if origin is tuple:
        items = typing.get_args(hint)
        if not isinstance(value, list) or len(value) != len(items):
            raise NbstageError(
                ErrorCode.BAD_REQUEST, f"field '{name}' must be a list of {len(items)} items"
            )
        pairs = enumerate(zip(items, value, strict=True))
        return tuple(_check(item, v, f"{name}[{i}]") for i, (item, v) in pairs)
    if origin is dict or hint is dict:
        if not isinstance(value, dict):
            raise _wrong(name, "an object", value)
        return value
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        try:
            return hint(value)
        except ValueError:
            allowed = ", ".join(repr(m.value) for m in hint)
            raise NbstageError(
                ErrorCode.BAD_REQUEST, f"field '{name}' must be one of {allowed}"
            ) from None
    if dataclasses.is_dataclass(hint):
        return from_wire(hint, value)
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise _wrong(name, "a number", value)
        return float(value)
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise _wrong(name, "an integer", value)
        return value
    if hint in (str, bool):
        if not isinstance(value, hint):
            raise _wrong(name, "a string" if hint is str else "a boolean", value)
        return value
    raise TypeError(f"codec does not support {hint!r} (field {name})")


def _wrong(name: str, expected: str, value: object) -> NbstageError:
    return NbstageError(
        ErrorCode.BAD_REQUEST, f"field '{name}' must be {expected}, not {type(value).__name__}"
    )
