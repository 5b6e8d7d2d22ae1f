"""manage_dependencies' answer in words: the set, its trust and environment, what changed."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def render_dependencies(state: Mapping[str, Any]) -> str:
    """manage_dependencies' words: the set, its trust and environment, what changed."""
    deps = state["dependencies"]
    lines = [
        f"Dependencies ({len(deps)}): {', '.join(deps) if deps else 'none'}; "
        f"fingerprint {state['fingerprint']}."
    ]
    if state.get("added"):
        lines.append(f"Added: {', '.join(state['added'])}.")
    removed = state.get("removed") or {}
    if removed.get("removed"):
        lines.append(f"Removed: {', '.join(removed['removed'])}.")
    if removed.get("not_found"):
        lines.append(f"Not listed, so not removed: {', '.join(removed['not_found'])}.")
    trust = state["trust"]
    if trust["needs_approval"]:
        lines.append(
            "Not approved yet: the kernel runs without them. Approve with "
            'manage_dependencies(trust=true, apply="restart").'
        )
    elif trust["status"] == "trusted":
        lines.append("Approved.")
    if state.get("env_source"):
        lines.append(f"The kernel runs in the {state['env_source']} environment.")
    applied = state.get("apply")
    if applied:
        lines.append(f"apply={applied['mode']} took {applied['seconds']:.1f} s.")
    return "\n".join(lines)
