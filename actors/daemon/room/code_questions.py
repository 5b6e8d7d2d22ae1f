"""The Room's questions about code put to its kernel (protocol/daemon/code_questions.py):
a completion or an inspection that a person's JupyterLab asks for.

A question goes to the kernel only when one is up and idle: one running a cell would
answer only after the run (ipykernel takes shell requests one at a time), too late
for a completer, and asking starts no kernel. Otherwise it is answered at once with
the reason. The kernel answers every question it took, or says why it will not (it
died, restarted or stopped: kernel_questions.py), unless its actor is gone: then the
Room answers the questions it sent there itself (``kernel_gone``).
"""

from __future__ import annotations

import itertools
from typing import Any

from nbstage.actors.daemon.room.actions import Action, Answer, Send
from nbstage.actors.daemon.room.kernel_seat import KernelSeat
from nbstage.protocol.common.errors import ErrorCode, NbstageError
from nbstage.protocol.daemon.code_questions import (
    AskKernel,
    KernelAnswered,
    checked,
    question_content,
)
from nbstage.protocol.daemon_actors.edge import Origin
from nbstage.protocol.daemon_actors.kernel_facts import KernelState
from nbstage.protocol.daemon_actors.kernel_questions import (
    KernelQuestionAnswered,
    KernelQuestionAsked,
)

NOT_ASKED = {
    KernelState.NONE: "no kernel is running for this notebook; run a cell to start one",
    KernelState.STARTING: "the kernel is starting",
    KernelState.BUSY: "the kernel is running a cell",
    KernelState.RESTARTING: "the kernel is restarting",
    KernelState.DEAD: "the kernel died",
}


class CodeQuestions:
    def __init__(self, seat: KernelSeat) -> None:
        self.seat = seat
        self.waiting: dict[str, tuple[Origin, Any]] = {}
        """The question id → who asked and the Kernel child it was sent to."""
        self._ids = itertools.count(1)

    def ask(self, origin: Origin, req: AskKernel) -> list[Action]:
        problem = checked(req)
        if problem is not None:
            raise NbstageError(ErrorCode.BAD_REQUEST, problem)
        state = self.seat.state if self.seat.address is not None else KernelState.NONE
        if state is not KernelState.IDLE:
            reason = NOT_ASKED.get(state, f"the kernel is {state}")
            return [Answer(origin, KernelAnswered(False, {}, reason))]
        question_id = str(next(self._ids))
        self.waiting[question_id] = (origin, self.seat.address)
        asked = KernelQuestionAsked(question_id, req.question.request_type, question_content(req))
        return [Send(self.seat.address, asked)]

    def answered(self, msg: KernelQuestionAnswered, sender: object) -> list[Action]:
        asked = self.waiting.pop(msg.question_id, None)
        if asked is None:
            return []
        origin, _ = asked
        if msg.content is None:
            return [Answer(origin, KernelAnswered(False, {}, msg.reason))]
        return [Answer(origin, KernelAnswered(True, msg.content))]

    def kernel_gone(self, kernel: Any, reason: str) -> list[Action]:
        """The Kernel child ``kernel`` died or its actor exited: the questions sent to it
        are answered now with ``reason``; a late reply from it finds none waiting."""
        gone = [qid for qid, (_, sent_to) in self.waiting.items() if sent_to == kernel]
        told = KernelAnswered(False, {}, reason)
        return [Answer(self.waiting.pop(qid)[0], told) for qid in gone]
