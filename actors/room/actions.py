"""What a part of the Room asks the Room to do: the Room carries these out (``Room.carry_out``),
so no part sends, offloads or arms a timer itself, and none imports thespian (ADR 0003)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from nbstage.protocol.edge import Origin
from nbstage.protocol.errors import NbstageError
from nbstage.protocol.frozen import frozen


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
class Answer:
    origin: Origin
    reply: object


@frozen
class Fail:
    origin: Origin
    error: NbstageError


@frozen
class StartKernelChild:
    """The kernel is wanted: the Room creates a Kernel actor (only an actor can)."""


@frozen
class DetachKernel:
    """The latch: the Room lets the current kernel go, for ``reason``."""

    reason: str


Action = Send | Offload | Wake | Answer | Fail | StartKernelChild | DetachKernel
