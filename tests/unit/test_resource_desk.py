"""The supervisor's resource requests (actors/proxy/resource_calls.py) with a stand-in
outbox: answered at once, sent to the child, or held, as tools are."""

from __future__ import annotations

from typing import Any

import pytest

from nbstage.actors.proxy.listen_streams import ListenStreams
from nbstage.actors.proxy.resource_calls import ResourceDesk
from nbstage.protocol.mcp import jsonrpc
from nbstage.protocol.mcp.resources import ResourceMethod
from nbstage.protocol.mcp.subscriptions import Change
from nbstage.protocol.session.resource_messages import (
    ResourceAnswered,
    ResourceListChanged,
    ResourceNoticeDue,
    ResourceRequested,
    ResourceSubscriptionsChanged,
    ResourceUpdated,
)

LEGACY, MODERN = "2025-11-25", "2026-07-28"
URI = "nbstage://notebook/abc"


class Outbox:
    def __init__(self, ready: bool) -> None:
        self.ready = ready
        self.sent: list[Any] = []
        self.desk: ResourceDesk

    def answer(self, request_id: Any, result: dict[str, Any], version: str, method: str) -> None:
        self.sent.append(("answer", request_id, result))

    def answer_raw(self, request_id: Any, result_json: bytes) -> None:
        self.sent.append(("raw", request_id, result_json))

    def error(self, response: jsonrpc.ErrorResponse) -> None:
        self.sent.append(("error", response.id, response.code))

    def child(self, message: object) -> bool:
        if self.ready:
            self.sent.append(("child", message))
        return self.ready

    def edge(self, message: object) -> None:
        self.sent.append(("edge", message))

    def wait(self, call_id: str) -> None:
        self.sent.append(("wait", call_id))

    def send_mcp(self, message: object) -> None:
        self.sent.append(("mcp", message))

    def uris_changed(self) -> None:
        self.desk.resubscribe()


def desk_of(out: Outbox) -> ResourceDesk:
    out.desk = ResourceDesk(out, ListenStreams(out))
    return out.desk


def request(request_id: int, method: ResourceMethod, uri: str | None = None) -> jsonrpc.Request:
    return jsonrpc.Request(request_id, method.value, {"uri": uri} if uri else None)


def test_a_list_without_a_child_waits_until_a_child_has_given_one() -> None:
    out = Outbox(ready=False)
    desk = desk_of(out)
    desk.admitted("1", request(1, ResourceMethod.LIST), LEGACY)
    assert out.sent == [("wait", "1")], "never answered from an empty cache"
    out.ready = True
    desk.child_ready()
    assert out.sent[-1] == ("child", ResourceRequested("1", ResourceMethod.LIST, None))
    desk.answered(ResourceAnswered("1", b'{"resources":[{"uri":"x"}]}'))
    assert out.sent[-1] == ("raw", 1, b'{"resources":[{"uri":"x"}]}')
    out.ready = False
    desk.child_lost()
    desk.admitted("2", request(2, ResourceMethod.LIST), MODERN)
    assert out.sent[-1] == ("answer", 2, {"resources": [{"uri": "x"}]})


def test_a_list_in_flight_on_a_dying_child_is_answered_from_the_last_list() -> None:
    out = Outbox(ready=True)
    desk = desk_of(out)
    desk.list_changed(ResourceListChanged([{"uri": "y"}]))
    desk.admitted("3", request(3, ResourceMethod.LIST), LEGACY)
    out.ready = False
    desk.child_lost()
    assert out.sent[-1] == ("answer", 3, {"resources": [{"uri": "y"}]})


def test_subscriptions_outlast_a_child_and_only_subscribed_uris_are_announced() -> None:
    out = Outbox(ready=True)
    desk = desk_of(out)
    desk.admitted("4", request(4, ResourceMethod.SUBSCRIBE, URI), LEGACY)
    assert out.sent == [("child", ResourceSubscriptionsChanged([URI])), ("answer", 4, {})]
    desk.updated(ResourceUpdated(URI))
    desk.updated(ResourceUpdated(URI + "x"))
    assert out.sent[-1] == ("edge", ResourceNoticeDue(URI))
    assert sum(1 for sent in out.sent if sent[0] == "edge") == 1
    out.sent.clear()
    desk.child_ready()
    assert out.sent == [("child", ResourceSubscriptionsChanged([URI]))]


def test_what_names_nothing_is_refused_without_the_child() -> None:
    out = Outbox(ready=False)
    desk = desk_of(out)
    desk.admitted("5", request(5, ResourceMethod.READ, "file:///x"), LEGACY)
    desk.admitted("6", request(6, ResourceMethod.READ, "file:///x"), MODERN)
    desk.admitted("7", request(7, ResourceMethod.READ, "nbstage://kernel/1"), LEGACY)
    desk.admitted("8", request(8, ResourceMethod.SUBSCRIBE, URI), MODERN)
    assert out.sent == [
        ("error", 5, -32002),
        ("error", 6, -32602),
        ("error", 7, -32602),
        ("error", 8, -32601),
    ]


def test_a_changed_list_is_announced_only_after_one_was_known() -> None:
    out = Outbox(ready=True)
    desk = desk_of(out)
    desk.list_changed(ResourceListChanged([{"uri": "a"}]))
    desk.list_changed(ResourceListChanged([{"uri": "a"}]))
    assert out.sent == []
    desk.list_changed(ResourceListChanged([{"uri": "b"}]))
    assert out.sent == [("edge", ResourceNoticeDue())]


# --- subscriptions/listen streams (2026-07-28) ---------------------------------------------

CELL = URI + "/cell/c1"
SUB = "io.modelcontextprotocol/subscriptionId"


def listen(request_id: Any, **notifications: Any) -> jsonrpc.Request:
    return jsonrpc.Request(request_id, "subscriptions/listen", {"notifications": notifications})


def test_a_stream_is_acknowledged_with_what_it_gets_and_its_uris_join_the_subscriptions() -> None:
    out = Outbox(ready=True)
    desk = desk_of(out)
    desk.admitted("4", request(4, ResourceMethod.SUBSCRIBE, URI), LEGACY)
    out.sent.clear()
    asked = listen("listen-1", resourceSubscriptions=[CELL, "file:///x"], promptsListChanged=True)
    desk.listens.opened("s1", asked, MODERN)
    ack = jsonrpc.Notification(
        "notifications/subscriptions/acknowledged",
        {"notifications": {"resourceSubscriptions": [CELL]}, "_meta": {SUB: "listen-1"}},
    )
    assert out.sent == [("mcp", ack), ("child", ResourceSubscriptionsChanged([URI, CELL]))]
    out.sent.clear()
    desk.updated(ResourceUpdated(CELL))
    desk.updated(ResourceUpdated(URI))
    notice = {"uri": CELL, "_meta": {SUB: "listen-1"}}
    assert out.sent == [
        ("mcp", jsonrpc.Notification("notifications/resources/updated", notice)),
        ("edge", ResourceNoticeDue(URI)),
    ]
    out.sent.clear()
    desk.listens.cancelled("s1")
    desk.updated(ResourceUpdated(CELL))
    assert out.sent == [("child", ResourceSubscriptionsChanged([URI]))]


def test_each_stream_hears_the_kinds_it_asked_for_stamped_with_its_id() -> None:
    out = Outbox(ready=True)
    desk = desk_of(out)
    desk.listens.opened("a", listen(1, toolsListChanged=True), MODERN)
    desk.listens.opened("b", listen(2, resourcesListChanged=True), MODERN)
    out.sent.clear()
    desk.listens.changed(Change.TOOLS)
    desk.list_changed(ResourceListChanged([{"uri": "a"}]))
    desk.list_changed(ResourceListChanged([{"uri": "b"}]))
    assert out.sent == [
        ("mcp", jsonrpc.Notification("notifications/tools/list_changed", {"_meta": {SUB: 1}})),
        ("edge", ResourceNoticeDue()),
        ("mcp", jsonrpc.Notification("notifications/resources/list_changed", {"_meta": {SUB: 2}})),
    ]
    out.sent.clear()
    desk.listens.close_all()
    assert out.sent == [
        ("answer", 1, {"_meta": {SUB: 1}}),
        ("answer", 2, {"_meta": {SUB: 2}}),
    ]
    assert desk.listens.streams == {}


@pytest.mark.parametrize(
    ("asked", "version", "code"),
    [
        (listen(1, toolsListChanged=True), LEGACY, -32601),
        (jsonrpc.Request(1, "subscriptions/listen", {}), MODERN, -32602),
        (listen(1, toolsListChanged="yes"), MODERN, -32602),
        (listen(1, resourceSubscriptions=URI), MODERN, -32602),
        (listen(1, resourceSubscriptions=[URI] * 1001), MODERN, -32602),
    ],
    ids=["legacy era", "no filter", "not a boolean", "uris not a list", "too many uris"],
)
def test_a_listen_request_that_cannot_be_served_is_refused(asked, version, code) -> None:
    out = Outbox(ready=True)
    desk = desk_of(out)
    desk.listens.opened("x", asked, version)
    assert len(out.sent) == 1
    assert out.sent[0][0] == "mcp"
    assert out.sent[0][1].code == code
    assert desk.listens.streams == {}


def test_a_second_stream_with_an_open_streams_id_is_refused() -> None:
    out = Outbox(ready=True)
    desk = desk_of(out)
    desk.listens.opened("x", listen(1, toolsListChanged=True), MODERN)
    desk.listens.opened("x", listen(1, resourcesListChanged=True), MODERN)
    assert out.sent[-1][1].code == -32600
    assert desk.listens.streams["x"].wanted.tools
