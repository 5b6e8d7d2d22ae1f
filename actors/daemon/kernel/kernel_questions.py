"""The Kernel actor's questions about code (a completion, an inspection) in flight:
each is sent on the kernel's shell channel (the backend's ``ask``) and answered when its
reply comes back, to the Room that asked. Questions still open when the kernel dies,
restarts or stops are answered with the reason: the kernel will not reply to them."""

from __future__ import annotations

from typing import Any

from nbstage.actors.daemon.kernel.kernel_backend_events import QuestionAnswered
from nbstage.protocol.daemon_actors.kernel_questions import (
    KernelQuestionAnswered,
    KernelQuestionAsked,
)

Reply = tuple[Any, KernelQuestionAnswered]
"""Who asked, and what to send them."""


class KernelQuestions:
    def __init__(self) -> None:
        self.open: dict[str, tuple[Any, str]] = {}
        """The question's message id → who asked and their question id."""

    def ask(self, backend: Any, msg: KernelQuestionAsked, sender: Any) -> Reply | None:
        """Send the question; a reply at once only when no backend can take it."""
        if backend is None:
            return sender, KernelQuestionAnswered(msg.question_id, None, "the kernel is not up")
        msg_id = backend.ask(msg.request_type, msg.content)
        self.open[msg_id] = (sender, msg.question_id)
        return None

    def answered(self, event: QuestionAnswered) -> Reply | None:
        asked = self.open.pop(event.parent_id, None)
        if asked is None:
            return None
        sender, question_id = asked
        return sender, KernelQuestionAnswered(question_id, event.content)

    def drop_all(self, reason: str) -> list[Reply]:
        dropped = [
            (sender, KernelQuestionAnswered(question_id, None, reason))
            for sender, question_id in self.open.values()
        ]
        self.open.clear()
        return dropped
