"""How the ProxySupervisor restarts its session child, message by message (SPEC §8)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from nbstage.actors.proxy.restart_notices import STOPPED_FIRST
from nbstage.protocol.session.supervision import (
    ChildProcessDied,
    SessionConfig,
    StdinClosed,
    StopSessionChild,
    SupervisorStopped,
    ToolCallRequested,
)
from nbstage.protocol.session.supervisor_followups import DrainOver, RestartDue
from tests.unit.actor_harness import ActorBench
from tests.unit.test_session_races import SupervisorEdge, finished, ready


@pytest.fixture
def edge(tmp_path: Path) -> Iterator[SupervisorEdge]:
    bench = ActorBench()
    yield SupervisorEdge(bench, tmp_path)
    bench.close()


def test_a_child_that_served_is_replaced_at_once_but_configured_after_the_backoff(edge) -> None:
    edge.child_says(1, ready(1))
    edge.bench.send(edge.supervisor, ChildProcessDied(101, 1, -9))
    assert edge.started() == [1, 2], "the successor's process starts during the backoff"
    assert edge.to_child(2, SessionConfig) == []
    edge.bench.fire(edge.supervisor, RestartDue(2))
    (config,) = edge.to_child(2, SessionConfig)
    assert (config.generation, config.restarts) == (2, 1)


def test_a_child_that_never_served_waits_out_the_backoff_before_its_successor_starts(
    edge,
) -> None:
    edge.bench.send(edge.supervisor, ChildProcessDied(101, 1, 1))
    assert edge.started() == [1]
    edge.bench.fire(edge.supervisor, RestartDue(1))
    assert edge.started() == [1, 2]
    assert [c.generation for c in edge.to_child(2, SessionConfig)] == [2]


def test_a_late_timer_of_a_replaced_generation_starts_nothing(edge) -> None:
    edge.child_says(1, ready(1))
    edge.bench.send(edge.supervisor, ChildProcessDied(101, 1, -9))
    edge.bench.fire(edge.supervisor, RestartDue(2))
    edge.bench.fire(edge.supervisor, RestartDue(1))
    assert edge.started() == [1, 2]
    assert len(edge.to_child(2, SessionConfig)) == 1


# --- stdin's end with calls in flight (SPEC §8) ----------------------------------------------

RESULT = {"content": [{"type": "text", "text": "done"}], "isError": False}


def test_at_stdins_end_a_call_in_flight_is_answered_and_then_the_supervisor_stops(edge) -> None:
    edge.child_says(1, ready(1))
    edge.tools_call(7, "list_active_notebooks")
    (in_flight,) = edge.to_child(1, ToolCallRequested)
    edge.bench.send(edge.supervisor, StdinClosed(drain_secs=1.5))
    assert edge.bench.seen_of(SupervisorStopped) == []
    assert edge.bench.seen_of(StopSessionChild) == []

    edge.child_says(1, finished(in_flight.call_id, RESULT))
    assert [a["content"][0]["text"] for a in edge.answers(7)] == ["done"]
    assert len(edge.bench.seen_of(SupervisorStopped)) == 1
    assert [m.generation for m in edge.bench.seen_of(StopSessionChild)] == [1]


def stopped_first(answers: list[dict]) -> list[bool]:
    """For each answer, whether it is the error of a call the supervisor stopped before."""
    return [a["isError"] and a["content"][0]["text"] == STOPPED_FIRST for a in answers]


def test_at_stdins_end_a_call_that_never_finishes_is_answered_when_the_drain_is_over(
    edge,
) -> None:
    """The drain's end, not the answer, comes first: the call is still answered, with an
    error, and the child's answer arriving after that is not a second one."""
    edge.child_says(1, ready(1))
    edge.tools_call(7, "list_active_notebooks")
    (in_flight,) = edge.to_child(1, ToolCallRequested)
    edge.bench.send(edge.supervisor, StdinClosed(drain_secs=1.5))
    assert edge.answers(7) == []
    edge.bench.fire(edge.supervisor, DrainOver())
    assert stopped_first(edge.answers(7)) == [True]
    assert len(edge.bench.seen_of(SupervisorStopped)) == 1
    edge.child_says(1, finished(in_flight.call_id, RESULT))
    edge.bench.fire(edge.supervisor, DrainOver())
    assert stopped_first(edge.answers(7)) == [True], "answered once"
    assert len(edge.bench.seen_of(SupervisorStopped)) == 1, "stopping happens once"


def test_at_stdins_end_a_call_waiting_for_a_child_that_is_still_starting_is_answered(
    edge,
) -> None:
    """The race behind the e2e test: stdin ends while the session child is still
    starting, and the drain ends before it is ready."""
    edge.tools_call(7, "create_notebook")
    assert edge.to_child(1, ToolCallRequested) == []
    edge.bench.send(edge.supervisor, StdinClosed(drain_secs=1.5))
    edge.bench.fire(edge.supervisor, DrainOver())
    assert stopped_first(edge.answers(7)) == [True]
    assert [m.generation for m in edge.bench.seen_of(StopSessionChild)] == [1]


@pytest.mark.parametrize("drain_secs", [0.0, 1.5], ids=["a signal", "stdin's end"])
def test_with_no_call_in_flight_the_supervisor_stops_at_once(edge, drain_secs: float) -> None:
    edge.child_says(1, ready(1))
    edge.bench.send(edge.supervisor, StdinClosed(drain_secs=drain_secs))
    assert len(edge.bench.seen_of(SupervisorStopped)) == 1


def test_a_signal_does_not_wait_for_the_calls_in_flight(edge) -> None:
    edge.child_says(1, ready(1))
    edge.tools_call(7, "list_active_notebooks")
    edge.bench.send(edge.supervisor, StdinClosed())
    assert len(edge.bench.seen_of(SupervisorStopped)) == 1
    assert stopped_first(edge.answers(7)) == [True], "but they are answered"
