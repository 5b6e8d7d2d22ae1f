"""Room ↔ Kernel: a question about code put to the kernel (protocol/daemon/code_questions.py)."""

from __future__ import annotations

from typing import Any

from nbstage.protocol.common.frozen import frozen


@frozen
class KernelQuestionAsked:
    question_id: str
    request_type: str
    """``complete_request`` or ``inspect_request``."""
    content: dict[str, Any]


@frozen
class KernelQuestionAnswered:
    question_id: str
    content: dict[str, Any] | None
    """The kernel's reply content; None when it was not asked or will not answer."""
    reason: str | None = None
