"""A question about code put to a notebook's kernel: a completion or an inspection, as
JupyterLab's completer (tab) and its tooltip (shift-tab) ask them. The Lab edge asks on
the person's behalf (entrypoints/lab/code_questions.py): Lab has no kernel of its own.

The Room asks its kernel when one is up and not running a cell, and answers with the
kernel's own reply content (``complete_reply`` or ``inspect_reply``); otherwise it says
why it did not ask, at once.
"""

from __future__ import annotations

from dataclasses import field
from enum import StrEnum
from typing import Any

from nbstage.protocol.common.codec import OMIT_WHEN_NONE
from nbstage.protocol.common.frozen import frozen
from nbstage.protocol.daemon.replies import REPLY_TYPES
from nbstage.protocol.daemon.request_wire import wire_request

MAX_QUESTION_CODE = 1_000_000
"""The most code a question may carry (a cell's source, in characters)."""


class QuestionKind(StrEnum):
    COMPLETE = "complete"
    INSPECT = "inspect"

    @property
    def request_type(self) -> str:
        return f"{self.value}_request"

    @property
    def reply_type(self) -> str:
        return f"{self.value}_reply"


@wire_request("ask_kernel")
@frozen
class AskKernel:
    notebook_id: str
    question: QuestionKind
    code: str
    cursor_pos: int
    detail_level: int = 0
    """For an inspection: 0 the signature and docstring, 1 the source too."""


@frozen
class KernelAnswered:
    asked: bool
    """False: no kernel was asked (``reason`` says why) and ``content`` is empty."""
    content: dict[str, Any]
    """The kernel's reply content, as Jupyter's messaging protocol has it."""
    reason: str | None = field(default=None, metadata=OMIT_WHEN_NONE)


REPLY_TYPES[AskKernel] = KernelAnswered


def question_content(req: AskKernel) -> dict[str, Any]:
    """The content of the kernel request ``req`` asks for."""
    content: dict[str, Any] = {"code": req.code, "cursor_pos": req.cursor_pos}
    if req.question is QuestionKind.INSPECT:
        content["detail_level"] = req.detail_level
    return content


def checked(req: AskKernel) -> str | None:
    """Why ``req`` cannot be asked as it is, or None."""
    if len(req.code) > MAX_QUESTION_CODE:
        return f"the code is over {MAX_QUESTION_CODE} characters"
    if not 0 <= req.cursor_pos <= len(req.code):
        return "cursor_pos must be within the code"
    if req.detail_level not in (0, 1):
        return "detail_level must be 0 or 1"
    return None
