"""What nbstage tells an agent beside a tool's own answer: a restart, an upgrade, a file
changed on disk, edits restored from the journal, dependencies waiting for approval.

A notice has a kind, its words and, where one is the way forward, the exact call to make
next. A tool result carries its notices twice: as ``notices`` in ``structuredContent``
(Claude Code and Codex hand their model only that part, as JSON) and as ``[nbstage] …``
text lines at the top, for clients that show text. Both say the same.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from enum import StrEnum
from typing import Any, Final

from nbstage.protocol.common.frozen import frozen

PREFIX: Final = "[nbstage] "


class NoticeKind(StrEnum):
    SESSION_RESTARTED = "session_restarted"
    DAEMON_UPGRADED = "daemon_upgraded"
    KERNEL_RENEWED = "kernel_renewed"
    """The daemon restarted or was upgraded, so the kernel is new and its variables gone."""
    CHANGED_ON_DISK = "changed_on_disk"
    DELETED_ON_DISK = "deleted_on_disk"
    AUTOSAVE_PAUSED = "autosave_paused"
    JOURNAL_RESTORED = "journal_restored"
    APPROVAL_NEEDED = "approval_needed"
    STALE = "stale"
    PERSON_EDITED = "person_edited"
    """A person changed cells in JupyterLab (ADR 0004)."""
    NOTE = "note"
    """Any other line (one from an older daemon, which sends bare strings)."""


@frozen
class Notice:
    kind: NoticeKind
    message: str
    next_call: str | None = None

    def line(self) -> str:
        return PREFIX + self.message

    def to_json(self) -> dict[str, Any]:
        shown: dict[str, Any] = {"kind": self.kind.value, "message": self.message}
        if self.next_call is not None:
            shown["next_call"] = self.next_call
        return shown


def notice_from_wire(value: object) -> Notice | None:
    """A notice as a daemon frame carries it (an object, or a bare line from an older
    daemon); None for anything else."""
    if isinstance(value, str):
        return Notice(NoticeKind.NOTE, value.removeprefix(PREFIX))
    if not isinstance(value, Mapping):
        return None
    message, next_call = value.get("message"), value.get("next_call")
    if not isinstance(message, str) or not isinstance(next_call, str | None):
        return None
    try:
        kind = NoticeKind(str(value.get("kind")))
    except ValueError:
        kind = NoticeKind.NOTE
    return Notice(kind, message, next_call)


def with_notices(result: Mapping[str, Any], notices: Sequence[Notice]) -> dict[str, Any]:
    """``result`` with ``notices`` ahead of any it has, in its text and its structured part.

    A result without a structured part gets one holding the notices and its text, so a
    client that shows only the structured part still reads both.
    """
    if not notices:
        return dict(result)
    lines = [{"type": "text", "text": notice.line()} for notice in notices]
    structured = result.get("structuredContent")
    if not isinstance(structured, Mapping):
        texts = [item.get("text", "") for item in result.get("content", ())]
        structured = {"message": "\n".join(t for t in texts if t)}
    shown = [notice.to_json() for notice in notices]
    structured = {**structured, "notices": [*shown, *structured.get("notices", ())]}
    return {
        **result,
        "content": [*lines, *result.get("content", ())],
        "structuredContent": structured,
    }
