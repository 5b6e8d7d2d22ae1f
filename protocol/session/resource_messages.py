"""Messages about notebooks as MCP resources (issue 25) between the ProxySupervisor, its
edge and the session child, and the timer payloads of both sides.

Supervisor → child: ResourceRequested (a list or a read), ResourceSubscriptionsChanged
(every URI the client is subscribed to, after each change and to each new child).
Child → supervisor: ResourceAnswered or ResourceRefused, ResourceListChanged (with the
new list, which the supervisor keeps for while no child is up), ResourceUpdated (a
subscribed notebook changed; once per burst). Supervisor → edge: ResourceNoticeDue,
written only where the era allows unasked notifications.
"""

from __future__ import annotations

from typing import Any

import orjson

from nbstage.protocol.common.frozen import frozen
from nbstage.protocol.mcp.resources import ResourceFailure, ResourceMethod


@frozen
class ResourceRequested:
    call_id: str
    method: ResourceMethod
    uri: str | None = None


@frozen
class ResourceAnswered:
    call_id: str
    result_json: bytes
    """The complete MCP result, encoded: a notebook read crosses as bytes, and on a
    legacy connection reaches stdout undecoded."""

    def result(self) -> dict[str, Any]:
        result: dict[str, Any] = orjson.loads(self.result_json)
        return result


@frozen
class ResourceRefused:
    call_id: str
    failure: ResourceFailure
    message: str
    uri: str | None = None


@frozen
class ResourceListChanged:
    resources: list[dict[str, Any]]


@frozen
class ResourceUpdated:
    uri: str


@frozen
class ResourceSubscriptionsChanged:
    uris: list[str]


@frozen
class ResourceNoticeDue:
    """A notification for the client: resources/updated (with ``uri``) or list_changed."""

    uri: str | None = None


@frozen
class NotebookChanged:
    """WatchLoop → SessionManager: the daemon said a notebook's document changed."""

    notebook_id: str
    revision: int | None = None


@frozen
class RoomsChanged:
    """WatchLoop → SessionManager: a room opened, closed or got a new file name."""


@frozen
class ResourceWaitExpired:
    """Supervisor timer: a resource request that waited this long for a child fails."""

    call_id: str


@frozen
class QuietCheckDue:
    """Session timer for one notebook's burst of changes; ``token`` tells an armed
    timer from a stale one (thespian's wakeupAfter cannot be cancelled)."""

    notebook_id: str
    token: int
