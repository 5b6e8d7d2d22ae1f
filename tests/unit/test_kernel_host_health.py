"""The circuit breaker per kernel host (actors/daemon/kernel/host_health.py) as a table:
a state and one event give the next state and what to do."""

from __future__ import annotations

import pytest

from nbstage.actors.daemon.kernel.host_health import (
    Breaker,
    BreakerPolicy,
    HostBack,
    HostHealth,
    HostLost,
    KernelLost,
    Probe,
    ProbeFailed,
    ProbeOk,
    TimePassed,
    host_facts,
    on_health_event,
)
from nbstage.actors.daemon.kernel.placement import HostFacts

POLICY = BreakerPolicy(failures_to_open=2, open_secs=10.0)
CLOSED = HostHealth()
ONE_FAILURE = HostHealth(failures=1, last_error="refused")
OPEN = HostHealth(Breaker.OPEN, failures=2, opened_at=100.0, last_error="refused")
HALF = HostHealth(Breaker.HALF_OPEN, failures=2, opened_at=100.0, last_error="refused")


@pytest.mark.parametrize(
    ("state", "event", "expected", "actions"),
    [
        pytest.param(CLOSED, TimePassed(1.0), CLOSED, [Probe()], id="closed: a tick probes"),
        pytest.param(CLOSED, ProbeOk(), CLOSED, [], id="closed: an answer keeps it"),
        pytest.param(
            CLOSED, ProbeFailed("refused", 5.0), ONE_FAILURE, [], id="closed: one failure counts"
        ),
        pytest.param(
            ONE_FAILURE,
            ProbeOk(),
            HostHealth(last_error="refused"),
            [],
            id="closed: an answer clears the count, the error stays shown",
        ),
        pytest.param(
            ONE_FAILURE,
            ProbeFailed("timed out", 100.0),
            HostHealth(Breaker.OPEN, 2, 100.0, "timed out"),
            [HostLost("timed out")],
            id="closed: the second failure in a row opens it",
        ),
        pytest.param(
            CLOSED, KernelLost(), CLOSED, [Probe()], id="closed: a lost kernel probes now"
        ),
        pytest.param(OPEN, TimePassed(105.0), OPEN, [], id="open: not probed while cooling"),
        pytest.param(
            OPEN, TimePassed(110.0), HALF, [Probe()], id="open: after open_secs, half-open probes"
        ),
        pytest.param(OPEN, ProbeOk(), OPEN, [], id="open: a stale answer changes nothing"),
        pytest.param(
            OPEN,
            ProbeFailed("reset", 103.0),
            HostHealth(Breaker.OPEN, 2, 100.0, "reset"),
            [],
            id="open: a stale failure only updates the error",
        ),
        pytest.param(OPEN, KernelLost(), OPEN, [], id="open: a lost kernel adds nothing"),
        pytest.param(HALF, ProbeOk(), CLOSED, [HostBack()], id="half-open: an answer closes it"),
        pytest.param(
            HALF,
            ProbeFailed("refused", 111.0),
            HostHealth(Breaker.OPEN, 2, 111.0, "refused"),
            [],
            id="half-open: a failure opens it again, told once already",
        ),
        pytest.param(HALF, TimePassed(112.0), HALF, [Probe()], id="half-open: a tick probes"),
        pytest.param(HALF, KernelLost(), HALF, [], id="half-open: a lost kernel adds nothing"),
    ],
)
def test_breaker(state, event, expected, actions) -> None:
    assert on_health_event(state, event, POLICY) == (expected, actions)


def test_one_failure_opens_when_the_policy_says_so() -> None:
    state, actions = on_health_event(CLOSED, ProbeFailed("x", 1.0), BreakerPolicy(1, 5.0))
    assert (state.breaker, actions) == (Breaker.OPEN, [HostLost("x")])


def test_host_facts_healthy_only_when_closed_and_counted() -> None:
    health = {"a": CLOSED, "b": OPEN, "c": HALF}
    assert host_facts(health, {"a": 2, "d": 1}) == {
        "a": HostFacts(healthy=True, kernels=2),
        "b": HostFacts(healthy=False, kernels=0),
        "c": HostFacts(healthy=False, kernels=0),
        "d": HostFacts(healthy=True, kernels=1),
    }
