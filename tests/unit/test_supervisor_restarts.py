"""How the ProxySupervisor restarts its session child, message by message (SPEC §8)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from nbstage.protocol.supervision import ChildProcessDied, SessionConfig
from nbstage.protocol.supervisor_followups import RestartDue
from tests.unit.actor_harness import ActorBench
from tests.unit.test_session_races import SupervisorEdge, ready


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
