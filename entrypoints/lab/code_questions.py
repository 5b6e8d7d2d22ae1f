"""Completions (tab) and inspection (shift-tab) in JupyterLab, answered by the room's
kernel (ADR 0004).

Lab's completer and tooltip send ``complete_request`` and ``inspect_request`` on the
notebook's kernel websocket. The kernel there is a stand-in (room_kernels.py), so the
stand-in hands these two to the room it stands for as an ``ask_kernel`` request, over
the notebook's websocket link when there is one (execution.py ``ask_room``), and
replies with the kernel's own answer. When the room did not ask its kernel (none runs,
or it is busy with a cell), or no answer comes in time, the reply is an empty one:
no matches, nothing found, and the completer simply shows nothing.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from nbstage.entrypoints.common.ownership import Untrusted
from nbstage.entrypoints.control.daemon_client import DaemonError
from nbstage.protocol.daemon.code_questions import QuestionKind

log = logging.getLogger("nbstage.lab")

ASK_SECS = 10.0
QUESTIONS = {kind.request_type: kind for kind in QuestionKind}


def empty_reply(kind: QuestionKind, cursor_pos: int) -> dict[str, Any]:
    if kind is QuestionKind.COMPLETE:
        return {
            "status": "ok",
            "matches": [],
            "cursor_start": cursor_pos,
            "cursor_end": cursor_pos,
            "metadata": {},
        }
    return {"status": "ok", "found": False, "data": {}, "metadata": {}}


def asked(content: object) -> tuple[str, int, int]:
    """The code, cursor position and detail level of a request's content, made sane: a
    missing cursor is at the end of the code, one out of range is clamped."""
    fields = content if isinstance(content, dict) else {}
    code = fields.get("code")
    code = code if isinstance(code, str) else ""
    cursor = fields.get("cursor_pos")
    cursor = cursor if isinstance(cursor, int) and not isinstance(cursor, bool) else len(code)
    detail = 1 if fields.get("detail_level") == 1 else 0
    return code, min(max(cursor, 0), len(code)), detail


async def answer(notebook_id: str, request_type: str, content: object) -> dict[str, Any]:
    """The reply content for a completion or inspection request of the notebook's room."""
    from nbstage.entrypoints.lab.execution import ask_room

    kind = QUESTIONS[request_type]
    code, cursor, detail = asked(content)
    if not notebook_id:
        return empty_reply(kind, cursor)
    try:
        answered = await asyncio.wait_for(
            ask_room(
                notebook_id,
                "ask_kernel",
                question=kind.value,
                code=code,
                cursor_pos=cursor,
                detail_level=detail,
            ),
            ASK_SECS,
        )
    except (TimeoutError, DaemonError, ConnectionError, OSError, Untrusted) as exc:
        log.info("room %s: no %s answer: %s", notebook_id, kind.value, exc)
        return empty_reply(kind, cursor)
    if not answered.get("asked"):
        return empty_reply(kind, cursor)
    reply: dict[str, Any] = answered.get("content") or empty_reply(kind, cursor)
    return reply
