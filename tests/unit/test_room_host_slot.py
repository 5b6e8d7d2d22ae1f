"""The Room's kernel seat asking the Daemon for a kernel host slot (issue 26): what it sends,
what it does with the grant, when it hands the slot back, and what a restart that moved
the kernel answers, down to the restart_kernel tool's result (actors/daemon/room/
kernel_seat.py, room/host_slot.py, actors/session/tool_handlers.py)."""

from __future__ import annotations

from pathlib import Path

import jsonschema
import pytest

from nbstage.actors.daemon.room.actions import Answer, Send
from nbstage.actors.daemon.room.environment import EnvironmentSeat
from nbstage.actors.daemon.room.kernel_seat import KernelSeat
from nbstage.actors.session.tool_context import ToolContext
from nbstage.actors.session.tool_handlers import restart_kernel
from nbstage.protocol.common.kernel_hosts import KernelHost
from nbstage.protocol.daemon.replies import RestartCompleted
from nbstage.protocol.daemon.requests import RestartKernel
from nbstage.protocol.daemon_actors.edge import Origin
from nbstage.protocol.daemon_actors.host_grants import (
    KernelHostReleased,
    KernelPlaced,
    PlaceKernel,
)
from nbstage.protocol.daemon_actors.kernel_facts import EnvironmentView, EnvSource
from nbstage.protocol.daemon_actors.kernels import (
    KernelDied,
    KernelReady,
    KernelRestarted,
    ShutdownKernel,
    StartKernel,
)
from nbstage.protocol.daemon_actors.rooms import HostsSeen
from nbstage.protocol.mcp.output_schemas import output_schema
from nbstage.protocol.mcp.tool_args import NoArgs
from tests.unit.test_room_parts import start_for

ONE = KernelHost("one", "http://one:1", "t")
TWO = KernelHost("two", "http://two:1", "t")
ON_ONE = {"nbstage": {"kernel_host": "one"}}


def seat_on_hosts(tmp_path: Path) -> KernelSeat:
    env = EnvironmentSeat()
    env.kernel_name = "python3"
    seat = KernelSeat(env)
    seat.start(start_for(tmp_path, kernel_hosts=(ONE, TWO)), True, "daemon")
    return seat


def sent(actions: list, kind: type) -> list:
    return [a.message for a in actions if isinstance(a, Send) and isinstance(a.message, kind)]


def test_a_kernel_with_no_wish_starts_here_without_asking(tmp_path: Path) -> None:
    seat = seat_on_hosts(tmp_path)
    seat.seated("kernel")
    (start,) = sent(seat.place(None, {}), StartKernel)
    assert start.host is None
    assert start.unplaceable is None


def test_a_wish_asks_the_daemon_and_the_grant_starts_the_kernel_there(tmp_path: Path) -> None:
    seat = seat_on_hosts(tmp_path)
    seat.seated("kernel")
    assert seat.place(None, ON_ONE) == [Send("daemon", PlaceKernel("nb", "one", 1))]
    (start,) = sent(seat.placed(KernelPlaced(1, ONE), None, ON_ONE), StartKernel)
    assert start.host == ONE


def test_a_refusal_fails_the_start_with_its_reason(tmp_path: Path) -> None:
    seat = seat_on_hosts(tmp_path)
    seat.seated("kernel")
    seat.place(None, ON_ONE)
    (start,) = sent(
        seat.placed(KernelPlaced(1, None, refused="all full"), None, ON_ONE), StartKernel
    )
    assert start.unplaceable == "all full"


def test_a_grant_for_a_kernel_let_go_meanwhile_is_handed_back(tmp_path: Path) -> None:
    seat = seat_on_hosts(tmp_path)
    seat.seated("kernel")
    seat.place(None, ON_ONE)
    assert sent(seat.stop_child(), ShutdownKernel) == [ShutdownKernel()]
    late = seat.placed(KernelPlaced(1, ONE), None, ON_ONE)
    assert late == [Send("daemon", KernelHostReleased("nb", 1))]


def test_a_kernel_that_died_on_its_host_gives_the_slot_back_and_the_restart_moves_it(
    tmp_path: Path,
) -> None:
    seat = seat_on_hosts(tmp_path)
    seat.seated("kernel-1")
    seat.place(None, ON_ONE)
    seat.placed(KernelPlaced(1, ONE), None, ON_ONE)
    died = seat.died(KernelDied(None, "channels closed", "one"), "kernel-1")
    assert sent(died, KernelHostReleased) == [KernelHostReleased("nb", 1)]

    asker = Origin(1, "restart")
    restart = seat.restart(asker)
    assert sent(restart, KernelHostReleased) == [], "the slot went back already"
    seat.seated("kernel-2")
    (ask,) = sent(seat.place(None, ON_ONE), PlaceKernel)
    assert ask == PlaceKernel("nb", "one", 2, last="one", died_there=True)
    note = "kernel host 'one' is lost: the kernel runs on 'two'"
    (start,) = sent(seat.placed(KernelPlaced(2, TWO, note, "one"), None, ON_ONE), StartKernel)
    assert start.host == TWO
    view = EnvironmentView(EnvSource.HOST, host="two")
    ready = seat.ready(KernelReady(None, 1, view), "kernel-2")
    answers = [a for a in ready if isinstance(a, Answer)]
    assert answers == [Answer(asker, RestartCompleted(None, moved_from="one", moved_to="two"))]

    again = Origin(1, "restart in place")
    seat.pending_restart = [again]
    in_place = seat.restarted(KernelRestarted(again, None), "kernel-2")
    assert [a for a in in_place if isinstance(a, Answer)] == [Answer(again, RestartCompleted(None))]


def test_a_restart_on_a_host_the_daemon_has_lost_starts_a_fresh_kernel(tmp_path: Path) -> None:
    seat = seat_on_hosts(tmp_path)
    seat.seated("kernel-1")
    seat.place(None, ON_ONE)
    seat.placed(KernelPlaced(1, ONE), None, ON_ONE)
    seat.ready(KernelReady(None, 1, EnvironmentView(EnvSource.HOST, host="one")), "kernel-1")
    seat.hosts_told(HostsSeen(lost=("one",)))
    todo = seat.restart(Origin(1, "restart"))
    assert sent(todo, ShutdownKernel) == [ShutdownKernel()], "not restarted in place"
    assert sent(todo, KernelHostReleased) == [KernelHostReleased("nb", 1)]
    seat.seated("kernel-2")
    (ask,) = sent(seat.place(None, ON_ONE), PlaceKernel)
    assert (ask.last, ask.died_there) == ("one", True)


@pytest.mark.parametrize(
    ("reply", "structured", "said"),
    [
        pytest.param(RestartCompleted(7), {"restarted": True}, None, id="in place"),
        pytest.param(
            RestartCompleted(None, moved_from="b", moved_to="a"),
            {"restarted": True, "moved": {"from": "b", "to": "a"}},
            "The kernel moved from b to a.",
            id="moved to another host",
        ),
    ],
)
def test_restart_kernel_s_result_says_where_the_kernel_moved(
    reply: RestartCompleted, structured: dict, said: str | None
) -> None:
    handler = restart_kernel(ToolContext("nb", "key", "/"), NoArgs())
    assert isinstance(next(handler), RestartKernel)
    with pytest.raises(StopIteration) as done:
        handler.send(reply)
    result = done.value.value
    assert result["structuredContent"] == structured
    jsonschema.validate(structured, output_schema("restart_kernel"))
    text = result["content"][0]["text"]
    assert (said in text) if said else ("moved" not in text)
