"""The Daemon's watch on its kernel hosts (actors/daemon/host_watch.py): what each tick
and probe result asks the Daemon to do, without a daemon."""

from __future__ import annotations

import socket
from dataclasses import replace

import pytest

from nbstage.actors.common.effects import Offload, Wake
from nbstage.actors.daemon.host_watch import CHECK_SECS, HostWatch, died_on, probe
from nbstage.actors.daemon.kernel.gateway_client import GatewayError
from nbstage.actors.daemon.room_directory import RoomDirectory
from nbstage.protocol.common.kernel_hosts import KernelHost
from nbstage.protocol.common.offload import BlockingWorkDone
from nbstage.protocol.daemon_actors.daemon_followups import HostProbed, HostsCheckDue
from nbstage.protocol.daemon_actors.kernel_facts import EnvironmentView, EnvSource, KernelState
from nbstage.protocol.daemon_actors.rooms import HostsSeen, RoomStatus

A = KernelHost("a", "http://a:1", "t", max_kernels=2)
B = KernelHost("b", "http://b:1", "t")


def probed_hosts(effects: list) -> list[str]:
    return [e.token.name for e in effects if isinstance(e, Offload)]


def test_no_hosts_arm_nothing() -> None:
    assert HostWatch(()).start(0.0) == []
    assert HostWatch(()).news() is None


def test_a_tick_probes_each_host_once_and_arms_the_next() -> None:
    watch = HostWatch((A, B))
    first = watch.start(0.0)
    assert probed_hosts(first) == ["a", "b"]
    assert first[-1] == Wake(CHECK_SECS, HostsCheckDue(1))
    assert {e.lane for e in first if isinstance(e, Offload)} == {"host-a", "host-b"}
    second = watch.due(HostsCheckDue(1), 2.0)
    assert probed_hosts(second) == [], "probes under way are not asked again"
    assert second == [Wake(CHECK_SECS, HostsCheckDue(2))]


def test_a_stale_or_stopped_tick_does_nothing() -> None:
    watch = HostWatch((A,))
    watch.start(0.0)
    assert watch.due(HostsCheckDue(0), 1.0) == []
    watch.stop()
    assert watch.due(HostsCheckDue(1), 1.0) == []


def test_failed_probes_make_the_host_lost_and_the_rooms_are_told_once() -> None:
    watch = HostWatch((A, B))
    watch.start(0.0)
    assert watch.news() is None, "all healthy: what rooms start with"
    for at in (1.0, 3.0):
        watch.probed(BlockingWorkDone(HostProbed("a"), error=OSError("refused")), at)
        watch.due(HostsCheckDue(watch.generation), at)
    assert watch.listed({"b": 1}).hosts[0].health == "lost"
    assert watch.listed({}).hosts[0].last_error == "refused"
    assert watch.news() == HostsSeen(lost=("a",))
    assert watch.news() is None, "told already"
    watch.probed(BlockingWorkDone(HostProbed("b"), result="3.0"), 4.0)
    assert watch.listed({"b": 1}).hosts[1].health == "healthy"


ON_A = EnvironmentView(EnvSource.HOST, host="a")


def status(state: KernelState, env: EnvironmentView | None = ON_A) -> RoomStatus:
    return RoomStatus("n", None, False, (), state, None, None, environment=env)


@pytest.mark.parametrize(
    ("before", "after", "host"),
    [
        pytest.param(status(KernelState.IDLE), status(KernelState.DEAD), "a", id="died on a"),
        pytest.param(None, status(KernelState.DEAD), "a", id="first word is its death"),
        pytest.param(status(KernelState.DEAD), status(KernelState.DEAD), None, id="told already"),
        pytest.param(status(KernelState.IDLE), status(KernelState.BUSY), None, id="alive"),
        pytest.param(
            status(KernelState.IDLE, None), status(KernelState.DEAD, None), None, id="local"
        ),
        pytest.param(status(KernelState.IDLE), status(KernelState.NONE), None, id="shut down"),
    ],
)
def test_a_kernel_dying_on_a_host_is_noticed(before, after, host) -> None:
    assert died_on(before, after) == host


def test_a_kernel_dying_on_a_healthy_host_probes_it_now() -> None:
    watch = HostWatch((A, B))
    watch.start(0.0)
    watch.probed(BlockingWorkDone(HostProbed("a"), result="3.0"), 1.0)
    effects = watch.room_status(status(KernelState.BUSY), status(KernelState.DEAD))
    assert probed_hosts(effects) == ["a"]
    assert watch.room_status(None, status(KernelState.DEAD, None)) == []


def test_the_rooms_running_kernels_are_counted_by_host() -> None:
    rooms = RoomDirectory()
    given = [
        ("n1", status(KernelState.IDLE)),
        ("n2", status(KernelState.BUSY)),
        ("n3", status(KernelState.DEAD)),
        ("n4", status(KernelState.IDLE, EnvironmentView(EnvSource.POOL))),
        ("n5", status(KernelState.STARTING, None)),
    ]
    for nid, seen in given:
        rooms.add(nid, f"address-{nid}", None, ephemeral=True)
        rooms.note_status(replace(seen, notebook_id=nid))
    assert rooms.kernel_hosts() == {"n1": "a", "n2": "a"}


def test_a_returned_gateway_error_is_a_failed_probe() -> None:
    watch = HostWatch((A,))
    watch.start(0.0)
    said = GatewayError("kernel host 'a' (http://a:1): asking its version failed: refused")
    watch.probed(BlockingWorkDone(HostProbed("a"), result=said), 1.0)
    assert watch.health["a"].last_error == str(said)
    assert watch.health["a"].failures == 1


def test_a_probe_of_a_closed_port_returns_the_error_within_its_bound() -> None:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    host = KernelHost("closed", f"http://127.0.0.1:{port}", "t")
    said = probe(host, bound=2.0)
    assert isinstance(said, GatewayError)
    assert f"kernel host 'closed' (http://127.0.0.1:{port}): asking its version failed" in str(said)
