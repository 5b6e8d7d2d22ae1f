"""Whether a kernel host is taken as healthy: a circuit breaker per host, as a pure decision.

Issue 26, docs/adr/0007-kernel-hosts.md. Closed: the host is healthy and probed on each
tick. ``failures_to_open`` probes failing in a row open it: the host is lost, rooms are
told, and it is not probed for ``open_secs``. Then it is half-open: one probe decides,
closed again if it answers, open for another ``open_secs`` if not. A kernel whose
channels drop on a closed host asks for a probe now rather than at the next tick. Only a
closed host takes new kernels. Time is an argument, so the tests drive it with numbers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from enum import Enum

from nbstage.actors.daemon.kernel.placement import HostFacts
from nbstage.protocol.common.frozen import frozen


class Breaker(Enum):
    CLOSED = "healthy"
    OPEN = "lost"
    HALF_OPEN = "checking"


@frozen
class BreakerPolicy:
    failures_to_open: int = 2
    open_secs: float = 10.0


DEFAULT_POLICY = BreakerPolicy()


@frozen
class HostHealth:
    breaker: Breaker = Breaker.CLOSED
    failures: int = 0
    """Probes failed in a row."""
    opened_at: float | None = None
    last_error: str | None = None


@frozen
class ProbeOk:
    pass


@frozen
class ProbeFailed:
    error: str
    now: float


@frozen
class KernelLost:
    """A kernel's channels to the host dropped."""


@frozen
class TimePassed:
    now: float


HealthEvent = ProbeOk | ProbeFailed | KernelLost | TimePassed


@frozen
class Probe:
    """Ask the host ``GET /api`` now (the caller skips it when one is under way)."""


@frozen
class HostLost:
    error: str


@frozen
class HostBack:
    pass


HealthAction = Probe | HostLost | HostBack


def on_health_event(
    state: HostHealth, event: HealthEvent, policy: BreakerPolicy = DEFAULT_POLICY
) -> tuple[HostHealth, list[HealthAction]]:
    """The host's next state and what to do, for one event."""
    if isinstance(event, ProbeOk):
        if state.breaker is Breaker.HALF_OPEN:
            return HostHealth(), [HostBack()]
        if state.breaker is Breaker.CLOSED:
            return replace(state, failures=0), []
        return state, []  # an answer to a probe sent before the host was taken as lost
    if isinstance(event, ProbeFailed):
        return _failed(state, event, policy)
    if isinstance(event, KernelLost):
        return state, [Probe()] if state.breaker is Breaker.CLOSED else []
    if state.breaker is Breaker.OPEN:
        opened = state.opened_at if state.opened_at is not None else event.now
        if event.now - opened < policy.open_secs:
            return state, []
        return replace(state, breaker=Breaker.HALF_OPEN), [Probe()]
    return state, [Probe()]


def _failed(
    state: HostHealth, event: ProbeFailed, policy: BreakerPolicy
) -> tuple[HostHealth, list[HealthAction]]:
    if state.breaker is Breaker.OPEN:
        return replace(state, last_error=event.error), []
    if state.breaker is Breaker.HALF_OPEN:
        return replace(state, breaker=Breaker.OPEN, opened_at=event.now, last_error=event.error), []
    failures = state.failures + 1
    if failures < policy.failures_to_open:
        return replace(state, failures=failures, last_error=event.error), []
    lost = HostHealth(Breaker.OPEN, failures, event.now, event.error)
    return lost, [HostLost(event.error)]


def host_facts(
    health: Mapping[str, HostHealth], kernels: Mapping[str, int]
) -> dict[str, HostFacts]:
    """What placement is told of each host: healthy only when closed, and its kernels.
    A host with no health yet is healthy (not checked yet), as placement takes it."""
    names = set(health) | set(kernels)
    return {
        name: HostFacts(
            healthy=health.get(name, HostHealth()).breaker is Breaker.CLOSED,
            kernels=kernels.get(name, 0),
        )
        for name in names
    }
