"""Questions about code (completions, inspections): the kernel's reply decoded at the
seam, the Kernel actor's part with the scripted backend, the Room's part with a seat in
each state, the questions a kernel that went away leaves behind, and the Lab edge's
reading of a request (tables)."""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import pytest
from thespian.actors import ActorExitRequest

from nbstage.actors.common.effects import Answer, Send
from nbstage.actors.daemon.kernel.kernel_backend_events import QuestionAnswered, ReplyReceived
from nbstage.actors.daemon.kernel.kernel_messages import shell_event
from nbstage.actors.daemon.kernel.kernel_questions import KernelQuestions
from nbstage.actors.daemon.kernel.scripted_backend import ScriptedBackend
from nbstage.actors.daemon.room.code_questions import CodeQuestions
from nbstage.entrypoints.lab.code_questions import asked, empty_reply
from nbstage.protocol.common.errors import NbstageError
from nbstage.protocol.daemon.code_questions import AskKernel, KernelAnswered, QuestionKind
from nbstage.protocol.daemon_actors.edge import ClientRequest, KernelProcessStarted, Origin
from nbstage.protocol.daemon_actors.kernel_facts import KernelState
from nbstage.protocol.daemon_actors.kernel_questions import (
    KernelQuestionAnswered,
    KernelQuestionAsked,
)
from tests.unit.actor_harness import ActorBench, Recorder
from tests.unit.test_room_races import NOTEBOOK, answer_to, join, run_cell, start_room

ORIGIN = Origin(1, 7)


def reply(msg_type: str, content: dict) -> dict:
    return {"header": {"msg_type": msg_type}, "parent_header": {"msg_id": "q1"}, "content": content}


def test_a_question_reply_keeps_its_content_and_a_run_reply_does_not() -> None:
    matches = {"status": "ok", "matches": ["abs"], "cursor_start": 0, "cursor_end": 2}
    assert shell_event(reply("complete_reply", matches)) == QuestionAnswered("q1", matches)
    found = {"status": "ok", "found": True, "data": {"text/plain": "doc"}}
    assert shell_event(reply("inspect_reply", found)) == QuestionAnswered("q1", found)
    ran = shell_event(reply("execute_reply", {"status": "ok", "execution_count": 3}))
    assert ran == ReplyReceived("q1", True, 3, None)


def test_the_kernels_part_answers_whoever_asked_and_drops_the_rest_with_a_reason() -> None:
    questions, backend = KernelQuestions(), ScriptedBackend()
    content = {"code": "print(ab", "cursor_pos": 8}
    assert (
        questions.ask(backend, KernelQuestionAsked("1", "complete_request", content), "room") == []
    )
    assert (
        questions.ask(backend, KernelQuestionAsked("2", "inspect_request", content), "room") == []
    )
    events = [e for e in backend.drain() if isinstance(e, QuestionAnswered)]
    (first,) = questions.answered(events[0])
    assert first.to == "room"
    assert first.message.question_id == "1"
    assert first.message.content["matches"] == ["print(abprint(ab"]
    assert questions.answered(events[0]) == [], "an answer is taken once"
    assert questions.drop_all("the kernel died") == [
        Send("room", KernelQuestionAnswered("2", None, "the kernel died"))
    ]
    refused = questions.ask(None, KernelQuestionAsked("3", "complete_request", content), "room")
    assert refused == [Send("room", KernelQuestionAnswered("3", None, "the kernel is not up"))]


def ask(code: str = "ab", cursor: int = 2, detail: int = 0) -> AskKernel:
    return AskKernel("nb", QuestionKind.INSPECT, code, cursor, detail)


@pytest.mark.parametrize(
    ("address", "state", "asks"),
    [
        ("kernel", KernelState.IDLE, True),
        ("kernel", KernelState.BUSY, False),
        ("kernel", KernelState.STARTING, False),
        ("kernel", KernelState.RESTARTING, False),
        ("kernel", KernelState.DEAD, False),
        (None, KernelState.IDLE, False),
    ],
)
def test_the_room_asks_only_an_idle_kernel(address, state, asks) -> None:
    questions = CodeQuestions(SimpleNamespace(address=address, state=state))  # type: ignore[arg-type]
    (done,) = questions.ask(ORIGIN, ask())
    if not asks:
        assert isinstance(done, Answer)
        assert done.reply.asked is False
        assert done.reply.reason
        return
    assert isinstance(done, Send)
    assert done.message.request_type == "inspect_request"
    assert done.message.content == {"code": "ab", "cursor_pos": 2, "detail_level": 0}
    answered = KernelQuestionAnswered(done.message.question_id, {"found": True})
    assert questions.answered(answered, "kernel") == [
        Answer(ORIGIN, KernelAnswered(True, {"found": True}))
    ]
    assert questions.answered(answered, "kernel") == []


@pytest.mark.parametrize("bad", [ask(cursor=3), ask(cursor=-1), ask(detail=2)])
def test_a_question_out_of_shape_is_refused(bad) -> None:
    questions = CodeQuestions(SimpleNamespace(address="k", state=KernelState.IDLE))  # type: ignore[arg-type]
    with pytest.raises(NbstageError):
        questions.ask(ORIGIN, bad)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ({"code": "abc", "cursor_pos": 2}, ("abc", 2, 0)),
        ({"code": "abc"}, ("abc", 3, 0)),
        ({"code": "abc", "cursor_pos": 99, "detail_level": 1}, ("abc", 3, 1)),
        ({"code": "abc", "cursor_pos": True}, ("abc", 3, 0)),
        ({"code": 5, "cursor_pos": -4}, ("", 0, 0)),
        ("not an object", ("", 0, 0)),
    ],
)
def test_the_lab_edge_reads_a_request_sanely(content, expected) -> None:
    assert asked(content) == expected


def test_the_empty_replies_are_valid_ones() -> None:
    assert empty_reply(QuestionKind.COMPLETE, 4)["cursor_start"] == 4
    assert empty_reply(QuestionKind.INSPECT, 4)["found"] is False


# --- a kernel that goes away owes no answers (the Room answers for it) -----------------


def test_a_kernel_gone_has_its_questions_answered_and_only_its_own() -> None:
    seat = SimpleNamespace(address="old", state=KernelState.IDLE)
    questions = CodeQuestions(seat)  # type: ignore[arg-type]
    (to_old,) = questions.ask(Origin(1, "a"), ask())
    seat.address = "new"
    (to_new,) = questions.ask(Origin(1, "b"), ask())
    assert questions.kernel_gone("new", "the kernel's actor exited") == [
        Answer(Origin(1, "b"), KernelAnswered(False, {}, "the kernel's actor exited"))
    ]
    late = KernelQuestionAnswered(to_new.message.question_id, {"found": True})
    assert questions.answered(late, "new") == [], "a late reply finds nobody waiting"
    assert questions.kernel_gone("new", "again") == []
    on_time = KernelQuestionAnswered(to_old.message.question_id, {"found": True})
    assert questions.answered(on_time, "old") == [
        Answer(Origin(1, "a"), KernelAnswered(True, {"found": True}))
    ]
    assert questions.waiting == {}


@dataclass(frozen=True)
class KernelSpotted:
    kernel: Any


class KernelSpotter(Recorder):
    """Also records who said a kernel process started: the Room's Kernel child."""

    def receiveMessage(self, msg: Any, sender: Any) -> None:
        if isinstance(msg, KernelProcessStarted):
            self.seen.append(KernelSpotted(sender))
        super().receiveMessage(msg, sender)


def test_a_question_waiting_when_the_kernels_actor_exits_is_answered(tmp_path) -> None:
    bench = ActorBench()
    try:
        bench.recorder = bench.create(KernelSpotter)
        room = start_room(bench, tmp_path)
        join(bench, room, "join", seq=1)
        assert run_cell(bench, room, "run")["status"] == "done"
        (spotted,) = bench.seen_of(KernelSpotted)
        question = AskKernel(NOTEBOOK, QuestionKind.COMPLETE, "ab", 2)
        # the Room sends the question on, then hears its kernel's actor exited before
        # the kernel could take it
        bench.send_in_order(
            (room, ClientRequest(Origin(1, "ask"), question)),
            (spotted.kernel, ActorExitRequest()),
        )
        answered = answer_to(bench, "ask")
        assert answered["asked"] is False
        assert answered["reason"] == "the kernel's actor exited"
        bench.send(room, ClientRequest(Origin(1, "again"), question))
        assert answer_to(bench, "again")["asked"] is False
    finally:
        bench.close()
