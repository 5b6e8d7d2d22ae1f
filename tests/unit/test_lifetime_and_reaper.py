"""The pure rules behind kernels and rooms: lifetime.py, reaper.py and the ExecutionBook.

SPEC §5 "Lifetime" for the first two, §4 "Execution" for the book. Each row of a
table names the rule it checks.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from nbstage.actors.daemon.reaper import (
    AfterClose,
    RoomFacts,
    after_close,
    choose_rooms_to_reap,
    is_reserved,
)
from nbstage.actors.daemon.room import executions
from nbstage.actors.daemon.room.executions import ExecutionBook
from nbstage.actors.daemon.room.lifetime import (
    Action,
    BeginTeardown,
    Lifetime,
    ScheduleTeardown,
    StartFreshKernel,
    keep_alive_expired,
    kernel_released,
    kernel_wanted,
    peer_joined,
    peer_left,
)
from nbstage.protocol.daemon_actors.edge import Origin
from nbstage.protocol.daemon_actors.kernel_facts import ExecutionStatus
from nbstage.protocol.daemon_actors.rooms import CloseReason

# --- lifetime: one step -------------------------------------------------------------------

FRESH = Lifetime(has_runtime=True)
NO_RUNTIME = Lifetime(has_runtime=False)
ONE_PEER = Lifetime(has_runtime=True, peers=1, generation=1, kernel_attached=True)
TWO_PEERS = Lifetime(has_runtime=True, peers=2, generation=2, kernel_attached=True)
LEFT_AT_3 = Lifetime(has_runtime=True, peers=0, generation=3, kernel_attached=True)
TORN_DOWN = Lifetime(has_runtime=True, peers=0, generation=3, kernel_attached=False)


@pytest.mark.parametrize(
    ("before", "expected", "actions"),
    [
        pytest.param(
            FRESH,
            Lifetime(True, peers=1, generation=1, kernel_attached=True),
            [StartFreshKernel()],
            id="the first peer of a room with a runtime starts its kernel",
        ),
        pytest.param(
            ONE_PEER,
            Lifetime(True, peers=2, generation=2, kernel_attached=True),
            [],
            id="a second peer shares the running kernel",
        ),
        pytest.param(
            LEFT_AT_3,
            Lifetime(True, peers=1, generation=4, kernel_attached=True),
            [],
            id="a join inside the keep-alive window keeps the kernel and bumps the generation",
        ),
        pytest.param(
            TORN_DOWN,
            Lifetime(True, peers=1, generation=4, kernel_attached=True),
            [StartFreshKernel()],
            id="a join after teardown began starts a fresh kernel, never the doomed one",
        ),
        pytest.param(
            NO_RUNTIME,
            Lifetime(False, peers=1, generation=1, kernel_attached=False),
            [],
            id="a room without a runtime never starts a kernel",
        ),
        pytest.param(
            Lifetime(False, peers=3, generation=7),
            Lifetime(False, peers=4, generation=8),
            [],
            id="a room without a runtime still counts peers and generations",
        ),
    ],
)
def test_peer_joined(before: Lifetime, expected: Lifetime, actions: list[Action]) -> None:
    assert peer_joined(before) == (expected, actions)


@pytest.mark.parametrize(
    ("before", "expected", "actions"),
    [
        pytest.param(
            ONE_PEER,
            Lifetime(True, peers=0, generation=1, kernel_attached=True),
            [ScheduleTeardown(1)],
            id="the last peer leaving schedules teardown for the current generation",
        ),
        pytest.param(
            TWO_PEERS,
            Lifetime(True, peers=1, generation=2, kernel_attached=True),
            [],
            id="a peer leaving while another stays schedules nothing",
        ),
        pytest.param(
            Lifetime(False, peers=1, generation=1),
            Lifetime(False, peers=0, generation=1),
            [],
            id="the last peer leaving a room without a runtime schedules nothing",
        ),
        pytest.param(
            Lifetime(True, peers=1, generation=5, kernel_attached=False),
            Lifetime(True, peers=0, generation=5, kernel_attached=False),
            [],
            id="the last peer leaving a room whose kernel was released schedules nothing",
        ),
        pytest.param(
            Lifetime(True, peers=0, generation=2, kernel_attached=False),
            Lifetime(True, peers=0, generation=2, kernel_attached=False),
            [],
            id="a leave with no peers left never counts below zero",
        ),
    ],
)
def test_peer_left(before: Lifetime, expected: Lifetime, actions: list[Action]) -> None:
    assert peer_left(before) == (expected, actions)


@pytest.mark.parametrize(
    ("before", "generation", "expected", "actions"),
    [
        pytest.param(
            LEFT_AT_3,
            3,
            TORN_DOWN,
            [BeginTeardown()],
            id="expiry of the current generation with no peers begins teardown and detaches",
        ),
        pytest.param(
            LEFT_AT_3,
            2,
            LEFT_AT_3,
            [],
            id="expiry of a stale generation (a join came inside the window) is ignored",
        ),
        pytest.param(
            Lifetime(True, peers=1, generation=3, kernel_attached=True),
            3,
            Lifetime(True, peers=1, generation=3, kernel_attached=True),
            [],
            id="expiry while a peer is in the room is ignored",
        ),
        pytest.param(
            TORN_DOWN,
            3,
            TORN_DOWN,
            [],
            id="a second expiry after teardown began does nothing (the latch is set once)",
        ),
        pytest.param(
            Lifetime(False, peers=0, generation=1),
            1,
            Lifetime(False, peers=0, generation=1),
            [],
            id="expiry in a room without a runtime does nothing",
        ),
    ],
)
def test_keep_alive_expired(
    before: Lifetime, generation: int, expected: Lifetime, actions: list[Action]
) -> None:
    assert keep_alive_expired(before, generation) == (expected, actions)


@pytest.mark.parametrize(
    ("before", "expected"),
    [
        pytest.param(
            ONE_PEER,
            Lifetime(True, peers=1, generation=1, kernel_attached=False),
            id="a released kernel is detached and the peers are kept",
        ),
        pytest.param(TORN_DOWN, TORN_DOWN, id="releasing a detached kernel changes nothing"),
    ],
)
def test_kernel_released(before: Lifetime, expected: Lifetime) -> None:
    assert kernel_released(before) == expected


@pytest.mark.parametrize(
    ("before", "generation", "expected", "actions"),
    [
        pytest.param(
            LEFT_AT_3,
            3,
            LEFT_AT_3,
            [ScheduleTeardown(3)],
            id="expiry while a cell is queued or running waits another keep-alive",
        ),
        pytest.param(
            LEFT_AT_3,
            2,
            LEFT_AT_3,
            [],
            id="a stale expiry is ignored even while a cell runs",
        ),
        pytest.param(
            Lifetime(True, peers=1, generation=3, kernel_attached=True),
            3,
            Lifetime(True, peers=1, generation=3, kernel_attached=True),
            [],
            id="a busy room with a peer arms nothing more",
        ),
    ],
)
def test_keep_alive_expired_while_busy(
    before: Lifetime, generation: int, expected: Lifetime, actions: list[Action]
) -> None:
    assert keep_alive_expired(before, generation, busy=True) == (expected, actions)


@pytest.mark.parametrize(
    ("before", "expected", "actions"),
    [
        pytest.param(
            TORN_DOWN,
            LEFT_AT_3,
            [StartFreshKernel(), ScheduleTeardown(3)],
            id="a kernel wanted with no peers starts one and arms its keep-alive",
        ),
        pytest.param(
            Lifetime(True, peers=2, generation=4, kernel_attached=False),
            Lifetime(True, peers=2, generation=4, kernel_attached=True),
            [StartFreshKernel()],
            id="a kernel wanted while peers are in the room starts one and arms nothing",
        ),
        pytest.param(
            ONE_PEER,
            ONE_PEER,
            [],
            id="a kernel wanted when one is attached starts no second kernel",
        ),
        pytest.param(
            NO_RUNTIME,
            NO_RUNTIME,
            [],
            id="a kernel wanted in a room without a runtime starts nothing",
        ),
    ],
)
def test_kernel_wanted(before: Lifetime, expected: Lifetime, actions: list[Action]) -> None:
    assert kernel_wanted(before) == (expected, actions)


# --- lifetime: whole stories --------------------------------------------------------------


def play(state: Lifetime, *steps: Callable[[Lifetime], tuple[Lifetime, list[Action]]]):
    """Apply steps in order; returns the final state and every action, in order."""
    actions: list[Action] = []
    for step in steps:
        state, more = step(state)
        actions.extend(more)
    return state, actions


def expire(generation: int):
    return lambda state: keep_alive_expired(state, generation)


def release(state: Lifetime) -> tuple[Lifetime, list[Action]]:
    return kernel_released(state), []


@pytest.mark.parametrize(
    ("steps", "peers", "attached", "actions"),
    [
        pytest.param(
            (peer_joined, peer_left, expire(1)),
            0,
            False,
            [StartFreshKernel(), ScheduleTeardown(1), BeginTeardown()],
            id="join, leave, expiry: the kernel is started, scheduled and torn down",
        ),
        pytest.param(
            (peer_joined, peer_left, peer_joined, expire(1)),
            1,
            True,
            [StartFreshKernel(), ScheduleTeardown(1)],
            id="a join inside the window cancels the teardown that was armed before it",
        ),
        pytest.param(
            (peer_joined, peer_left, peer_joined, peer_left, expire(1)),
            0,
            True,
            [StartFreshKernel(), ScheduleTeardown(1), ScheduleTeardown(2)],
            id="the stale timer of a left-rejoined-left room is ignored",
        ),
        pytest.param(
            (peer_joined, peer_left, peer_joined, peer_left, expire(1), expire(2)),
            0,
            False,
            [StartFreshKernel(), ScheduleTeardown(1), ScheduleTeardown(2), BeginTeardown()],
            id="the current timer of a left-rejoined-left room tears down",
        ),
        pytest.param(
            (peer_joined, peer_left, expire(1), peer_joined),
            1,
            True,
            [StartFreshKernel(), ScheduleTeardown(1), BeginTeardown(), StartFreshKernel()],
            id="a join after teardown began gets a fresh kernel",
        ),
        pytest.param(
            (peer_joined, peer_joined, peer_left, expire(2)),
            1,
            True,
            [StartFreshKernel()],
            id="one peer leaving of two arms nothing, and a stray expiry is ignored",
        ),
        pytest.param(
            (peer_joined, release, peer_left, peer_joined),
            1,
            True,
            [StartFreshKernel(), StartFreshKernel()],
            id="after the kernel is released a leave arms nothing and the next join starts one",
        ),
        pytest.param(
            (peer_joined, peer_left, expire(1), kernel_wanted, peer_joined),
            1,
            True,
            [
                StartFreshKernel(),
                ScheduleTeardown(1),
                BeginTeardown(),
                StartFreshKernel(),
                ScheduleTeardown(1),
            ],
            id="a join after an execute restarted the kernel keeps that kernel",
        ),
        pytest.param(
            (peer_joined, peer_left, expire(1), kernel_wanted, expire(1)),
            0,
            False,
            [
                StartFreshKernel(),
                ScheduleTeardown(1),
                BeginTeardown(),
                StartFreshKernel(),
                ScheduleTeardown(1),
                BeginTeardown(),
            ],
            id="a kernel an execute started with nobody in the room is torn down in turn",
        ),
    ],
)
def test_lifetime_stories(steps: tuple, peers: int, attached: bool, actions: list[Action]) -> None:
    final, done = play(FRESH, *steps)
    assert done == actions
    assert (final.peers, final.kernel_attached) == (peers, attached)


def test_rooms_without_a_runtime_never_start_or_stop_a_kernel() -> None:
    steps = (peer_joined, peer_joined, peer_left, peer_left, expire(2), peer_joined)
    final, done = play(NO_RUNTIME, *steps)
    assert done == []
    assert final == Lifetime(False, peers=1, generation=3, kernel_attached=False)


# --- reaper -------------------------------------------------------------------------------

NOW = 1_000.0
TTL = 100.0


def idle(notebook_id: str, since: float | None, **facts: object) -> RoomFacts:
    """A room with no peers, no kernel and no reservation, idle since ``since``."""
    base = {"peers": 0, "has_kernel": False, "reserved": False}
    return RoomFacts(notebook_id, idle_since=since, **{**base, **facts})


@pytest.mark.parametrize(
    ("rooms", "soft_cap", "reaped"),
    [
        pytest.param([], 32, [], id="no rooms, nothing to reap"),
        pytest.param(
            [idle("old", NOW - 500)], 32, ["old"], id="an idle room past its TTL is reaped"
        ),
        pytest.param([idle("young", NOW - 10)], 32, [], id="an idle room inside its TTL is kept"),
        pytest.param(
            [idle("exact", NOW - TTL)],
            32,
            ["exact"],
            id="a room idle for exactly the TTL is reaped (the boundary is inclusive)",
        ),
        pytest.param(
            [idle("almost", NOW - TTL + 0.001)],
            32,
            [],
            id="a room a millisecond short of the TTL is kept",
        ),
        pytest.param(
            [idle("peer", NOW - 500, peers=1)], 32, [], id="a room with a peer is never reaped"
        ),
        pytest.param(
            [idle("kernel", NOW - 500, has_kernel=True)],
            32,
            [],
            id="a room with a kernel is never reaped",
        ),
        pytest.param(
            [idle("joining", NOW - 500, reserved=True)],
            32,
            [],
            id="a reserved room (being joined or created) is never reaped",
        ),
        pytest.param(
            [idle("unknown", None)],
            32,
            [],
            id="a room whose idle time is not known yet is never reaped",
        ),
        pytest.param(
            [idle("b", NOW - 300), idle("c", NOW - 200), idle("a", NOW - 400)],
            32,
            ["a", "b", "c"],
            id="expired rooms are reaped oldest first",
        ),
        pytest.param(
            [idle("a", NOW - 30), idle("b", NOW - 20), idle("c", NOW - 10)],
            1,
            ["a", "b"],
            id="over the soft cap the oldest young rooms go early until the cap holds",
        ),
        pytest.param(
            [idle("a", NOW - 30), idle("b", NOW - 20)],
            2,
            [],
            id="exactly at the soft cap no young room goes early",
        ),
        pytest.param(
            [idle("a", NOW - 30), idle("b", NOW - 20), idle("c", NOW - 10)],
            0,
            ["a", "b", "c"],
            id="a soft cap of zero reaps every idle room",
        ),
        pytest.param(
            [
                idle("young-2", NOW - 5),
                idle("expired", NOW - 900),
                idle("young-1", NOW - 50),
                idle("young-3", NOW - 1),
            ],
            1,
            ["expired", "young-1", "young-2"],
            id="expired rooms first, then the oldest young ones beyond the cap",
        ),
        pytest.param(
            [
                idle("a", NOW - 30),
                idle("peer", NOW - 40, peers=2),
                idle("kernel", NOW - 50, has_kernel=True),
                idle("reserved", NOW - 60, reserved=True),
                idle("b", NOW - 20),
            ],
            1,
            ["a"],
            id="rooms that cannot be reaped do not count against the soft cap",
        ),
        pytest.param(
            [idle("a", NOW - 500, peers=1, has_kernel=True, reserved=True)],
            0,
            [],
            id="a busy room is spared even with a soft cap of zero",
        ),
    ],
)
def test_choose_rooms_to_reap(rooms: list[RoomFacts], soft_cap: int, reaped: list[str]) -> None:
    assert choose_rooms_to_reap(rooms, NOW, TTL, soft_cap) == reaped


def test_a_ttl_of_zero_reaps_every_idle_room_at_once() -> None:
    rooms = [idle("now", NOW), idle("before", NOW - 1), idle("peer", NOW - 1, peers=1)]
    assert choose_rooms_to_reap(rooms, NOW, 0, 32) == ["before", "now"]


@pytest.mark.parametrize(
    ("starting", "joins_sent", "joins_seen", "reserved"),
    [
        pytest.param(True, 0, 0, True, id="a room being created is reserved"),
        pytest.param(True, 1, 0, True, id="a room being created with its first join is reserved"),
        pytest.param(
            False, 2, 1, True, id="a join sent but not yet in the room's status reserves it"
        ),
        pytest.param(
            False, 3, 1, True, id="several joins in flight reserve it until the last is seen"
        ),
        pytest.param(False, 2, 2, False, id="once every join sent is seen the room is free"),
        pytest.param(False, 0, 0, False, id="a started room nobody joins is free"),
    ],
)
def test_is_reserved(starting: bool, joins_sent: int, joins_seen: int, reserved: bool) -> None:
    assert is_reserved(starting, joins_sent, joins_seen) is reserved


def test_a_join_in_flight_spares_a_room_idle_past_its_ttl_even_over_the_soft_cap() -> None:
    joining = idle("joining", NOW - 500, reserved=is_reserved(False, 2, 1))
    assert choose_rooms_to_reap([joining, idle("other", NOW - 400)], NOW, TTL, 0) == ["other"]


@pytest.mark.parametrize(
    ("reason", "saved", "stopping", "outcome"),
    [
        pytest.param(
            CloseReason.REAPED, True, False, AfterClose.REMOVE, id="a reaped room saved is removed"
        ),
        pytest.param(
            CloseReason.REAPED,
            False,
            False,
            AfterClose.KEEP,
            id="a reaped room whose barrier failed is kept with its edits",
        ),
        pytest.param(
            CloseReason.REAPED,
            False,
            True,
            AfterClose.REMOVE,
            id="a failed reap while the daemon stops is removed (nowhere left to keep it)",
        ),
        pytest.param(
            CloseReason.EVICTED,
            True,
            False,
            AfterClose.REMOVE,
            id="an evicted room saved is removed",
        ),
        pytest.param(
            CloseReason.EVICTED,
            False,
            False,
            AfterClose.REMOVE,
            id="an evicted room whose save failed is removed, the operator told it was not saved",
        ),
        pytest.param(
            CloseReason.DAEMON_STOPPING,
            False,
            True,
            AfterClose.REMOVE,
            id="a room the stopping daemon could not save is removed",
        ),
        pytest.param(
            CloseReason.DAEMON_STOPPING,
            True,
            True,
            AfterClose.REMOVE,
            id="a room the stopping daemon saved is removed",
        ),
    ],
)
def test_after_close(reason: CloseReason, saved: bool, stopping: bool, outcome: AfterClose) -> None:
    assert after_close(reason, saved, stopping) is outcome


# --- the execution book -------------------------------------------------------------------

WAITER_A = Origin(1, "a")
WAITER_B = Origin(2, "b")


def stream(text: str, name: str = "stdout") -> dict:
    return {"output_type": "stream", "name": name, "text": text}


def result(text: str) -> dict:
    return {"output_type": "execute_result", "data": {"text/plain": text}, "metadata": {}}


def test_a_new_cell_gets_a_new_queued_execution() -> None:
    book = ExecutionBook()
    record, is_new = book.queue("cell-1")
    assert is_new
    assert record.status is ExecutionStatus.QUEUED
    assert book.get(record.execution_id) is record
    assert book.live_ids() == [record.execution_id]


@pytest.mark.parametrize(
    "progress",
    [
        pytest.param(lambda book, eid: None, id="a queued cell keeps its execution id"),
        pytest.param(
            lambda book, eid: book.started(eid), id="a running cell keeps its execution id"
        ),
    ],
)
def test_a_live_cell_gets_the_same_execution(progress) -> None:
    book = ExecutionBook()
    first, _ = book.queue("cell-1")
    progress(book, first.execution_id)
    again, is_new = book.queue("cell-1")
    assert (again, is_new) == (first, False)
    assert book.live_ids() == [first.execution_id]


def test_a_finished_cell_gets_a_new_execution_and_other_cells_their_own() -> None:
    book = ExecutionBook()
    first, _ = book.queue("cell-1")
    other, other_new = book.queue("cell-2")
    assert other_new
    assert other.execution_id != first.execution_id
    book.finish(first.execution_id, ExecutionStatus.DONE, 1)
    second, is_new = book.queue("cell-1")
    assert is_new
    assert second.execution_id != first.execution_id
    assert book.get(first.execution_id).status is ExecutionStatus.DONE
    assert sorted(book.live_ids()) == sorted([other.execution_id, second.execution_id])


@pytest.mark.parametrize(
    "status", [ExecutionStatus.DONE, ExecutionStatus.ERROR, ExecutionStatus.CANCELLED]
)
def test_an_execution_finishes_once(status: ExecutionStatus) -> None:
    book = ExecutionBook()
    record, _ = book.queue("cell-1")
    book.started(record.execution_id)
    finished = book.finish(record.execution_id, status, 3, error="why")
    assert finished is record
    assert (record.status, record.execution_count, record.error) == (status, 3, "why")
    assert book.live_ids() == []

    assert book.finish(record.execution_id, ExecutionStatus.ERROR, 9, error="late") is None
    assert (record.status, record.execution_count, record.error) == (status, 3, "why")


def test_finishing_an_unknown_execution_is_ignored() -> None:
    book = ExecutionBook()
    assert book.finish("no-such-id", ExecutionStatus.DONE) is None
    assert book.started("no-such-id") is None
    assert book.add_outputs("no-such-id", [stream("x")], replace=False) is None


def test_waiters_are_released_once_in_order() -> None:
    book = ExecutionBook()
    record, _ = book.queue("cell-1")
    book.wait(record.execution_id, WAITER_A)
    book.wait(record.execution_id, WAITER_B)
    assert book.release_waiters(record.execution_id) == [WAITER_A, WAITER_B]
    assert book.release_waiters(record.execution_id) == []
    assert book.release_waiter(record.execution_id, WAITER_A) is False


def test_a_waiter_whose_wait_expired_is_not_released_again() -> None:
    book = ExecutionBook()
    record, _ = book.queue("cell-1")
    book.wait(record.execution_id, WAITER_A)
    book.wait(record.execution_id, WAITER_B)
    assert book.release_waiter(record.execution_id, WAITER_A) is True
    assert book.release_waiter(record.execution_id, WAITER_A) is False
    assert book.release_waiters(record.execution_id) == [WAITER_B]
    assert book.release_waiter(record.execution_id, WAITER_B) is False


@pytest.mark.parametrize(
    ("batches", "outputs"),
    [
        pytest.param(
            [[stream("a\n"), stream("b\n")], [stream("c\n")]],
            [stream("a\nb\nc\n")],
            id="consecutive chunks of one stream merge, within and across batches",
        ),
        pytest.param(
            [[stream("out\n"), stream("err\n", "stderr"), stream("more\n")]],
            [stream("out\n"), stream("err\n", "stderr"), stream("more\n")],
            id="stdout and stderr chunks stay apart and in order",
        ),
        pytest.param(
            [[stream("a\n"), result("1")], [stream("b\n")]],
            [stream("a\n"), result("1"), stream("b\n")],
            id="a stream after another output starts a new output",
        ),
        pytest.param(
            [[], [stream("x")]],
            [stream("x")],
            id="an empty batch changes nothing",
        ),
    ],
)
def test_outputs_accumulate_with_streams_merged(
    batches: list[list[dict]], outputs: list[dict]
) -> None:
    book = ExecutionBook()
    record, _ = book.queue("cell-1")
    for batch in batches:
        book.add_outputs(record.execution_id, batch, replace=False)
    assert record.outputs == outputs


def test_a_replacing_batch_drops_earlier_outputs() -> None:
    book = ExecutionBook()
    record, _ = book.queue("cell-1")
    book.add_outputs(record.execution_id, [stream("old\n"), result("1")], replace=False)
    book.add_outputs(record.execution_id, [stream("new\n")], replace=True)
    assert record.outputs == [stream("new\n")]
    book.add_outputs(record.execution_id, [], replace=True)
    assert record.outputs == []


def test_merging_does_not_change_the_batch_it_was_given() -> None:
    book = ExecutionBook()
    record, _ = book.queue("cell-1")
    first = [stream("a")]
    book.add_outputs(record.execution_id, first, replace=False)
    book.add_outputs(record.execution_id, [stream("b")], replace=False)
    assert first == [stream("a")]
    assert record.outputs == [stream("ab")]


def test_the_wire_view_carries_error_only_when_there_is_one() -> None:
    book = ExecutionBook()
    record, _ = book.queue("cell-1")
    assert record.to_wire() == {
        "execution_id": record.execution_id,
        "cell_id": "cell-1",
        "status": "queued",
        "execution_count": None,
        "outputs": [],
    }
    book.finish(record.execution_id, ExecutionStatus.ERROR, 2, error="ValueError: boom")
    assert record.to_wire()["status"] == "error"
    assert record.to_wire()["error"] == "ValueError: boom"


def test_the_book_forgets_the_oldest_finished_executions_beyond_its_bound(monkeypatch) -> None:
    monkeypatch.setattr(executions, "REMEMBERED_EXECUTIONS", 3)
    book = ExecutionBook()
    ids = []
    for n in range(5):
        record, _ = book.queue(f"cell-{n}")
        book.finish(record.execution_id, ExecutionStatus.DONE, n)
        ids.append(record.execution_id)
    assert [book.get(i) is not None for i in ids] == [False, False, True, True, True]


def test_the_book_never_forgets_a_live_execution(monkeypatch) -> None:
    monkeypatch.setattr(executions, "REMEMBERED_EXECUTIONS", 2)
    book = ExecutionBook()
    live, _ = book.queue("running-cell")
    book.started(live.execution_id)
    for n in range(4):
        record, _ = book.queue(f"cell-{n}")
        book.finish(record.execution_id, ExecutionStatus.DONE, n)
    assert book.get(live.execution_id) is live
    again, is_new = book.queue("running-cell")
    assert (again, is_new) == (live, False)
