"""What an actor's part asks its actor to do that any actor can: send, offload, arm a
timer, come back after the delivery's mail, answer or refuse a caller.
``NbActor.effect_carriers`` carries them out, so a part never sends, offloads or arms a
timer itself and need not import thespian.

The Room's parts return these among the Room's own actions (room/actions.py); the Daemon's
admissions return them among its own steps (admitting.py). What only one actor can carry
out (start a room, join one, start a kernel child, save the file) stays in that actor's
vocabulary.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from nbstage.protocol.common.errors import NbstageError
from nbstage.protocol.common.frozen import frozen
from nbstage.protocol.daemon_actors.edge import Origin


@frozen
class Send:
    """A message to an address the part was given (the Daemon, the edge, the kernel)."""

    to: Any
    message: Any


@frozen
class Offload:
    """Blocking work for the edge's worker threads; ``BlockingWorkDone(token)`` comes back."""

    token: Any
    work: Callable[..., Any]
    lane: str | None = None
    reports: bool = False


@frozen
class Wake:
    """A timer: ``payload`` comes back after ``seconds`` (payloads carry generations)."""

    seconds: float
    payload: Any


@frozen
class AfterMail:
    """``payload`` comes back to this actor once the edge has every message of the
    delivery under way: work that must not delay this delivery's answers."""

    payload: Any


@frozen
class Answer:
    origin: Origin
    reply: object


@frozen
class Fail:
    origin: Origin
    error: NbstageError


Effect = Send | Offload | Wake | AfterMail | Answer | Fail
