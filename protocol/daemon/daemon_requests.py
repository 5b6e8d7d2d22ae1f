"""Requests the Daemon or the socket edge answers about the daemon itself and the rooms it
holds."""

from __future__ import annotations

from typing import Any

from nbstage.protocol.common.frozen import frozen
from nbstage.protocol.daemon.request_wire import wire_request


@wire_request("identity")
@frozen
class GetIdentity:
    """Ask who the daemon is: pid, start time, version and incarnation."""


@wire_request("status")
@frozen
class GetStatus:
    """Identity plus the socket path and room and kernel counts."""


@wire_request("watch")
@frozen
class Watch:
    """Open a stream of heartbeats and room events on this connection."""

    client: dict[str, Any] | None = None
    """What the watching client reports about itself (label, pids, notebooks); shown by admin."""


@wire_request("clients")
@frozen
class ListClients:
    """Every connected client that reported itself on a watch subscription."""


@wire_request("shutdown")
@frozen
class ShutdownDaemon:
    """Save and flush every room, stop every kernel, then exit."""


@wire_request("list_rooms")
@frozen
class ListRooms:
    """Every resident room with its id, path, peers and flags."""


@wire_request("list_hosts")
@frozen
class ListHosts:
    """Every kernel host in the settings, with its health and kernels (issue 26)."""


@wire_request("reap")
@frozen
class RunReaper:
    """Run the ghost-room reaper now; answers with the rooms it chose."""


@wire_request("gc_envs")
@frozen
class CollectEnvironments:
    """Remove the inline environments no open room uses, last used ``older_than_secs`` ago
    or longer (0: every unused one)."""

    older_than_secs: float = 0.0


@wire_request("tree")
@frozen
class GetActorTree:
    """The live actor tree: the Daemon actor, each Room and each Kernel, with addresses and pids."""


@wire_request("log")
@frozen
class GetLog:
    """The newest lines of the daemon's logs (daemon and actors), oldest first."""

    lines: int = 50


@wire_request("evict")
@frozen
class EvictRoom:
    """Save or flush a room, stop its kernel and remove it; answers once it is gone."""

    notebook_id: str
