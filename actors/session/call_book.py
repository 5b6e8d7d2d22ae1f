"""The SessionManager's book of tool calls not yet answered.

For each open call: its tool name, whether its client takes the MCP Apps extension, the
notices the daemon's answers carried for it (a merge from disk, …), the runtime
create_notebook was asked for, and for a projection read a fresh handler to replay on the
snapshot if the link goes down meanwhile. Lines meant for whichever result comes next (a
lost kernel, a rejoin's notices) wait here too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from nbstage.protocol.daemon.notices import Notice, notice_from_wire
from nbstage.protocol.mcp.tool_names import ToolName

NEXT_RESULT = ""
"""In place of a call id: the notices of a join's answer (an approval waiting, edits restored
from the journal) go to the next tool result, the connect call's own or, for a rejoin in the
background, whichever comes next."""


class CallBook:
    def __init__(self) -> None:
        self.names: dict[str, ToolName] = {}
        self.notices: dict[str, list[Notice]] = {}
        self.next_result: list[Notice] = []
        self.requested_runtimes: dict[str, str] = {}
        """create_notebook reports the runtime it was asked for ("python"), not the kernelspec."""
        self.rereads: dict[str, Callable[[], Any]] = {}

    def open(self, call_id: str, name: ToolName) -> None:
        self.names[call_id] = name

    def is_open(self, call_id: str) -> bool:
        return call_id in self.names

    def note(self, call_id: str, notices: object) -> None:
        """Keep the notices a daemon answer carried for ``call_id`` (or NEXT_RESULT)."""
        if not isinstance(notices, list):
            return
        kept = self.next_result if call_id == NEXT_RESULT else self.notices.setdefault(call_id, [])
        for notice in map(notice_from_wire, notices):
            if notice is not None and notice not in kept:
                kept.append(notice)

    def cancel(self, call_id: str) -> None:
        self.names.pop(call_id, None)
        self.rereads.pop(call_id, None)
        self.notices.pop(call_id, None)

    def close(self, call_id: str) -> list[Notice]:
        """The call is answered: the lines its result carries, those for the next first."""
        self.names.pop(call_id, None)
        self.rereads.pop(call_id, None)
        self.requested_runtimes.pop(call_id, None)
        lines = [*self.next_result, *self.notices.pop(call_id, [])]
        self.next_result = []
        return lines
