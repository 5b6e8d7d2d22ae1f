"""When the ProxySupervisor restarts its SessionManager, as a pure decision.

Crashes restart with backoff (0.2 s doubling to 5 s) under a budget of 5 crashes
in 30 s; one more opens the circuit for 60 s. A handoff (daemon upgrade) restarts
at once and does not count. ``reconnect`` closes the circuit and restarts now.
Time is an argument, so tests drive it with plain numbers.
"""

from __future__ import annotations

from dataclasses import replace

from nbstage.protocol.common.frozen import frozen


@frozen
class RestartPolicy:
    first_backoff: float = 0.2
    max_backoff: float = 5.0
    max_crashes: int = 5
    window_secs: float = 30.0
    circuit_secs: float = 60.0


DEFAULT_POLICY = RestartPolicy()


@frozen
class RestartState:
    crashes: tuple[float, ...] = ()
    """Times of the crashes inside the window."""
    consecutive: int = 0
    """Crashes since the child last became ready; drives the backoff."""
    circuit_open_until: float | None = None
    restarts: int = 0


@frozen
class RestartAfter:
    delay: float


@frozen
class OpenCircuit:
    until: float


Decision = RestartAfter | OpenCircuit


def child_crashed(
    state: RestartState, now: float, policy: RestartPolicy = DEFAULT_POLICY
) -> tuple[RestartState, Decision]:
    crashes = (*(t for t in state.crashes if now - t < policy.window_secs), now)
    if len(crashes) > policy.max_crashes:
        until = now + policy.circuit_secs
        return replace(state, crashes=crashes, circuit_open_until=until), OpenCircuit(until)
    delay = min(policy.max_backoff, policy.first_backoff * 2**state.consecutive)
    crashed = replace(
        state, crashes=crashes, consecutive=state.consecutive + 1, restarts=state.restarts + 1
    )
    return crashed, RestartAfter(delay)


def handoff(state: RestartState) -> tuple[RestartState, Decision]:
    return replace(state, restarts=state.restarts + 1), RestartAfter(0.0)


def reconnect(state: RestartState) -> tuple[RestartState, Decision]:
    fresh = RestartState(restarts=state.restarts + 1)
    return fresh, RestartAfter(0.0)


def child_ready(state: RestartState) -> RestartState:
    return replace(state, consecutive=0)


def circuit_is_open(state: RestartState, now: float) -> bool:
    return state.circuit_open_until is not None and now < state.circuit_open_until


def circuit_elapsed(state: RestartState, now: float) -> bool:
    """True once an open circuit's time has passed and a restart may be tried."""
    return state.circuit_open_until is not None and now >= state.circuit_open_until
