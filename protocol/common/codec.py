"""One mapping between frozen dataclasses and plain wire dicts.

``to_wire`` turns a message into a dict orjson can encode. ``from_wire``
(``wire_decoding``) builds a message from a decoded dict and checks every field against
its annotation, so a bad frame fails there, with the field named, before any actor sees
it. A field declared with ``metadata=OMIT_WHEN_NONE`` is left out of the wire while it
is None.

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
from typing import Any

import orjson

# The codec offers both directions: from_wire is written in wire_decoding.
from nbstage.protocol.common.wire_decoding import from_wire as from_wire

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
