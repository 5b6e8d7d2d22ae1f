"""The supervisor's pure rules: when to restart its child and which notebook to rejoin.

SPEC §8 "Restarts" for restart_policy.py and "Restart target" for restart_target.py.
Time is an argument of the policy, so each row is a plain sequence of crash times.

The budget, stated as arithmetic (as triotp states its own): with ``max_crashes = n``,
crashes 1..n inside one window each restart after ``min(max_backoff,
first_backoff * 2**k)`` for the k-th crash since the child was last ready (k from 0),
and crash n+1 inside the window opens the circuit for ``circuit_secs``. Handoffs and
``reconnect`` restart at once; neither is a crash.
"""

from __future__ import annotations

from typing import Any

import pytest

from nbstage.actors.proxy.restart_policy import (
    DEFAULT_POLICY,
    OpenCircuit,
    RestartAfter,
    RestartPolicy,
    RestartState,
    child_crashed,
    child_ready,
    circuit_elapsed,
    circuit_is_open,
    handoff,
    reconnect,
)
from nbstage.actors.proxy.restart_target import RestartTarget, after_change
from nbstage.protocol.session.supervision import RestartTargetChanged, TargetChange

# --- restart policy ---------------------------------------------------------------------------

HANDOFF = ("handoff",)
RECONNECT = ("reconnect",)
READY = ("ready",)


def crash(at: float) -> tuple[str, float]:
    return ("crash", at)


def crashes(*times: float) -> list[tuple[str, float]]:
    return [crash(t) for t in times]


def run(
    ops: list[tuple[Any, ...]], policy: RestartPolicy = DEFAULT_POLICY
) -> tuple[RestartState, list[RestartAfter | OpenCircuit | None]]:
    """Apply the operations in order; the decision of each (None for ``ready``)."""
    state, decisions = RestartState(), []
    for op in ops:
        match op:
            case ("crash", now):
                state, decision = child_crashed(state, now, policy)
            case ("handoff",):
                state, decision = handoff(state)
            case ("reconnect",):
                state, decision = reconnect(state)
            case ("ready",):
                state, decision = child_ready(state), None
        decisions.append(decision)
    return state, decisions


def after(*delays: float) -> list[RestartAfter]:
    return [RestartAfter(d) for d in delays]


FIRST_FIVE = after(0.2, 0.4, 0.8, 1.6, 3.2)


@pytest.mark.parametrize(
    ("ops", "decisions"),
    [
        pytest.param(
            crashes(0, 1, 2, 3, 4),
            FIRST_FIVE,
            id="five quick crashes restart after 0.2, 0.4, 0.8, 1.6 and 3.2 s",
        ),
        pytest.param(
            crashes(0, 1, 2, 3, 4, 5),
            [*FIRST_FIVE, OpenCircuit(65.0)],
            id="the sixth crash inside 30 s opens the circuit for 60 s",
        ),
        pytest.param(
            crashes(*range(0, 90, 10)),
            after(0.2, 0.4, 0.8, 1.6, 3.2, 5.0, 5.0, 5.0, 5.0),
            id="crashes 10 s apart never open the circuit, and the backoff stops at 5 s",
        ),
        pytest.param(
            crashes(0, 7, 14, 21, 28, 35),
            [*FIRST_FIVE, RestartAfter(5.0)],
            id="six crashes spread over more than 30 s never open the circuit",
        ),
        pytest.param(
            crashes(0, 1, 2, 3, 4, 30),
            [*FIRST_FIVE, RestartAfter(5.0)],
            id="a crash exactly 30 s old has left the window",
        ),
        pytest.param(
            crashes(0.5, 1, 2, 3, 4, 30),
            [*FIRST_FIVE, OpenCircuit(90.0)],
            id="a crash 29.5 s old still counts",
        ),
        pytest.param(
            [*crashes(0, 1, 2, 3, 4, 5), crash(70)],
            [*FIRST_FIVE, OpenCircuit(65.0), RestartAfter(5.0)],
            id="a crash after the circuit elapsed restarts again, with the backoff where it was",
        ),
        pytest.param(
            [HANDOFF],
            [RestartAfter(0.0)],
            id="a handoff restarts at once",
        ),
        pytest.param(
            [*crashes(0, 1, 2, 3), HANDOFF, HANDOFF, HANDOFF, crash(4), crash(5)],
            [*FIRST_FIVE[:4], *after(0.0, 0.0, 0.0), RestartAfter(3.2), OpenCircuit(65.0)],
            id="handoffs are not crashes: they neither spend the budget nor reset the backoff",
        ),
        pytest.param(
            [*crashes(0, 1, 2, 3, 4, 5), RECONNECT],
            [*FIRST_FIVE, OpenCircuit(65.0), RestartAfter(0.0)],
            id="reconnect closes an open circuit and restarts now",
        ),
        pytest.param(
            [*crashes(0, 1, 2, 3, 4, 5), RECONNECT, *crashes(6, 7, 8, 9, 10, 11)],
            [*FIRST_FIVE, OpenCircuit(65.0), RestartAfter(0.0), *FIRST_FIVE, OpenCircuit(71.0)],
            id="after reconnect the budget and the backoff start afresh",
        ),
        pytest.param(
            [crash(0), crash(1), READY, crash(2)],
            [*after(0.2, 0.4), None, RestartAfter(0.2)],
            id="a child that became ready resets the backoff",
        ),
        pytest.param(
            [*[op for t in range(5) for op in (crash(t), READY)], crash(5)],
            [*[RestartAfter(0.2), None] * 5, OpenCircuit(65.0)],
            id="a child that became ready does not refill the crash budget",
        ),
    ],
)
def test_crash_sequences_get_these_decisions(
    ops: list[tuple[Any, ...]], decisions: list[RestartAfter | OpenCircuit | None]
) -> None:
    _, got = run(ops)
    assert got == decisions


@pytest.mark.parametrize(
    "n",
    [
        pytest.param(n, id=f"with max_crashes={n} crash {n + 1} inside the window opens it")
        for n in (1, 2, 3, 5, 8)
    ],
)
def test_the_crash_after_the_budget_opens_the_circuit(n: int) -> None:
    policy = RestartPolicy(max_crashes=n)
    _, decisions = run(crashes(*range(n + 1)), policy)
    assert all(isinstance(d, RestartAfter) for d in decisions[:n])
    assert decisions[n] == OpenCircuit(n + policy.circuit_secs)


@pytest.mark.parametrize(
    "n",
    [
        pytest.param(n, id=f"with max_crashes={n} crashes one window apart never open it")
        for n in (1, 2, 5)
    ],
)
def test_crashes_a_window_apart_never_open_the_circuit(n: int) -> None:
    policy = RestartPolicy(max_crashes=n)
    times = [k * policy.window_secs for k in range(3 * n + 3)]
    _, decisions = run(crashes(*times), policy)
    assert all(isinstance(d, RestartAfter) for d in decisions)


@pytest.mark.parametrize(
    ("policy", "delays"),
    [
        pytest.param(
            DEFAULT_POLICY,
            [0.2, 0.4, 0.8, 1.6, 3.2, 5.0, 5.0],
            id="by default 0.2 s doubles up to 5 s",
        ),
        pytest.param(
            RestartPolicy(first_backoff=1.0, max_backoff=3.0),
            [1.0, 2.0, 3.0, 3.0],
            id="the backoff is first_backoff times 2 to the k, capped at max_backoff",
        ),
        pytest.param(
            RestartPolicy(first_backoff=0.5, max_backoff=100.0),
            [0.5, 1.0, 2.0, 4.0, 8.0],
            id="a high cap leaves the doubling alone",
        ),
    ],
)
def test_the_backoff_doubles_from_the_first_delay_to_the_cap(
    policy: RestartPolicy, delays: list[float]
) -> None:
    apart = policy.window_secs
    _, decisions = run(crashes(*(k * apart for k in range(len(delays)))), policy)
    assert decisions == after(*delays)


OPENED_AT_5 = [*crashes(0, 1, 2, 3, 4, 5)]


@pytest.mark.parametrize(
    ("ops", "now", "is_open", "elapsed"),
    [
        pytest.param([], 0.0, False, False, id="a fresh supervisor has no circuit"),
        pytest.param(
            crashes(0, 1, 2, 3, 4), 4.0, False, False, id="crashes inside the budget keep it closed"
        ),
        pytest.param(OPENED_AT_5, 5.0, True, False, id="the circuit is open once it opens"),
        pytest.param(OPENED_AT_5, 64.9, True, False, id="it is still open just before 60 s"),
        pytest.param(
            OPENED_AT_5, 65.0, False, True, id="at 60 s it is no longer open and has elapsed"
        ),
        pytest.param(OPENED_AT_5, 500.0, False, True, id="long after, it has still elapsed"),
        pytest.param(
            [*OPENED_AT_5, RECONNECT], 6.0, False, False, id="reconnect closes it at once"
        ),
    ],
)
def test_the_circuit_stays_open_for_60_seconds(
    ops: list[tuple[Any, ...]], now: float, is_open: bool, elapsed: bool
) -> None:
    state, _ = run(ops)
    assert circuit_is_open(state, now) is is_open
    assert circuit_elapsed(state, now) is elapsed


@pytest.mark.parametrize(
    ("ops", "restarts", "counted"),
    [
        pytest.param(crashes(0, 1, 2), 3, 3, id="every restarted crash counts one restart"),
        pytest.param([HANDOFF, HANDOFF], 2, 0, id="a handoff counts a restart but no crash"),
        pytest.param(
            [crash(0), HANDOFF, crash(1)], 3, 2, id="a handoff between crashes adds no crash"
        ),
        pytest.param(
            OPENED_AT_5, 5, 6, id="opening the circuit counts the crash but not a restart"
        ),
        pytest.param(
            [*OPENED_AT_5, RECONNECT], 6, 0, id="reconnect counts a restart and forgets the crashes"
        ),
        pytest.param([crash(0), READY, crash(1)], 2, 2, id="ready changes neither count"),
        pytest.param(
            crashes(0, 40), 2, 1, id="crashes that left the window are forgotten, restarts are not"
        ),
    ],
)
def test_restarts_and_crashes_are_counted(
    ops: list[tuple[Any, ...]], restarts: int, counted: int
) -> None:
    state, _ = run(ops)
    assert state.restarts == restarts
    assert len(state.crashes) == counted


# --- restart target ---------------------------------------------------------------------------

PATH_A = "/work/a.ipynb"
PATH_A2 = "/work/renamed.ipynb"
NO_TARGET = RestartTarget()
A_BY_UUID = RestartTarget("nb-a", "nb-a")
A_BY_PATH = RestartTarget(PATH_A, "nb-a")
HANDED_OVER_UUID = RestartTarget("nb-a", None)
"""What the supervisor starts with when NBSTAGE_REJOIN_NOTEBOOK names a UUID."""


def joined(notebook_id: str, path: str | None = None) -> RestartTargetChanged:
    return RestartTargetChanged(TargetChange.JOINED, notebook_id, path)


def saved(notebook_id: str, path: str) -> RestartTargetChanged:
    return RestartTargetChanged(TargetChange.SAVED, notebook_id, path)


def left(notebook_id: str) -> RestartTargetChanged:
    return RestartTargetChanged(TargetChange.LEFT, notebook_id, None)


@pytest.mark.parametrize(
    ("before", "change", "target"),
    [
        pytest.param(
            NO_TARGET,
            joined("nb-a", PATH_A),
            A_BY_PATH,
            id="a connect to a notebook with a file sets the path",
        ),
        pytest.param(
            NO_TARGET,
            joined("nb-a"),
            A_BY_UUID,
            id="a connect to a notebook without a file, or a create, sets the UUID",
        ),
        pytest.param(
            A_BY_PATH,
            joined("nb-b"),
            RestartTarget("nb-b", "nb-b"),
            id="a connect to another notebook replaces the target",
        ),
        pytest.param(
            A_BY_UUID,
            saved("nb-a", PATH_A),
            A_BY_PATH,
            id="saving the target notebook turns its UUID into the path",
        ),
        pytest.param(
            A_BY_PATH,
            saved("nb-a", PATH_A2),
            RestartTarget(PATH_A2, "nb-a"),
            id="saving the target notebook under a new path moves the target there",
        ),
        pytest.param(
            A_BY_UUID,
            saved("nb-b", "/work/b.ipynb"),
            A_BY_UUID,
            id="saving another notebook keeps the target",
        ),
        pytest.param(
            NO_TARGET,
            saved("nb-a", PATH_A),
            NO_TARGET,
            id="a save with no target sets none",
        ),
        pytest.param(
            A_BY_PATH,
            left("nb-a"),
            NO_TARGET,
            id="disconnecting the active notebook clears the target",
        ),
        pytest.param(
            A_BY_UUID,
            left("nb-b"),
            A_BY_UUID,
            id="disconnecting a parked notebook keeps the target",
        ),
        pytest.param(
            HANDED_OVER_UUID,
            left("nb-a"),
            NO_TARGET,
            id="disconnecting the notebook rejoined from a handed-over UUID clears the target",
        ),
        pytest.param(
            HANDED_OVER_UUID,
            saved("nb-a", PATH_A),
            A_BY_PATH,
            id="saving the notebook rejoined from a handed-over UUID turns it into the path",
        ),
    ],
)
def test_each_reported_change_leaves_this_restart_target(
    before: RestartTarget, change: RestartTargetChanged, target: RestartTarget
) -> None:
    assert after_change(before, change) == target
