"""The SessionManager's parts without an actor: the calls it holds back (held_calls),
its book of open calls (call_book), and one step of a tool handler (tool_runs)."""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from typing import Any

import pytest

from nbstage.actors.session.call_book import NEXT_RESULT, CallBook
from nbstage.actors.session.daemon_link import DaemonFailure
from nbstage.actors.session.held_calls import HeldCalls
from nbstage.actors.session.tool_runs import Ask, Done, step
from nbstage.protocol.common.errors import ErrorCode
from nbstage.protocol.mcp.tool_names import ToolName


@dataclass(frozen=True)
class Call:
    call_id: str


@pytest.mark.parametrize(
    ("awaiting_first", "confirmed", "linked", "first_holds", "confirmed_holds"),
    [
        (True, False, False, True, False),
        (False, False, True, False, True),
        (False, True, True, False, False),
        (False, False, False, False, False),
    ],
)
def test_what_a_call_waits_for(
    awaiting_first: bool, confirmed: bool, linked: bool, first_holds: bool, confirmed_holds: bool
) -> None:
    held = HeldCalls()
    held.awaiting_first_link, held.confirmed = awaiting_first, confirmed
    assert held.hold_for_first_link(Call("a")) is first_holds
    assert held.hold_until_confirmed(Call("b"), linked) is confirmed_holds
    expected = [c for c, h in ((Call("a"), first_holds), (Call("b"), confirmed_holds)) if h]
    assert held.release() == expected
    assert held.release() == []


def test_a_cancelled_or_expired_call_is_no_longer_held() -> None:
    held = HeldCalls()
    held.awaiting_first_link = True
    held.hold_for_first_link(Call("a"))
    held.hold_for_first_link(Call("b"))
    held.cancel("a")
    assert held.release() == [Call("b")]
    held.defer(Call("c"), "spec", "args")
    held.defer(Call("d"), "spec", "args")
    assert held.expire("c") == [Call("c")]
    assert held.release_deferred() == [(Call("d"), "spec", "args")]


def test_the_first_version_seen_is_the_baseline_and_another_hands_off() -> None:
    held = HeldCalls()
    assert held.version_seen("1.0") is None
    assert held.version_seen("1.0") is None
    handoff = held.version_seen("1.1")
    assert handoff is not None
    assert (handoff.from_version, handoff.to_version) == ("1.0", "1.1")


NOTICE = {"kind": "kernel_renewed", "message": "new kernel"}


def test_a_result_carries_the_lines_for_the_next_result_then_its_own() -> None:
    book = CallBook()
    book.open("c1", ToolName.GET_ALL_CELLS)
    book.note(NEXT_RESULT, [NOTICE])
    book.note("c1", [{"kind": "changed_on_disk", "message": "merged from disk"}, 42])
    book.note("c1", "not a list")
    lines = book.close("c1")
    assert [line.message for line in lines] == ["new kernel", "merged from disk"]
    assert not book.is_open("c1")
    assert book.close("c2") == []


def test_a_cancelled_call_keeps_nothing() -> None:
    book = CallBook()
    book.open("c1", ToolName.GET_ALL_CELLS)
    book.note("c1", [NOTICE])
    book.rereads["c1"] = lambda: None
    book.cancel("c1")
    assert not book.is_open("c1")
    assert book.notices == {}
    assert book.rereads == {}


def handler() -> Generator[object, Any, dict[str, Any]]:
    first = yield "ask one"
    return {"got": first}


def test_a_handler_asks_then_finishes() -> None:
    running = handler()
    assert step(running, None, "t") == Ask("ask one")
    assert step(running, "answer", "t") == Done({"got": "answer"})


@pytest.mark.parametrize(
    ("code", "next_call"),
    [(ErrorCode.CELL_NOT_FOUND, "get_all_cells()"), (ErrorCode.BAD_REQUEST, None)],
)
def test_a_refusal_the_handler_lets_through_is_the_calls_error(
    code: ErrorCode, next_call: str | None
) -> None:
    running = handler()
    step(running, None, "t")
    done = step(running, DaemonFailure(code, "refused"), "t")
    assert isinstance(done, Done)
    structured = done.result["structuredContent"]
    assert done.result["isError"]
    assert structured["code"] == code
    assert structured.get("next_call") == next_call
