"""The Kernel actor's questions about code (a completion, an inspection) in flight:
each is sent on the kernel's shell channel (the backend's ``ask``) and answered when its
reply comes back, to the Room that asked. Questions still open when the kernel dies,
restarts or stops are answered with the reason: the kernel will not reply to them.
The answers are Send effects (actors/common/effects.py) for the Kernel to carry out."""

from __future__ import annotations

from typing import Any

from nbstage.actors.common.effects import Send
from nbstage.actors.daemon.kernel.kernel_backend_events import QuestionAnswered
from nbstage.protocol.daemon_actors.kernel_questions import (
    KernelQuestionAnswered,
    KernelQuestionAsked,
)


class KernelQuestions:
    def __init__(self) -> None:
        self.open: dict[str, tuple[Any, str]] = {}
        """The question's message id → who asked and their question id."""

    def ask(self, backend: Any, msg: KernelQuestionAsked, sender: Any) -> list[Send]:
        """Send the question; an answer at once only when no backend can take it."""
        if backend is None:
            refused = KernelQuestionAnswered(msg.question_id, None, "the kernel is not up")
            return [Send(sender, refused)]
        msg_id = backend.ask(msg.request_type, msg.content)
        self.open[msg_id] = (sender, msg.question_id)
        return []

    def answered(self, event: QuestionAnswered) -> list[Send]:
        asked = self.open.pop(event.parent_id, None)
        if asked is None:
            return []
        sender, question_id = asked
        return [Send(sender, KernelQuestionAnswered(question_id, event.content))]

    def drop_all(self, reason: str) -> list[Send]:
        dropped = [
            Send(sender, KernelQuestionAnswered(question_id, None, reason))
            for sender, question_id in self.open.values()
        ]
        self.open.clear()
        return dropped
