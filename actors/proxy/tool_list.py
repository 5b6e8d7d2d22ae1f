"""The tool list the ProxySupervisor answers ``tools/list`` with: the live child's, else
the one cached from an earlier run, else the built-in one; and which changes to persist
and announce when a child reports its list."""

from __future__ import annotations

from typing import Any

from nbstage.protocol.mcp import tools


class ToolList:
    def __init__(self) -> None:
        self.tools: list[dict[str, Any]] = []
        self.cached: list[dict[str, Any]] = []

    def start(self, cached: list[dict[str, Any]]) -> None:
        self.cached = cached
        self.tools = cached or tools.builtin_tool_list()

    def adopt(self, live: list[dict[str, Any]]) -> tuple[bool, bool]:
        """Take the child's list: (whether the cache must be rewritten, whether clients
        must hear of a change). An empty list is never adopted."""
        if not live:
            return False, False
        changed = live != self.tools
        self.tools = live
        recache = live != self.cached
        self.cached = live
        return recache, changed
