"""The watch loop's reconcile step: what the daemon's identity stream means (SPEC §7).

Pure: ``reconcile(state, event)`` gives the new state and the actions the
WatchLoop actor carries out. A closed socket or an explicit disconnect event
confirms the daemon is gone; a failed identity query alone does not. A live
daemon whose version differs from the baseline calls for a handoff; a new
incarnation of the same version invalidates every handle bound to the old one.
"""

from __future__ import annotations

from dataclasses import replace

from nbstage.protocol.common.frozen import frozen

FIRST_RETRY = 0.1
MAX_RETRY = 2.0


@frozen
class Identity:
    pid: int
    started_at: float
    version: str

    @property
    def incarnation(self) -> tuple[int, float]:
        return (self.pid, self.started_at)


@frozen
class WatchState:
    baseline_version: str | None = None
    live: Identity | None = None
    """The incarnation last seen alive, or None while absence is confirmed or unknown."""
    last_known: Identity | None = None
    absent: bool = False
    retry: float = FIRST_RETRY
    handed_off: bool = False


# events
@frozen
class HeartbeatSeen:
    identity: Identity


@frozen
class LinkClosed:
    """The watch socket closed, or the daemon said it is going away: absence confirmed."""


@frozen
class QueryFailed:
    """An identity query or a connect attempt failed; not proof of absence on its own."""


@frozen
class DeliveryLagged:
    """Heartbeats stopped arriving on time, or events were missed."""


# actions
@frozen
class Handoff:
    from_version: str
    to_version: str


@frozen
class IncarnationChanged:
    """Handles bound to any other incarnation are stale; recovery may run against this one."""

    identity: Identity


@frozen
class DaemonAbsent:
    pass


@frozen
class Reconnect:
    after: float


@frozen
class QueryIdentity:
    pass


Action = Handoff | IncarnationChanged | DaemonAbsent | Reconnect | QueryIdentity


def reconcile(state: WatchState, event: object) -> tuple[WatchState, list[Action]]:
    match event:
        case HeartbeatSeen(identity):
            return _seen(state, identity)
        case LinkClosed():
            gone = replace(state, live=None, absent=True, retry=FIRST_RETRY)
            actions: list[Action] = [] if state.absent else [DaemonAbsent()]
            return gone, [*actions, Reconnect(FIRST_RETRY)]
        case QueryFailed():
            slower = replace(state, retry=min(MAX_RETRY, state.retry * 2))
            return slower, [Reconnect(state.retry)]
        case DeliveryLagged():
            return state, [QueryIdentity()]
    raise TypeError(f"unknown watch event {event!r}")


def against_baseline(baseline: str | None, version: str) -> tuple[str, Handoff | None]:
    """The first live version seen becomes the baseline; any other version hands off."""
    if baseline is None or version == baseline:
        return version, None
    return baseline, Handoff(baseline, version)


def _seen(state: WatchState, identity: Identity) -> tuple[WatchState, list[Action]]:
    baseline, handoff = against_baseline(state.baseline_version, identity.version)
    seen = replace(
        state,
        baseline_version=baseline,
        live=identity,
        last_known=identity,
        absent=False,
        retry=FIRST_RETRY,
    )
    if handoff is not None:
        if state.handed_off:
            return seen, []
        return replace(seen, handed_off=True), [handoff]
    if state.last_known is not None and state.last_known.incarnation != identity.incarnation:
        return seen, [IncarnationChanged(identity)]
    if state.last_known is None:
        return seen, [IncarnationChanged(identity)]
    return seen, []
