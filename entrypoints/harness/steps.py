"""Reading a harness script's ``[[step]]`` entries: tool calls, faults and expectations."""

from __future__ import annotations

import re
from typing import Any

from nbstage.entrypoints.harness.match import BUILTIN_NAME
from nbstage.entrypoints.harness.model import (
    STATUSES,
    ClientSpec,
    Expect,
    ScriptError,
    Step,
    at_line,
    no_unknown,
    number_of,
    string_of,
    table_of,
)
from nbstage.protocol.mcp.tools import TOOLS_BY_NAME

FAULT_PARAMS: dict[str, tuple[str, ...]] = {
    "kill_child": ("client",),
    "kill_daemon": (),
    "start_daemon": (),
    "restart_daemon": (),
    "upgrade_daemon": ("version",),
    "kill_kernel": ("notebook",),
    "stop_client": ("client",),
    "start_client": ("client",),
    "sleep": ("secs",),
}
CALL_KEYS = ("client", "call", "args", "save", "expect", "group")
EXPECT_KEYS = ("is_error", "status", "text_contains", "text_not_contains", "json", "within_secs")
_SAVE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def parse_step(raw: object, number: int, line: int | None, clients: dict[str, ClientSpec]):
    where = f"step {number}{at_line(line)}"
    step = table_of(raw, where, None)
    try:
        if "call" in step and "fault" in step:
            raise ScriptError("has both call and fault; a step is one or the other")
        if "call" in step:
            return _parse_call(step, number, line, clients)
        if "fault" in step:
            return _parse_fault(step, number, line, clients)
        raise ScriptError("has neither call nor fault")
    except ScriptError as exc:
        raise ScriptError(f"{where}: {exc}") from None


def _group(step: dict[str, Any]) -> str | None:
    group = step.get("group")
    if group is None:
        return None
    if isinstance(group, bool) or not isinstance(group, str | int):
        raise ScriptError("group must be a string or an integer")
    return str(group)


def _client_name(step: dict[str, Any], clients: dict[str, ClientSpec]) -> str:
    name = string_of(step.get("client"), "client")
    if name not in clients:
        known = ", ".join(clients) or "none are defined"
        raise ScriptError(f"client {name!r} is not defined in [clients] ({known})")
    return name


def _parse_call(step: dict[str, Any], number: int, line: int | None, clients) -> Step:
    no_unknown(step, CALL_KEYS, " in a call step")
    client = _client_name(step, clients)
    call = string_of(step["call"], "call")
    if call not in TOOLS_BY_NAME:
        raise ScriptError(f"unknown tool {call!r} (known: {', '.join(TOOLS_BY_NAME)})")
    args = table_of(step.get("args", {}), "args", None)
    save = step.get("save")
    if save is not None and (not isinstance(save, str) or not _SAVE_NAME.match(save)):
        raise ScriptError(f"save must be a name like nb or result_1, not {save!r}")
    if save == BUILTIN_NAME:
        raise ScriptError(f"save name {BUILTIN_NAME!r} is reserved for the run's own paths")
    expect = parse_expect(table_of(step.get("expect", {}), "expect", None))
    return Step(number, line, _group(step), client, call, args, save, expect)


def _parse_fault(step: dict[str, Any], number: int, line: int | None, clients) -> Step:
    fault = step["fault"]
    if fault not in FAULT_PARAMS:
        raise ScriptError(f"unknown fault {fault!r} (known: {', '.join(FAULT_PARAMS)})")
    needed = FAULT_PARAMS[fault]
    no_unknown(step, ("fault", "group", *needed), f" for fault {fault}")
    for key in needed:
        if key not in step:
            raise ScriptError(f"fault {fault} needs {key!r}")
    params: dict[str, Any] = {}
    if "client" in needed:
        params["client"] = _client_name(step, clients)
    if "version" in needed:
        params["version"] = string_of(step["version"], "version")
    if "notebook" in needed:
        params["notebook"] = string_of(step["notebook"], "notebook")
    if "secs" in needed:
        params["secs"] = number_of(step["secs"], "secs", positive=False)
    return Step(number, line, _group(step), fault=fault, params=params)


def _texts(value: object, key: str) -> tuple[str, ...]:
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(i, str) and i for i in items):
        raise ScriptError(f"expect.{key} must be a non-empty string or a list of them")
    return tuple(items)


def parse_expect(table: dict[str, Any]) -> Expect:
    no_unknown(table, EXPECT_KEYS, " in expect")
    is_error = table.get("is_error", False)
    if not isinstance(is_error, bool):
        raise ScriptError("expect.is_error must be true or false")
    status = table.get("status")
    if status is not None and status not in STATUSES:
        raise ScriptError(f"expect.status must be one of {', '.join(STATUSES)}, not {status!r}")
    within = table.get("within_secs")
    return Expect(
        is_error=is_error,
        status=status,
        text_contains=_texts(table.get("text_contains", []), "text_contains"),
        text_not_contains=_texts(table.get("text_not_contains", []), "text_not_contains"),
        json=table_of(table["json"], "expect.json", None) if "json" in table else None,
        within_secs=None if within is None else number_of(within, "expect.within_secs"),
    )
