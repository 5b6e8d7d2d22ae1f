"""What a kernel backend reports, decoded once at the seam from Jupyter's messages."""

from __future__ import annotations

from typing import Any

from nbstage.protocol.common.frozen import frozen


@frozen
class OutputEmitted:
    parent_id: str
    output: dict[str, Any]


@frozen
class OutputCleared:
    parent_id: str


@frozen
class KernelWentIdle:
    parent_id: str


@frozen
class ExecutionCounted:
    parent_id: str
    execution_count: int


@frozen
class ReplyReceived:
    parent_id: str
    ok: bool
    execution_count: int | None
    error: str | None


@frozen
class QuestionAnswered:
    """A shell reply to a question about code (kernel_questions.py), its content whole."""

    parent_id: str
    content: dict[str, Any]


KernelEvent = (
    OutputEmitted
    | OutputCleared
    | KernelWentIdle
    | ExecutionCounted
    | ReplyReceived
    | QuestionAnswered
)
