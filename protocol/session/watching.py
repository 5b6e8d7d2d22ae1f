"""The SessionManager ↔ WatchLoop conversation."""

from __future__ import annotations

from typing import Any

import orjson

from nbstage.protocol.common.frozen import frozen

CLIENT_MAX_DEPTH = 6
CLIENT_MAX_ITEMS = 200
CLIENT_MAX_TEXT = 1024
CLIENT_MAX_BYTES = 64 * 1024
TOO_DEEP = "<nested too deep>"


@frozen
class StartWatch:
    socket_path: str
    heartbeat_secs: float
    client: dict[str, Any]
    """What this client reports about itself on its watch subscription (shown by admin)."""
    edge: Any
    """The process edge that carries out the watch loop's daemon link."""


@frozen
class ClientInfoChanged:
    client: dict[str, Any]


@frozen
class DaemonIncarnationSeen:
    pid: int
    started_at: float
    version: str


@frozen
class DaemonWentAway:
    """The watch socket closed: the daemon is gone until a heartbeat says otherwise."""


@frozen
class DaemonVersionChanged:
    from_version: str
    to_version: str


def bounded_client(client: dict[str, Any] | None) -> dict[str, Any] | None:
    """A watcher's description as the daemon keeps it: at most ``CLIENT_MAX_DEPTH`` levels,
    ``CLIENT_MAX_ITEMS`` entries per level, ``CLIENT_MAX_TEXT`` characters per string and
    ``CLIENT_MAX_BYTES`` in all; deeper parts become ``TOO_DEEP``. A description still too
    large keeps its label alone."""
    if client is None:
        return None
    kept: dict[str, Any] = _bounded(client, CLIENT_MAX_DEPTH)
    size = len(orjson.dumps(kept))
    if size <= CLIENT_MAX_BYTES:
        return kept
    label = kept.get("label")
    return {
        "label": label if isinstance(label, str) else None,
        "dropped": f"the description was {size:,} bytes, over {CLIENT_MAX_BYTES:,}",
    }


def _bounded(value: Any, depth: int) -> Any:
    if isinstance(value, dict):
        if depth == 0:
            return TOO_DEEP
        items = list(value.items())[:CLIENT_MAX_ITEMS]
        return {str(k)[:CLIENT_MAX_TEXT]: _bounded(v, depth - 1) for k, v in items}
    if isinstance(value, list):
        if depth == 0:
            return TOO_DEEP
        return [_bounded(v, depth - 1) for v in value[:CLIENT_MAX_ITEMS]]
    if isinstance(value, str):
        return value[:CLIENT_MAX_TEXT]
    return value
