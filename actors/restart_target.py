"""The restart target: which notebook a restarted SessionManager rejoins (SPEC §8).

A successful connect or create sets it (the path where there is one, else the
UUID); a successful save turns a UUID target into the path; disconnecting the
active notebook clears it; failed calls never change it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


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
    if tool == "save_notebook" and structured.get("notebook_id") == target.notebook_id:
        return RestartTarget(structured.get("path") or target.value, target.notebook_id)
    if tool == "disconnect_notebook" and structured.get("disconnected") == target.notebook_id:
        return RestartTarget()
    return target
