"""The SessionManager ↔ WatchLoop conversation."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class StartWatch:
    socket_path: str
    heartbeat_secs: float
    client: dict[str, Any]
    """What this client reports about itself on its watch subscription (shown by admin)."""
    edge: Any
    """The process edge that carries out the watch loop's daemon link."""


@dataclass(frozen=True, slots=True)
class ClientInfoChanged:
    client: dict[str, Any]


@dataclass(frozen=True, slots=True)
class DaemonIncarnationSeen:
    pid: int
    started_at: float
    version: str


@dataclass(frozen=True, slots=True)
class DaemonWentAway:
    """The watch socket closed: the daemon is gone until a heartbeat says otherwise."""


@dataclass(frozen=True, slots=True)
class DaemonVersionChanged:
    from_version: str
    to_version: str
