"""A tool's arguments from a call, and the JSON schema that describes them: both read
off the tool's argument dataclass (``tool_args``)."""

from __future__ import annotations

import dataclasses
import enum
import types
import typing
from typing import Any

from nbstage.protocol.common.codec import from_wire
from nbstage.protocol.common.errors import ErrorCode, NbstageError
from nbstage.protocol.common.paths import check_paths


def decode_arguments(tool: str, args: type, arguments: object) -> Any:
    """``arguments`` as an ``args`` instance; unknown names and wrong types are errors
    naming the argument (and ``tool``)."""
    arguments = {} if arguments is None else arguments
    if not isinstance(arguments, dict):
        raise NbstageError(ErrorCode.BAD_REQUEST, "arguments must be an object")
    known = {f.name for f in dataclasses.fields(args)}
    unknown = sorted(set(arguments) - known)
    if unknown:
        raise NbstageError(
            ErrorCode.BAD_REQUEST,
            f"unknown argument {unknown[0]!r} for {tool}; "
            f"it takes {', '.join(sorted(known)) or 'no arguments'}",
        )
    return check_paths(from_wire(args, arguments))


def input_schema(args: type) -> dict[str, Any]:
    hints = typing.get_type_hints(args)
    properties, required = {}, []
    for f in dataclasses.fields(args):
        prop = {**_schema_of(hints[f.name]), "description": f.metadata.get("description", "")}
        if f.default_factory is not dataclasses.MISSING:
            prop["default"] = f.default_factory()
        elif f.default is dataclasses.MISSING:
            required.append(f.name)
        elif isinstance(f.default, enum.Enum):
            prop["default"] = f.default.value
        elif f.default is not None:
            prop["default"] = f.default
        properties[f.name] = prop
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    schema["additionalProperties"] = False
    return schema


def _schema_of(hint: Any) -> dict[str, Any]:
    """The JSON schema of one argument type.

    A union is ``anyOf`` its arms, ``{"type": "null"}`` last for an optional one; never
    a ``type`` array, which single-type dialects (Gemini function declarations, the
    MCP Inspector's strict check) refuse.
    """
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        arms = typing.get_args(hint)
        schemas = [_schema_of(a) for a in arms if a is not type(None)]
        if type(None) in arms:
            schemas.append({"type": "null"})
        return schemas[0] if len(schemas) == 1 else {"anyOf": schemas}
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return {"type": "string", "enum": [member.value for member in hint]}
    if origin is list:
        return {"type": "array", "items": _schema_of(typing.get_args(hint)[0])}
    names = {str: "string", bool: "boolean", int: "integer", float: "number"}
    return {"type": names[hint]}


MAX_ARGUMENT_DEPTH = 64
"""No tool takes arguments nested deeper; the frames to the session child could not
carry arguments nested past about 250 levels."""


def nested_deeper_than(value: object, limit: int) -> bool:
    """Whether lists and objects inside ``value`` go more than ``limit`` levels deep."""
    level = [value]
    for _ in range(limit + 1):
        level = [
            child
            for item in level
            if isinstance(item, dict | list)
            for child in (item.values() if isinstance(item, dict) else item)
        ]
        if not level:
            return False
    return True
