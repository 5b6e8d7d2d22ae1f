"""How a request travels: each request class is registered under its wire ``type`` with
:func:`wire_request`, and ``decode_request`` turns a checked frame into one, naming any
bad field. The classes register when ``protocol/daemon/requests.py`` imports them."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, TypeVar

from nbstage.protocol.common.codec import from_wire
from nbstage.protocol.common.errors import ErrorCode, NbstageError
from nbstage.protocol.common.labels import check_labels
from nbstage.protocol.common.paths import check_paths

REQUEST_TYPES: dict[str, type] = {}

WIRE_NAMES: dict[type, str] = {}

REQUEST_FIELDS: dict[type, frozenset[str]] = {}

ENVELOPE = ("v", "type", "id")

_R = TypeVar("_R", bound=type)


def wire_request(name: str) -> Callable[[_R], _R]:
    def register(cls: _R) -> _R:
        REQUEST_TYPES[name] = cls
        WIRE_NAMES[cls] = name
        REQUEST_FIELDS[cls] = frozenset(f.name for f in dataclasses.fields(cls))
        return cls

    return register


def decode_request(frame: dict[str, Any]) -> object:
    """Build the request a checked frame asks for; a field the request does not have is
    refused by name, like a missing or mistyped one (the envelope's keys are not fields)."""
    cls = REQUEST_TYPES.get(frame["type"])
    if cls is None:
        names = ", ".join(sorted(REQUEST_TYPES))
        raise NbstageError(
            ErrorCode.UNKNOWN_REQUEST, f"unknown request type {frame['type']!r}; known: {names}"
        )
    fields = {k: v for k, v in frame.items() if k not in ENVELOPE}
    known = REQUEST_FIELDS[cls]
    unknown = sorted(set(fields) - known)
    if unknown:
        takes = ", ".join(sorted(known)) or "no fields"
        raise NbstageError(
            ErrorCode.BAD_REQUEST,
            f"unknown field {unknown[0]!r} for {frame['type']!r}; it takes {takes}",
        )
    return check_labels(check_paths(from_wire(cls, fields)))
