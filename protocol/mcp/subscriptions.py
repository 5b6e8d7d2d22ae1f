"""``subscriptions/listen``, how 2026-07-28 delivers change notifications (pure).

That revision removed ``resources/subscribe`` and unasked notifications. A client opens
a stream instead: a ``subscriptions/listen`` request whose params name what it wants
(``notifications``: ``toolsListChanged``, ``promptsListChanged``,
``resourcesListChanged``, ``resourceSubscriptions``). The server's first frame for it is
``notifications/subscriptions/acknowledged`` with the subset it will honour; then each
change notification it asked for, every frame stamped with the request's id in
``_meta["io.modelcontextprotocol/subscriptionId"]``. The request's result closes the
stream gracefully; a client ends it with ``notifications/cancelled``.

nbstage serves no prompts, so ``promptsListChanged`` is never honoured.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Any, Final

from nbstage.protocol.common.frozen import frozen
from nbstage.protocol.mcp.jsonrpc import Notification, RequestId

LISTEN_METHOD: Final = "subscriptions/listen"
ACKNOWLEDGED: Final = "notifications/subscriptions/acknowledged"
SUBSCRIPTION_ID_KEY: Final = "io.modelcontextprotocol/subscriptionId"
MAX_URIS: Final = 1000
"""The most resource URIs one stream may name."""


class Change(StrEnum):
    TOOLS = "notifications/tools/list_changed"
    RESOURCES = "notifications/resources/list_changed"
    RESOURCE = "notifications/resources/updated"


class ListenRefused(ValueError):
    """The listen request's params cannot be read; the message says why."""


@frozen
class ListenFilter:
    """What one stream honours."""

    tools: bool = False
    resources: bool = False
    uris: tuple[str, ...] = ()

    def wants(self, change: Change, uri: str | None = None) -> bool:
        match change:
            case Change.TOOLS:
                return self.tools
            case Change.RESOURCES:
                return self.resources
        return uri in self.uris

    def honoured(self) -> dict[str, Any]:
        """The filter as the acknowledgement states it: only what is on."""
        shown: dict[str, Any] = {}
        if self.tools:
            shown["toolsListChanged"] = True
        if self.resources:
            shown["resourcesListChanged"] = True
        if self.uris:
            shown["resourceSubscriptions"] = list(self.uris)
        return shown


def read_filter(params: object) -> ListenFilter:
    """The filter a listen request asks for; ListenRefused if its params are malformed."""
    if not isinstance(params, Mapping) or not isinstance(params.get("notifications"), Mapping):
        raise ListenRefused("subscriptions/listen needs params.notifications, an object")
    asked = params["notifications"]
    for key in ("toolsListChanged", "promptsListChanged", "resourcesListChanged"):
        if asked.get(key) is not None and not isinstance(asked.get(key), bool):
            raise ListenRefused(f"notifications.{key} must be a boolean")
    uris = asked.get("resourceSubscriptions") or []
    if not isinstance(uris, list) or not all(isinstance(uri, str) for uri in uris):
        raise ListenRefused("notifications.resourceSubscriptions must be a list of URIs")
    if len(uris) > MAX_URIS:
        raise ListenRefused(f"at most {MAX_URIS} resource URIs per stream")
    return ListenFilter(
        tools=asked.get("toolsListChanged") is True,
        resources=asked.get("resourcesListChanged") is True,
        uris=tuple(dict.fromkeys(uris)),
    )


def _meta(subscription_id: RequestId) -> dict[str, Any]:
    return {SUBSCRIPTION_ID_KEY: subscription_id}


def acknowledged(subscription_id: RequestId, honoured: ListenFilter) -> Notification:
    params = {"notifications": honoured.honoured(), "_meta": _meta(subscription_id)}
    return Notification(ACKNOWLEDGED, params)


def change_notice(subscription_id: RequestId, change: Change, uri: str | None) -> Notification:
    params: dict[str, Any] = {"_meta": _meta(subscription_id)}
    if change is Change.RESOURCE:
        params["uri"] = uri
    return Notification(change.value, params)


def closed(subscription_id: RequestId) -> dict[str, Any]:
    """The listen request's result: the stream's graceful end."""
    return {"_meta": _meta(subscription_id)}
