"""The ghost-room reaper's choices, as pure functions of the rooms it sees.

A room can be reaped only when it has no peers, no kernel, no reservation (a
join or creation in flight) and a known idle time. Those idle past the TTL go,
oldest first; and while more idle rooms remain than the soft cap allows, the
oldest of the rest go early.

Removal waits on the room's durability barrier (its final save or flush). A reaped
room whose barrier failed is kept, with its unsaved edits, and tried again at the
next sweep: the reaper never loses edits.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum

from nbstage.protocol.common.frozen import frozen
from nbstage.protocol.daemon_actors.rooms import CloseReason


@frozen
class RoomFacts:
    notebook_id: str
    peers: int
    has_kernel: bool
    idle_since: float | None
    reserved: bool


def choose_rooms_to_reap(
    rooms: Sequence[RoomFacts], now: float, ttl_secs: float, soft_cap: int
) -> list[str]:
    idle = sorted(
        (
            (r.idle_since, r)
            for r in rooms
            if r.peers == 0 and not r.has_kernel and not r.reserved and r.idle_since is not None
        ),
        key=lambda pair: pair[0],
    )
    expired = [r for since, r in idle if now - since >= ttl_secs]
    remaining = [r for _, r in idle[len(expired) :]]
    early = remaining[: max(0, len(remaining) - soft_cap)]
    return [r.notebook_id for r in (*expired, *early)]


def is_reserved(starting: bool, joins_sent: int, joins_seen: int) -> bool:
    """Being created, or a join the Daemon sent has not yet shown in the room's status."""
    return starting or joins_sent > joins_seen


class AfterClose(StrEnum):
    REMOVE = "remove"
    KEEP = "keep"
    """Serve on with the unsaved edits; the room is reopened."""


def after_close(reason: CloseReason, saved: bool, daemon_stopping: bool) -> AfterClose:
    """What becomes of a room once its durability barrier has finished, well or not.

    Only the reaper's own choice is undone by a failed barrier: an operator's evict is
    answered "not saved", and a stopping daemon has nowhere left to keep a room.
    """
    if not saved and reason is CloseReason.REAPED and not daemon_stopping:
        return AfterClose.KEEP
    return AfterClose.REMOVE
