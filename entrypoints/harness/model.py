"""The shape of a harness script once read (SPEC §9), and the checks its values go through.

:mod:`script` reads the file and :mod:`steps` its steps; both raise
:class:`ScriptError` with one line that names the table, step and line at fault.
"""

from __future__ import annotations

import math
from dataclasses import field
from typing import Any

from nbstage.protocol.common.frozen import frozen

MODES = ("legacy", "2026-07-28")
STATUSES = ("queued", "running", "done", "error", "cancelled")
DEFAULT_TIMEOUT_SECS = 300.0


class ScriptError(Exception):
    """A script that must not run; the message is the one line to show."""


@frozen
class Expect:
    is_error: bool = False
    status: str | None = None
    text_contains: tuple[str, ...] = ()
    text_not_contains: tuple[str, ...] = ()
    json: dict[str, Any] | None = None
    within_secs: float | None = None


@frozen
class Step:
    number: int
    line: int | None
    group: str | None = None
    client: str | None = None
    call: str | None = None
    args: dict[str, Any] = field(default_factory=dict)
    save: str | None = None
    expect: Expect = Expect()
    fault: str | None = None
    params: dict[str, Any] = field(default_factory=dict)


@frozen
class ClientSpec:
    name: str
    label: str
    mode: str = "legacy"
    cwd: str | None = None


@frozen
class RunSpec:
    name: str
    timeout_secs: float = DEFAULT_TIMEOUT_SECS
    settings: dict[str, str] = field(default_factory=dict)
    """Environment variables (NBSTAGE_*) for the daemon and the clients."""
    state_dir: str | None = None


@frozen
class Script:
    run: RunSpec
    clients: dict[str, ClientSpec]
    steps: tuple[Step, ...]


def batches(steps: tuple[Step, ...] | list[Step]) -> list[list[Step]]:
    """Consecutive steps that share a group run together; every other step runs alone."""
    out: list[list[Step]] = []
    for step in steps:
        if out and step.group is not None and out[-1][-1].group == step.group:
            out[-1].append(step)
        else:
            out.append([step])
    return out


def at_line(line: int | None) -> str:
    return f" (line {line})" if line else ""


def where(step: Step) -> str:
    return f"step {step.number}{at_line(step.line)}"


def table_of(value: object, what: str, line: int | None = None) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ScriptError(f"{what}{at_line(line)}: must be a table")
    return value


def no_unknown(table: dict[str, Any], allowed: tuple[str, ...], context: str = "") -> None:
    for key in table:
        if key not in allowed:
            raise ScriptError(f"unknown key {key!r}{context} (allowed: {', '.join(allowed)})")


def number_of(value: object, what: str, positive: bool = True) -> float:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or value < 0 or (positive and value == 0):
        raise ScriptError(f"{what} must be a {'positive' if positive else 'non-negative'} number")
    return float(value)


def string_of(value: object, what: str) -> str:
    if not isinstance(value, str) or not value:
        raise ScriptError(f"{what} must be a non-empty string")
    return value
