"""When a subscribed notebook's changes are announced: once per burst (issue 25). Pure.

The first change of a notebook arms a quiet timer; later changes only move the time of
the last one. When the timer is due, the burst is announced if the notebook has been
quiet for QUIET seconds, or has been changing for MAX_BURST (a notebook that never stops
changing, such as a long run that prints, is still announced about once a second);
otherwise the timer is armed again for the rest of the quiet time. Every armed timer
carries a token: thespian's wakeupAfter cannot be cancelled, so a timer whose token is
no longer the burst's (the burst was announced or dropped meanwhile) does nothing.
"""

from __future__ import annotations

from typing import Final

from nbstage.protocol.common.frozen import frozen

QUIET: Final = 0.25
MAX_BURST: Final = 1.0
MIN_WAIT: Final = 0.01


@frozen
class Burst:
    started: float
    last_change: float
    token: int


@frozen
class Arm:
    """Arm a timer that is due in ``after`` seconds with ``token``."""

    after: float
    token: int


def changed(burst: Burst | None, now: float, token: int) -> tuple[Burst, Arm | None]:
    """A change at ``now``: a new burst arms a timer with ``token``; a burst under way
    just remembers the change (its timer is armed already)."""
    if burst is None:
        return Burst(now, now, token), Arm(QUIET, token)
    return Burst(burst.started, now, burst.token), None


def due(
    burst: Burst | None, token: int, now: float, next_token: int
) -> tuple[Burst | None, bool, Arm | None]:
    """A timer with ``token`` is due at ``now``: (the burst after it, whether to announce
    now, the timer to arm next, which carries ``next_token``)."""
    if burst is None or burst.token != token:
        return burst, False, None
    quiet_for = now - burst.last_change
    if quiet_for >= QUIET or now - burst.started >= MAX_BURST:
        return None, True, None
    after = max(MIN_WAIT, min(QUIET - quiet_for, MAX_BURST - (now - burst.started)))
    return Burst(burst.started, burst.last_change, next_token), False, Arm(after, next_token)
