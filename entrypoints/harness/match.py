"""Harness values: ``${name.key}`` substitution, tool outcomes and expectation checks.

A saved value is a call's structuredContent. ``${nb.notebook_id}`` reads a key, dotted
paths walk deeper (``${r.executions.0.status}``; digits index lists), and a string that is
exactly one substitution takes the saved value's own JSON type. ``${run.work_dir}`` and
``${run.state_dir}`` are the run's own directories.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import orjson

from nbstage.protocol.common.frozen import frozen

if TYPE_CHECKING:
    from nbstage.entrypoints.harness.model import Expect

BUILTIN_NAME = "run"
BUILTIN_KEYS = ("work_dir", "state_dir")
_ANY_REF = re.compile(r"\$\{([^}]*)\}")
_REF = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)((?:\.[^.]+)*)\Z")
SHOWN_CHARS = 300


class SubstitutionError(Exception):
    def __init__(self, message: str, name: str | None = None) -> None:
        super().__init__(message)
        self.name = name


def _parse_ref(inner: str) -> tuple[str, tuple[str, ...]]:
    match = _REF.match(inner)
    if match is None:
        raise SubstitutionError(f"bad substitution ${{{inner}}}: use ${{name}} or ${{name.key}}")
    path = match.group(2)
    return match.group(1), tuple(path[1:].split(".")) if path else ()


def references(value: object) -> Iterator[tuple[str, tuple[str, ...]]]:
    """Every (name, path) that ``value`` refers to, in strings nested at any depth."""
    if isinstance(value, str):
        for match in _ANY_REF.finditer(value):
            yield _parse_ref(match.group(1))
    elif isinstance(value, dict):
        for item in value.values():
            yield from references(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from references(item)


def lookup(saved: dict[str, Any], name: str, path: tuple[str, ...]) -> Any:
    if name not in saved:
        raise SubstitutionError(f"${{{name}...}}: nothing was saved as {name!r}", name)
    value = saved[name]
    walked = name
    for key in path:
        if isinstance(value, dict) and key in value:
            value = value[key]
        elif isinstance(value, list) and key.isdigit() and int(key) < len(value):
            value = value[int(key)]
        else:
            raise SubstitutionError(f"{walked} has no {key!r} (it is {shorten(show(value), 120)})")
        walked = f"{walked}.{key}"
    return value


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else orjson.dumps(value).decode()


def substitute(value: Any, saved: dict[str, Any]) -> Any:
    """``value`` with every ``${...}`` replaced from ``saved``; raises SubstitutionError."""
    if isinstance(value, str):
        whole = _ANY_REF.fullmatch(value)
        if whole:
            return lookup(saved, *_parse_ref(whole.group(1)))
        return _ANY_REF.sub(lambda m: _as_text(lookup(saved, *_parse_ref(m.group(1)))), value)
    if isinstance(value, dict):
        return {key: substitute(item, saved) for key, item in value.items()}
    if isinstance(value, list):
        return [substitute(item, saved) for item in value]
    if isinstance(value, tuple):
        return tuple(substitute(item, saved) for item in value)
    return value


# --- outcomes and expectations -----------------------------------------------------------


@frozen
class Outcome:
    """What one tool call came back with, reduced to what expectations look at."""

    is_error: bool
    text: str
    structured: dict[str, Any] | None
    rpc_error: bool = False
    """The server answered with a JSON-RPC error instead of a tool result."""

    def summary(self, limit: int = SHOWN_CHARS) -> str:
        parts = [f"is_error={str(self.is_error).lower()}", f"text={shorten(self.text, limit)!r}"]
        if self.structured is not None:
            parts.append(f"structuredContent={shorten(show(self.structured), limit)}")
        return ", ".join(parts)

    def to_json(self, limit: int = 4000) -> dict[str, Any]:
        return {
            "is_error": self.is_error,
            "rpc_error": self.rpc_error,
            "text": shorten(self.text, limit),
            "structured": self.structured,
        }


def show(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS, default=str).decode()


def shorten(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    head = limit * 2 // 3
    return f"{text[:head]} …[{len(text) - limit} chars]… {text[len(text) - (limit - head) :]}"


def execution_status(structured: dict[str, Any] | None) -> str | None:
    """``execution.status``, or for run_all_cells the last execution's status."""
    if not structured:
        return None
    execution = structured.get("execution")
    if isinstance(execution, dict):
        return execution.get("status")
    executions = structured.get("executions")
    if isinstance(executions, list) and executions and isinstance(executions[-1], dict):
        return executions[-1].get("status")
    return None


def _same(expected: Any, actual: Any) -> bool:
    """Exact equality, except that 2 and 2.0 agree; true is never 1."""
    if isinstance(expected, bool) or isinstance(actual, bool):
        return type(expected) is type(actual) and expected == actual
    if isinstance(expected, int | float) and isinstance(actual, int | float):
        return expected == actual
    if isinstance(expected, list) and isinstance(actual, list):
        pairs = zip(expected, actual, strict=False)
        return len(expected) == len(actual) and all(_same(e, a) for e, a in pairs)
    return type(expected) is type(actual) and expected == actual


def subset_mismatch(expected: Any, actual: Any, path: str = "") -> str | None:
    """Where ``actual`` fails to contain ``expected``: dicts recursively, the rest exactly."""
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return f"{path or 'structuredContent'} is {shorten(show(actual), 120)}, not an object"
        for key, want in expected.items():
            where = f"{path}.{key}" if path else key
            if key not in actual:
                return f"{where} is missing"
            problem = subset_mismatch(want, actual[key], where)
            if problem:
                return problem
        return None
    if _same(expected, actual):
        return None
    return f"{path} is {shorten(show(actual), 120)}, expected {shorten(show(expected), 120)}"


def check(expect: Expect, outcome: Outcome) -> list[str]:
    """The expectations that ``outcome`` misses, each said in a few words; [] when it passes."""
    problems = []
    if outcome.is_error != expect.is_error:
        problems.append(f"is_error {str(expect.is_error).lower()}")
    if expect.status is not None:
        status = execution_status(outcome.structured)
        if status != expect.status:
            problems.append(f"status {expect.status!r} (got {status!r})")
    problems += [f"text containing {s!r}" for s in expect.text_contains if s not in outcome.text]
    problems += [f"text without {s!r}" for s in expect.text_not_contains if s in outcome.text]
    if expect.json is not None:
        mismatch = subset_mismatch(expect.json, outcome.structured or {})
        if mismatch:
            problems.append(f"json subset ({mismatch})")
    return problems
