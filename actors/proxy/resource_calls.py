"""The resource requests the ProxySupervisor holds (issue 25), treated as it treats tools.

``resources/templates/list``, subscribe and unsubscribe, and URIs that name nothing are
answered here at once. A list or a read goes to the session child; while no child is up,
a list is answered from the one the last child gave (kept here, never an empty cache:
with none yet, the list waits for the child like a call), and a read waits for the next
child, as long as a call would. A list or read in flight on a child that dies is sent
once more to its successor. The subscriptions live here, so they outlast a child: each
new child is told them, with the URIs of the 2026-07-28 listen streams
(listen_streams.py), which hear the same changes.

A client that takes the MCP Apps extension (``mcp_apps.py``) also finds the outputs page
in the list and reads it from here; for any other client it does not exist.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from nbstage.actors.proxy.listen_streams import ListenStreams
from nbstage.protocol.mcp import jsonrpc, mcp_apps
from nbstage.protocol.mcp import resources as res
from nbstage.protocol.mcp.resources import ResourceFailure, ResourceMethod
from nbstage.protocol.mcp.subscriptions import Change
from nbstage.protocol.mcp.versions import is_modern_version
from nbstage.protocol.session.resource_messages import (
    ResourceAnswered,
    ResourceListChanged,
    ResourceNoticeDue,
    ResourceRefused,
    ResourceRequested,
    ResourceSubscriptionsChanged,
    ResourceUpdated,
    ResourceWaitExpired,
)
from nbstage.protocol.session.supervision import McpResultToSend

NOT_BACK = "The session server did not come back in time; ask again in a moment."


class Outbox(Protocol):
    """What the desk needs of the supervisor."""

    def answer(self, request_id: Any, result: dict[str, Any], version: str, method: str) -> None:
        """Send ``result``, shaped for the era of ``version``."""

    def answer_raw(self, request_id: Any, result_json: bytes) -> None: ...

    def error(self, response: jsonrpc.ErrorResponse) -> None: ...

    def child(self, message: object) -> bool:
        """Send to the live child; False when none is ready."""

    def edge(self, message: object) -> None: ...

    def wait(self, call_id: str) -> None:
        """Arm the timer after which a request still waiting for a child fails."""

    def send_mcp(self, message: object) -> None:
        """A notification (a listen stream's)."""

    def uris_changed(self) -> None:
        """The listen streams' URIs changed."""


@dataclass
class PendingResource:
    request_id: Any
    method: ResourceMethod
    uri: str | None
    version: str
    apps: bool = False
    sent: bool = False
    attempts: int = 0

    def listing(self, resources: list[dict[str, Any]]) -> dict[str, Any]:
        shown = mcp_apps.with_page_listed(resources) if self.apps else resources
        return {"resources": shown}


class ResourceDesk:
    def __init__(self, out: Outbox, listens: ListenStreams | None = None) -> None:
        self.out = out
        self.listens = listens if listens is not None else ListenStreams(out)
        self.pending: dict[str, PendingResource] = {}
        self.listing: list[dict[str, Any]] | None = None
        """The child's last list; None until a child has given one."""
        self.subscribed: dict[str, None] = {}

    def admitted(
        self, call_id: str, request: jsonrpc.Request, version: str, apps: bool = False
    ) -> None:
        method = ResourceMethod(request.method)
        uri = res.uri_of(request.params)
        if method is ResourceMethod.TEMPLATES:
            self.out.answer(request.id, {"resourceTemplates": list(res.TEMPLATES)}, version, method)
            return
        if method is ResourceMethod.LIST:
            self._hold(call_id, PendingResource(request.id, method, None, version, apps))
            return
        if method is not ResourceMethod.READ and is_modern_version(version):
            self.out.error(res.removed_in_modern(request.id, method))
            return
        page = apps and uri == mcp_apps.OUTPUT_PAGE_URI
        if page and method is ResourceMethod.READ:
            self.out.answer(request.id, {"contents": mcp_apps.page_contents()}, version, method)
            return
        if not page:
            try:
                res.parse_uri(uri)
            except res.ResourceUriError as exc:
                self.out.error(res.refused(request.id, version, exc.failure, exc.message, uri))
                return
        if method is ResourceMethod.READ:
            assert isinstance(uri, str)
            self._hold(call_id, PendingResource(request.id, method, uri, version))
        else:
            self._subscribe(str(uri), method is ResourceMethod.SUBSCRIBE)
            self.out.answer(request.id, {}, version, method)

    def _subscribe(self, uri: str, on: bool) -> None:
        if on:
            self.subscribed[uri] = None
        else:
            self.subscribed.pop(uri, None)
        self.resubscribe()

    def resubscribe(self) -> None:
        """Tell the child every URI watched, by a legacy subscription or a listen stream."""
        self.out.child(ResourceSubscriptionsChanged(self._watched()))

    def _watched(self) -> list[str]:
        return list(dict.fromkeys([*self.subscribed, *self.listens.uris()]))

    def _hold(self, call_id: str, call: PendingResource) -> None:
        self.pending[call_id] = call
        if not self._send(call_id, call):
            if call.method is ResourceMethod.LIST and self.listing is not None:
                self._answer_list(call_id)
            else:
                self.out.wait(call_id)

    def _send(self, call_id: str, call: PendingResource) -> bool:
        call.sent = self.out.child(ResourceRequested(call_id, call.method, call.uri))
        call.attempts += int(call.sent)
        return call.sent

    def _answer_list(self, call_id: str) -> None:
        call = self.pending.pop(call_id)
        result = call.listing(self.listing or [])
        self.out.answer(call.request_id, result, call.version, call.method)

    # --- the child ------------------------------------------------------------------------

    def child_ready(self) -> None:
        """A new child: it learns the subscriptions, and takes what waits for it."""
        watched = self._watched()
        if watched:
            self.out.child(ResourceSubscriptionsChanged(watched))
        for call_id, call in list(self.pending.items()):
            if not call.sent:
                self._send(call_id, call)

    def child_lost(self) -> None:
        for call_id, call in list(self.pending.items()):
            if not call.sent:
                continue
            call.sent = False
            if call.method is ResourceMethod.LIST and self.listing is not None:
                self._answer_list(call_id)
            elif call.attempts >= 2:
                self.expired(call_id)

    def answered(self, msg: ResourceAnswered) -> None:
        call = self.pending.pop(msg.call_id, None)
        if call is None:
            return
        if call.method is ResourceMethod.LIST:
            self.listing = msg.result().get("resources", [])
            if call.apps:
                self.out.answer(
                    call.request_id, call.listing(self.listing), call.version, call.method
                )
                return
        if is_modern_version(call.version):
            self.out.answer(call.request_id, msg.result(), call.version, call.method)
        else:
            self.out.answer_raw(call.request_id, msg.result_json)

    def refused(self, msg: ResourceRefused) -> None:
        call = self.pending.pop(msg.call_id, None)
        if call is not None:
            failure = res.refused(call.request_id, call.version, msg.failure, msg.message, msg.uri)
            self.out.error(failure)

    def expired(self, call_id: str, why: str = NOT_BACK) -> None:
        call = self.pending.get(call_id)
        if call is None or call.sent:
            return
        del self.pending[call_id]
        failure = ResourceFailure.UNAVAILABLE
        error = res.refused(call.request_id, call.version, failure, why, call.uri)
        self.out.error(error)

    def cancelled(self, call_id: str) -> None:
        self.pending.pop(call_id, None)

    def list_changed(self, msg: ResourceListChanged) -> None:
        if self.listing is not None and msg.resources != self.listing:
            self.out.edge(ResourceNoticeDue())
            self.listens.changed(Change.RESOURCES)
        self.listing = msg.resources

    def updated(self, msg: ResourceUpdated) -> None:
        if msg.uri in self.subscribed:
            self.out.edge(ResourceNoticeDue(msg.uri))
        self.listens.changed(Change.RESOURCE, msg.uri)


class SupervisorOutbox:
    """The Outbox of a ProxySupervisor's desk and listen streams: its MCP replies and
    notifications, its child and its timers."""

    def __init__(self, supervisor: Any, wait_limit: Any) -> None:
        self.sup = supervisor
        self.wait_limit = wait_limit

    def answer(self, request_id: Any, result: dict[str, Any], version: str, method: str) -> None:
        self.sup._send_mcp(
            jsonrpc.Response(request_id, self.sup._decorate(result, version, method))
        )

    def answer_raw(self, request_id: Any, result_json: bytes) -> None:
        self.sup.send(self.sup.edge, McpResultToSend(request_id, result_json))

    def error(self, response: jsonrpc.ErrorResponse) -> None:
        self.sup._send_mcp(response)

    def send_mcp(self, message: object) -> None:
        self.sup._send_mcp(message)

    def uris_changed(self) -> None:
        self.sup.resources.resubscribe()

    def child(self, message: object) -> bool:
        if not self.sup.slot.ready:
            return False
        self.sup._to_child(message)
        return True

    def edge(self, message: object) -> None:
        self.sup.send(self.sup.edge, message)

    def wait(self, call_id: str) -> None:
        if self.sup.config.no_daemon is not None:
            self.sup.resources.expired(call_id, self.sup.config.no_daemon)
            return
        self.sup.wakeupAfter(self.wait_limit, payload=ResourceWaitExpired(call_id))
