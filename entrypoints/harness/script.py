"""Harness scripts (SPEC §9): reading a TOML scenario and refusing a bad one before it runs.

Everything here is pure: :func:`parse_script` turns text into a :class:`Script` or raises
:class:`ScriptError` with one line that names the table, step and line at fault.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import fields
from pathlib import Path
from typing import Any

from nbstage.entrypoints.harness.match import (
    BUILTIN_KEYS,
    BUILTIN_NAME,
    SubstitutionError,
    references,
)
from nbstage.entrypoints.harness.model import (
    DEFAULT_TIMEOUT_SECS,
    MODES,
    ClientSpec,
    RunSpec,
    Script,
    ScriptError,
    Step,
    at_line,
    batches,
    no_unknown,
    number_of,
    string_of,
    table_of,
    where,
)
from nbstage.entrypoints.harness.steps import parse_step
from nbstage.protocol.common.settings import VARIABLE_SETTINGS, Settings, env_name

RUN_KEYS = ("name", "timeout_secs", "settings", "state_dir")
CLIENT_KEYS = ("label", "mode", "cwd")


def load_script(path: str | Path) -> Script:
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise ScriptError(f"{path}: cannot read: {exc.strerror}") from None
    try:
        return parse_script(text, path.stem)
    except ScriptError as exc:
        raise ScriptError(f"{path}: {exc}") from None


def parse_script(text: str, default_name: str = "harness run") -> Script:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ScriptError(f"not valid TOML: {exc}") from None
    lines = _HeaderLines(text)
    no_unknown(data, ("run", "clients", "step"), " at the top level")
    run = _parse_run(table_of(data.get("run", {}), "[run]", lines.table("run")), default_name)
    clients = _parse_clients(table_of(data.get("clients", {}), "[clients]", None), lines)
    raw_steps = data.get("step", [])
    if not isinstance(raw_steps, list) or not raw_steps:
        raise ScriptError("no [[step]] entries: a script needs at least one step")
    steps = tuple(
        parse_step(raw, number, lines.step(number, len(raw_steps)), clients)
        for number, raw in enumerate(raw_steps, start=1)
    )
    check_references(steps)
    return Script(run, clients, steps)


def check_references(steps: tuple[Step, ...]) -> None:
    """Every ${name.key} must name a save made by a step in an earlier batch."""
    known = {BUILTIN_NAME}
    for batch in batches(steps):
        for step in batch:
            for name, path in _step_references(step):
                _check_reference(step, name, path, known)
        known |= {step.save for step in batch if step.save}


def _step_references(step: Step) -> list[tuple[str, tuple[str, ...]]]:
    expect = step.expect
    values = [step.args, step.params, expect.text_contains, expect.text_not_contains, expect.json]
    try:
        return [ref for value in values for ref in references(value)]
    except SubstitutionError as exc:
        raise ScriptError(f"{where(step)}: {exc}") from None


def _check_reference(step: Step, name: str, path: tuple[str, ...], known: set[str]) -> None:
    if name == BUILTIN_NAME:
        if len(path) != 1 or path[0] not in BUILTIN_KEYS:
            keys = ", ".join(f"${{{name}.{key}}}" for key in BUILTIN_KEYS)
            raise ScriptError(f"{where(step)}: unknown built-in substitution; use one of {keys}")
        return
    if name not in known:
        raise ScriptError(
            f"{where(step)}: substitution ${{{name}...}} refers to {name!r}, which no earlier "
            "step saves (a step cannot use a save from its own group)"
        )


# --- tables ------------------------------------------------------------------------------


class _HeaderLines:
    """Line numbers of table headers, so errors can point into the file."""

    def __init__(self, text: str) -> None:
        self._lines = text.splitlines()

    def _find(self, pattern: str) -> list[int]:
        regex = re.compile(pattern)
        return [n for n, line in enumerate(self._lines, start=1) if regex.match(line)]

    def table(self, name: str) -> int | None:
        found = self._find(rf"\s*\[\s*{re.escape(name)}\s*\]")
        return found[0] if found else None

    def client(self, name: str) -> int | None:
        quoted = rf"(?:{re.escape(name)}|\"{re.escape(name)}\"|'{re.escape(name)}')"
        found = self._find(rf"\s*\[\s*clients\s*\.\s*{quoted}\s*\]")
        return found[0] if found else None

    def step(self, number: int, total: int) -> int | None:
        found = self._find(r"\s*\[\[\s*step\s*\]\]")
        return found[number - 1] if len(found) == total else None


def _parse_run(table: dict[str, Any], default_name: str) -> RunSpec:
    try:
        no_unknown(table, RUN_KEYS)
        name = string_of(table.get("name", default_name), "name")
        timeout = number_of(table.get("timeout_secs", DEFAULT_TIMEOUT_SECS), "timeout_secs")
        state_dir = table.get("state_dir")
        if state_dir is not None:
            state_dir = string_of(state_dir, "state_dir")
        settings = _parse_settings(table_of(table.get("settings", {}), "settings", None))
    except ScriptError as exc:
        raise ScriptError(f"[run]: {exc}") from None
    return RunSpec(name, timeout, settings, state_dir)


def _parse_settings(table: dict[str, Any]) -> dict[str, str]:
    known = (f for f in fields(Settings) if f.name in VARIABLE_SETTINGS)
    types = {f.name: type(getattr(Settings(), f.name)) for f in known}
    env: dict[str, str] = {}
    for key, value in table.items():
        if key not in types:
            raise ScriptError(f"unknown setting {key!r} (known: {', '.join(types)})")
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            raise ScriptError(f"setting {key!r} must be a number")
        try:
            types[key](value)
        except ValueError:
            raise ScriptError(f"setting {key!r} must be a number, not {value!r}") from None
        env[env_name(key)] = str(value)
    return env


def _parse_clients(table: dict[str, Any], lines: _HeaderLines) -> dict[str, ClientSpec]:
    clients = {}
    for name, raw in table.items():
        line = lines.client(name)
        what = f"[clients.{name}]"
        spec = table_of(raw, what, line)
        try:
            no_unknown(spec, CLIENT_KEYS)
            label = string_of(spec.get("label", name), "label")
            mode = spec.get("mode", "legacy")
            if mode not in MODES:
                raise ScriptError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
            cwd = spec.get("cwd")
            cwd = None if cwd is None else string_of(cwd, "cwd")
        except ScriptError as exc:
            raise ScriptError(f"{what}{at_line(line)}: {exc}") from None
        clients[name] = ClientSpec(name, label, mode, cwd)
    return clients
