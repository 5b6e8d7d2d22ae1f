"""The ProxySupervisor's pure parts as tables: what a tools/call is admitted as
(tool_calls.admit), the requeue rule for calls on a child that died (tool_calls.requeue),
the restart banner (restart_notices.banner), the child slot's generations and the tool
list's changes."""

from __future__ import annotations

import pytest

from nbstage.actors.proxy import restart_notices
from nbstage.actors.proxy.child_slot import ChildSlot
from nbstage.actors.proxy.restart_policy import RestartState
from nbstage.actors.proxy.tool_calls import PendingCall, admit, requeue
from nbstage.actors.proxy.tool_list import ToolList
from nbstage.protocol.daemon.notices import Notice, NoticeKind
from nbstage.protocol.mcp import jsonrpc, tools
from nbstage.protocol.mcp.tool_names import ToolName


def call(attempts: int, sent_to: int | None) -> PendingCall:
    return PendingCall(1, ToolName.GET_ALL_CELLS, {}, "k", "2025-11-25", None, attempts, sent_to)


@pytest.mark.parametrize(
    ("attempts", "sent_to", "failed", "waits_again"),
    [
        (0, None, False, True),
        (1, 3, False, True),
        (2, 3, True, False),
        (2, None, False, True),
    ],
)
def test_a_call_on_a_dead_child_is_retried_once(
    attempts: int, sent_to: int | None, failed: bool, waits_again: bool
) -> None:
    calls = {"c": call(attempts, sent_to)}
    assert requeue(calls) == (["c"] if failed else [])
    assert (calls["c"].sent_to is None) == waits_again


RENEWED = restart_notices.KERNEL_RENEWED_BY_UPGRADE


@pytest.mark.parametrize(
    ("when_rejoining", "rejoining", "messages"),
    [
        (None, False, ["Session server restarted"]),
        (RENEWED, False, ["Session server restarted"]),
        (None, True, ["Session server restarted, rejoin requested"]),
        (RENEWED, True, ["Session server restarted, rejoin requested", RENEWED.message]),
    ],
)
def test_the_banner_names_the_rejoin_and_what_it_costs(
    when_rejoining: Notice | None, rejoining: bool, messages: list[str]
) -> None:
    banner = restart_notices.banner(restart_notices.RESTARTED, when_rejoining, rejoining)
    assert [notice.message for notice in banner] == messages
    assert banner[0].kind is NoticeKind.SESSION_RESTARTED


def test_the_circuit_message_counts_the_crashes_and_the_wait() -> None:
    restart = RestartState(crashes=(1.0, 2.0, 3.0), circuit_open_until=130.0)
    message = restart_notices.circuit_message(restart, now=100.0)
    assert "crashed 3 times" in message
    assert "in 30 s" in message


def test_each_start_is_a_new_generation_neither_configured_nor_ready() -> None:
    slot = ChildSlot()
    assert slot.start() == 1
    slot.ready = slot.configured = True
    assert slot.start() == 2
    assert (slot.live, slot.ready, slot.configured, slot.warming) == (2, False, False, False)
    assert slot.stop() == 2
    assert slot.stop() is None


def nested(depth: int) -> dict[str, object]:
    value: dict[str, object] = {}
    for _ in range(depth):
        value = {"x": value}
    return value


@pytest.mark.parametrize(
    ("params", "outcome"),
    [
        ({"name": "get_all_cells", "arguments": {}}, PendingCall),
        ([1, 2], jsonrpc.ErrorResponse),
        ({"name": "no_such_tool"}, jsonrpc.ErrorResponse),
        ({"name": 7}, jsonrpc.ErrorResponse),
        ({"name": "get_all_cells", "arguments": nested(tools.MAX_ARGUMENT_DEPTH + 1)}, str),
        ({"name": "reconnect", "arguments": {"unknown": 1}}, str),
    ],
)
def test_what_a_tools_call_is_admitted_as(params: object, outcome: type) -> None:
    admitted = admit(jsonrpc.Request(5, "tools/call", params), "e1", "2025-11-25", "tok")
    assert isinstance(admitted, outcome)
    if isinstance(admitted, PendingCall):
        assert (admitted.key, admitted.progress_token) == ("e1:int:5", "tok")


def test_the_tool_list_adopts_a_live_list_and_says_what_to_persist_and_announce() -> None:
    listing = ToolList()
    listing.start([])
    assert listing.tools == tools.builtin_tool_list()
    live = [{"name": "a"}]
    assert listing.adopt([]) == (False, False)
    assert listing.adopt(live) == (True, True)
    assert listing.adopt(live) == (False, False)
    cached = ToolList()
    cached.start(live)
    assert cached.adopt(live) == (False, False)
