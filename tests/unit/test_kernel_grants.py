"""The Daemon's grants of kernel host slots (issue 26): the decision as a table
(actors/daemon/kernel/kernel_grants.py), the ledger that carries it out
(actors/daemon/host_grants.py), and a real Daemon actor taking asks that arrive together."""

from __future__ import annotations

from pathlib import Path

import pytest
from thespian.actors import ActorAddress

from nbstage.actors.common.effects import Offload, Send
from nbstage.actors.daemon.actor import Daemon
from nbstage.actors.daemon.host_grants import HostGrants
from nbstage.actors.daemon.host_watch import HostWatch
from nbstage.actors.daemon.kernel.host_health import Breaker, HostHealth
from nbstage.actors.daemon.kernel.kernel_grants import AwaitProbe, decide_grant, host_load
from nbstage.actors.daemon.kernel.placement import Placed, Unplaceable
from nbstage.protocol.common.kernel_hosts import KernelHost
from nbstage.protocol.common.offload import BlockingWorkDone
from nbstage.protocol.common.settings import Settings
from nbstage.protocol.daemon_actors.daemon_followups import HostProbed
from nbstage.protocol.daemon_actors.host_grants import (
    KernelHostReleased,
    KernelPlaced,
    PlaceKernel,
)
from nbstage.protocol.daemon_actors.rooms import DaemonStarted, StartDaemon
from tests.unit.actor_harness import ActorBench

ONE = KernelHost("one", "http://127.0.0.1:1", "t", max_kernels=1)
TWO = KernelHost("two", "http://127.0.0.1:1", "t", max_kernels=2)
BIG = KernelHost("big", "http://127.0.0.1:1", "t")
HOSTS = (ONE, TWO, BIG)
LOST = HostHealth(Breaker.OPEN, 2, 0.0, "refused")
DOUBTED = HostHealth(failures=1, last_error="refused")
"""A probe failed once: the breaker still takes the host as healthy."""


def ask(wish: str, last: str | None = None, died: bool = False, nid: str = "n") -> PlaceKernel:
    return PlaceKernel(nid, wish, 1, last, died)


@pytest.mark.parametrize(
    ("request_", "health", "load", "checked", "expected"),
    [
        pytest.param(ask("one"), {}, {}, False, Placed(ONE), id="a wished host with room"),
        pytest.param(
            ask("one"),
            {},
            {"one": 1},
            False,
            Placed(TWO, "kernel host 'one' is full: the kernel runs on 'two'"),
            id="a wished host at its limit: the least loaded other",
        ),
        pytest.param(
            ask("*"),
            {},
            {"one": 0, "two": 1, "big": 1},
            False,
            Placed(ONE),
            id="any host: the least loaded",
        ),
        pytest.param(
            ask("*"),
            {},
            {"one": 1, "two": 1, "big": 1},
            False,
            Placed(TWO),
            id="any host, a tie: the first in the settings with room",
        ),
        pytest.param(
            ask("*"),
            {"one": LOST, "two": LOST, "big": LOST},
            {},
            False,
            Unplaceable("no kernel host is healthy with room for another kernel"),
            id="any host, none healthy",
        ),
        pytest.param(
            ask("*", last="one"),
            {"one": LOST},
            {},
            False,
            Placed(TWO, moved_from="one"),
            id="any host, the last one lost: moved",
        ),
        pytest.param(
            ask("one", last="one", died=True),
            {},
            {},
            False,
            AwaitProbe("one"),
            id="the kernel died on a healthy host: wait for a probe",
        ),
        pytest.param(
            ask("one", last="one", died=True),
            {},
            {},
            True,
            Placed(ONE),
            id="died there, the probe answered: the same host",
        ),
        pytest.param(
            ask("one", last="one", died=True),
            {"one": DOUBTED},
            {},
            True,
            Placed(TWO, "kernel host 'one' is lost: the kernel runs on 'two'", "one"),
            id="died there, the probe failed: moved elsewhere",
        ),
        pytest.param(
            ask("one", last="one", died=True),
            {"one": LOST},
            {},
            False,
            Placed(TWO, "kernel host 'one' is lost: the kernel runs on 'two'", "one"),
            id="died on a host the breaker has lost: moved, no wait",
        ),
        pytest.param(
            ask("one", last="one"),
            {"one": DOUBTED},
            {},
            False,
            Placed(ONE),
            id="one failed probe alone does not pass a host over",
        ),
        pytest.param(
            ask("gone", last="gone", died=True),
            {},
            {},
            False,
            Unplaceable(
                "the notebook asks for kernel host 'gone', which config.toml does not name "
                "(it names: 'one', 'two', 'big')"
            ),
            id="a host the settings no longer name",
        ),
    ],
)
def test_the_grant_is_decided_by_the_hosts_their_load_and_the_ask(
    request_: PlaceKernel,
    health: dict[str, HostHealth],
    load: dict[str, int],
    checked: bool,
    expected: object,
) -> None:
    assert decide_grant(request_, HOSTS, health, load, checked) == expected


@pytest.mark.parametrize(
    ("grants", "running", "excluding", "expected"),
    [
        pytest.param({}, {}, None, {}, id="nothing held"),
        pytest.param({"a": "one", "b": "one"}, {}, None, {"one": 2}, id="grants count"),
        pytest.param({}, {"a": "one"}, None, {"one": 1}, id="a kernel seen running counts"),
        pytest.param({"a": "one"}, {"a": "one"}, None, {"one": 1}, id="a room counts once"),
        pytest.param(
            {"a": "two"}, {"a": "one"}, None, {"one": 1, "two": 1}, id="a moving kernel: both"
        ),
        pytest.param({"a": "one", "b": "one"}, {}, "a", {"one": 1}, id="the asker is not counted"),
    ],
)
def test_the_load_counts_grants_and_running_kernels(
    grants: dict[str, str], running: dict[str, str], excluding: str | None, expected: dict
) -> None:
    assert host_load(grants, running, excluding) == expected


def granted(effects: list) -> list[str | None]:
    return [e.message.host.name if e.message.host else None for e in effects if isinstance(e, Send)]


def test_the_ledger_counts_each_grant_until_it_is_released() -> None:
    ledger, watch = HostGrants(HOSTS), HostWatch(HOSTS)
    first = ledger.ask(PlaceKernel("a", "one", 1), "room-a", watch, {})
    second = ledger.ask(PlaceKernel("b", "one", 1), "room-b", watch, {})
    assert granted(first) == ["one"]
    assert granted(second) == ["two"], "one's only slot is a's, though no kernel runs yet"
    ledger.release(KernelHostReleased("a", 7))
    assert ledger.load({}) == {"one": 1, "two": 1}, "a release of another ask is ignored"
    ledger.release(KernelHostReleased("a", 1))
    assert granted(ledger.ask(PlaceKernel("c", "one", 1), "room-c", watch, {})) == ["one"]
    ledger.forget("c")
    assert ledger.load({}) == {"two": 1}


def test_a_room_asking_again_gives_its_own_slot_back_first() -> None:
    ledger, watch = HostGrants(HOSTS), HostWatch(HOSTS)
    ledger.ask(PlaceKernel("a", "one", 1), "room-a", watch, {})
    assert granted(ledger.ask(PlaceKernel("a", "one", 2), "room-a", watch, {})) == ["one"]


def test_an_ask_after_a_death_waits_for_the_probe_and_follows_its_answer() -> None:
    ledger, watch = HostGrants(HOSTS), HostWatch(HOSTS)
    died = PlaceKernel("a", "one", 2, last="one", died_there=True)
    effects = ledger.ask(died, "room-a", watch, {})
    assert [e.token for e in effects if isinstance(e, Offload)] == [HostProbed("one")]
    assert granted(effects) == [], "no answer before the probe"
    watch.probed(BlockingWorkDone(HostProbed("one"), error=OSError("refused")), 1.0)
    (answer,) = ledger.probed("one", watch, {})
    assert answer == Send(
        "room-a",
        KernelPlaced(2, TWO, "kernel host 'one' is lost: the kernel runs on 'two'", "one"),
    )


def test_a_room_gone_while_its_ask_waits_is_never_answered() -> None:
    ledger, watch = HostGrants(HOSTS), HostWatch(HOSTS)
    ledger.ask(PlaceKernel("a", "one", 2, last="one", died_there=True), "room-a", watch, {})
    ledger.forget("a")
    watch.probed(BlockingWorkDone(HostProbed("one"), result="3.0"), 1.0)
    assert ledger.probed("one", watch, {}) == []


# --- a real Daemon actor, asks arriving before any kernel starts ----------------------------


@pytest.fixture
def daemon(bench: ActorBench, tmp_path: Path) -> ActorAddress:
    """A Daemon whose config names ONE (max_kernels 1) and TWO; their probes fail at once
    (nothing listens on port 1), and one failure leaves a host healthy."""
    address = bench.create(Daemon)
    settings = Settings(kernel_hosts=(ONE, TWO), kernel_host_check_secs=3600.0)
    bench.send(address, StartDaemon(str(tmp_path), str(tmp_path / "kernels"), settings))
    bench.run_until(lambda: bench.seen_of(DaemonStarted))
    return address


def answers(bench: ActorBench, count: int) -> list[KernelPlaced]:
    return bench.run_until(
        lambda: (got := bench.seen_of(KernelPlaced)) and len(got) >= count and got
    )


def test_two_asks_before_any_kernel_starts_never_pass_max_kernels(
    bench: ActorBench, daemon: ActorAddress
) -> None:
    bench.send_in_order(
        (daemon, PlaceKernel("a", "one", 1)),
        (daemon, PlaceKernel("b", "one", 1)),
        (daemon, PlaceKernel("c", "one", 1)),
        (daemon, PlaceKernel("d", "one", 1)),
    )
    got = answers(bench, 4)
    assert [a.host.name if a.host else a.refused for a in got] == [
        "one",
        "two",
        "two",
        "kernel host 'one' is full, and no other host has room",
    ]


def test_asks_for_any_host_at_one_moment_spread_by_load(
    bench: ActorBench, daemon: ActorAddress
) -> None:
    bench.send_in_order(*((daemon, PlaceKernel(f"n{at}", "*", 1)) for at in range(3)))
    assert [a.host.name for a in answers(bench, 3)] == ["one", "two", "two"]
    bench.send_in_order((daemon, KernelHostReleased("n0", 1)), (daemon, PlaceKernel("n3", "*", 1)))
    assert answers(bench, 4)[-1].host == ONE, "the released slot is free again"
