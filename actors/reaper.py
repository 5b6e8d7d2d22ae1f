"""The ghost-room reaper's choice, as a pure function of the rooms it sees.

A room can be reaped only when it has no peers, no kernel, no reservation (a
join or creation in flight) and a known idle time. Those idle past the TTL go,
oldest first; and while more idle rooms remain than the soft cap allows, the
oldest of the rest go early.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
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
            r
            for r in rooms
            if r.peers == 0 and not r.has_kernel and not r.reserved and r.idle_since is not None
        ),
        key=lambda r: r.idle_since,
    )
    expired = [r for r in idle if now - r.idle_since >= ttl_secs]
    remaining = idle[len(expired) :]
    early = remaining[: max(0, len(remaining) - soft_cap)]
    return [r.notebook_id for r in (*expired, *early)]
