"""Blocking work an actor hands to its process's edge, and the word that it is done.

Actors never block (SPEC §2 rule 4): starting or stopping a kernel, writing a
notebook file, an execution record or a registry row all run on a worker thread
of the edge, which tells the actor :class:`BlockingWorkDone` afterwards. The work
touches only what the actor hands over for it (an immutable snapshot, or an
object the actor leaves alone until the answer comes). Work in the same ``lane``
runs one at a time, in the order it was asked for, so two saves of one notebook
can never land out of order.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from nbstage.protocol.common.frozen import frozen


@frozen
class BlockingWorkRequested:
    token: Any
    """What the work is about, as the asking actor wants it back (a small dataclass)."""
    work: Callable[..., Any]
    reply_to: Any
    lane: str | None = None
    reports: bool = False
    """The work takes one argument, ``report(line)``: each line comes back to the actor
    as WorkProgressed while the work runs (a build's own output, say)."""


@frozen
class WorkProgressed:
    """A line that work still under way reported; it always arrives before its Done."""

    token: Any
    line: str


@frozen
class BlockingWorkDone:
    token: Any
    result: Any = None
    error: BaseException | None = None

    @property
    def ok(self) -> bool:
        return self.error is None
