"""The restart target: which notebook a restarted SessionManager rejoins (SPEC §8).

A successful connect or create sets it (the path where there is one, else the
UUID); a successful save turns a UUID target into the path; disconnecting the
active notebook clears it; failed calls never change it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

TARGET_TOOLS = ("connect_notebook", "create_notebook", "save_notebook", "disconnect_notebook")
"""The only tools whose results can move the target."""


@dataclass(frozen=True, slots=True)
class RestartTarget:
    value: str | None = None
    notebook_id: str | None = None


def after_call(target: RestartTarget, tool: str, result: dict[str, Any]) -> RestartTarget:
    if result.get("isError"):
        return target
    structured = result.get("structuredContent") or {}
    if tool in ("connect_notebook", "create_notebook"):
        notebook_id = structured.get("notebook_id")
        return RestartTarget(structured.get("path") or notebook_id, notebook_id)
    if tool == "save_notebook" and _same_notebook(target, structured.get("notebook_id")):
        notebook_id = structured["notebook_id"]
        return RestartTarget(structured.get("path") or target.value, notebook_id)
    if tool == "disconnect_notebook" and _same_notebook(target, structured.get("disconnected")):
        return RestartTarget()
    return target


def _same_notebook(target: RestartTarget, notebook_id: str | None) -> bool:
    if notebook_id is None:
        return False
    known = target.notebook_id if target.notebook_id is not None else target.value
    return notebook_id == known


def active_changed(
    target: RestartTarget, notebook_id: str | None, path: str | None
) -> RestartTarget:
    """Learn the id of a target that was handed over by value (a path or a UUID)."""
    if notebook_id is not None and target.value is not None and target.value in (notebook_id, path):
        return RestartTarget(target.value, notebook_id)
    return target
