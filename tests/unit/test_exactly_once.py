"""Exactly once for the mutations whose answers come later (issue 11 §1): the Daemon's
book of create keys as a table, and a Room's keyed saves, restarts and interrupts with
repeats injected while the first is under way and after it finished."""

from __future__ import annotations

import pytest

from nbstage.actors.daemon.create_keys import (
    REMEMBERED_CREATES,
    CreateKeys,
    JoinMade,
    MakeRoom,
    WaitForFirst,
)
from nbstage.protocol.common.errors import ErrorCode
from nbstage.protocol.daemon.requests import (
    InterruptKernel,
    RestartKernel,
    SaveNotebook,
    ShutdownKernelNow,
)
from nbstage.protocol.daemon_actors.edge import (
    ClientRequest,
    Origin,
    RequestAnswered,
    RequestFailed,
)
from nbstage.protocol.daemon_actors.rooms import (
    ClaimPath,
    PathBound,
    PathClaimed,
    PathRecorded,
    PathRefused,
)
from tests.unit.test_room_races import NOTEBOOK, answer_to, join, kernel_pids, start_room

# --- the create book ------------------------------------------------------------------


def test_a_new_key_makes_a_room() -> None:
    assert CreateKeys().begin("k", "first", alive=set()) == MakeRoom()


def test_a_repeat_while_the_first_is_made_waits_and_then_joins_it() -> None:
    book = CreateKeys()
    book.begin("k", "first", alive=set())
    assert book.begin("k", "retry", alive=set()) == WaitForFirst()
    assert book.made("k", "nb") == ["retry"]
    assert book.begin("k", "late", alive={"nb"}) == JoinMade("nb")


@pytest.mark.parametrize(
    ("alive", "expected"),
    [
        pytest.param({"nb"}, JoinMade("nb"), id="the room it made is alive: join it"),
        pytest.param(set(), MakeRoom(), id="the room it made is gone: make a new one"),
    ],
)
def test_a_repeat_after_the_first_made_its_room(alive: set[str], expected: object) -> None:
    book = CreateKeys()
    book.begin("k", "first", alive=set())
    book.made("k", "nb")
    assert book.begin("k", "retry", alive=alive) == expected


def test_a_failed_create_hands_back_its_waiters_and_forgets_the_key() -> None:
    book = CreateKeys()
    book.begin("k", "first", alive=set())
    book.begin("k", "retry", alive=set())
    assert book.failed("k") == ["retry"]
    assert book.begin("k", "again", alive=set()) == MakeRoom()


def test_keys_for_other_calls_are_independent() -> None:
    book = CreateKeys()
    book.begin("a", "first", alive=set())
    assert book.begin("b", "other", alive=set()) == MakeRoom()


def test_the_book_forgets_the_oldest_keys_beyond_its_bound() -> None:
    book = CreateKeys()
    for i in range(REMEMBERED_CREATES + 1):
        book.begin(f"k{i}", i, alive=set())
        book.made(f"k{i}", f"nb{i}")
    alive = {f"nb{i}" for i in range(REMEMBERED_CREATES + 1)}
    assert book.begin("k0", "retry", alive=alive) == MakeRoom()
    assert book.begin(f"k{REMEMBERED_CREATES}", "retry", alive=alive) == JoinMade(
        f"nb{REMEMBERED_CREATES}"
    )


# --- a Room's keyed requests, in one process ----------------------------------------


def answers(bench, *request_ids: str) -> list[dict]:
    return [answer_to(bench, request_id) for request_id in request_ids]


def keyed(conn: int, request_id: str, body: object) -> ClientRequest:
    return ClientRequest(Origin(conn, request_id), body)


def test_a_restart_repeated_while_it_runs_and_after_restarts_once(bench, tmp_path) -> None:
    room = start_room(bench, tmp_path)
    join(bench, room, "join", seq=1)
    bench.run_until(lambda: kernel_pids(bench))
    bench.send_in_order(
        (room, keyed(1, "first", RestartKernel(NOTEBOOK, key="call-7"))),
        (room, keyed(2, "retry", RestartKernel(NOTEBOOK, key="call-7"))),
    )
    first, retry = answers(bench, "first", "retry")
    assert first == retry
    bench.send(room, keyed(3, "late", RestartKernel(NOTEBOOK, key="call-7")))
    assert answer_to(bench, "late") == first
    bench.send(room, keyed(3, "other", RestartKernel(NOTEBOOK, key="call-8")))
    assert answer_to(bench, "other")["kernel_pid"] != first["kernel_pid"]


def test_an_interrupt_repeated_gets_the_first_answer_even_once_the_kernel_is_gone(
    bench, tmp_path
) -> None:
    room = start_room(bench, tmp_path)
    join(bench, room, "join", seq=1)
    bench.run_until(lambda: kernel_pids(bench))
    bench.send_in_order(
        (room, keyed(1, "first", InterruptKernel(NOTEBOOK, key="call-1"))),
        (room, keyed(2, "retry", InterruptKernel(NOTEBOOK, key="call-1"))),
    )
    assert answers(bench, "first", "retry") == [{"interrupted": True}] * 2
    bench.send(room, keyed(1, "stop", ShutdownKernelNow(NOTEBOOK)))
    answer_to(bench, "stop")
    bench.send(room, keyed(2, "late", InterruptKernel(NOTEBOOK, key="call-1")))
    assert answer_to(bench, "late") == {"interrupted": True}
    bench.send(room, keyed(2, "new", InterruptKernel(NOTEBOOK, key="call-9")))
    (refused,) = bench.run_until(
        lambda: [f for f in bench.seen_of(RequestFailed) if f.origin.request_id == "new"]
    )
    assert refused.code is ErrorCode.NO_KERNEL


def save_twice_at_once(bench, tmp_path, key: str) -> tuple[object, str, ClaimPath]:
    """A room, and a keyed save with its repeat in one burst; returns the room, the
    target and the one path claim the room sent the daemon for them."""
    room = start_room(bench, tmp_path)
    join(bench, room, "join", seq=1)
    target = str(tmp_path / f"{key}.ipynb")
    bench.send_in_order(
        (room, keyed(1, "first", SaveNotebook(NOTEBOOK, target, key=key))),
        (room, keyed(2, "retry", SaveNotebook(NOTEBOOK, target, key=key))),
    )
    (claim,) = bench.run_until(lambda: bench.seen_of(ClaimPath))
    return room, target, claim


def test_a_save_repeated_while_it_runs_claims_and_writes_once(bench, tmp_path) -> None:
    room, target, claim = save_twice_at_once(bench, tmp_path, "call-2")
    bench.send(room, PathClaimed(claim.path, claim.origin))
    bound = bench.run_until(lambda: bench.seen_of(PathBound))[0]
    early = [a for a in bench.seen_of(RequestAnswered) if a.origin.request_id in ("first", "retry")]
    assert not early, "answered before the path was recorded"
    bench.send(room, PathRecorded(bound.path, bound.origin, None))
    first, retry = answers(bench, "first", "retry")
    assert first == retry == {"notebook_id": NOTEBOOK, "path": target}
    bench.send(room, keyed(3, "late", SaveNotebook(NOTEBOOK, target, key="call-2")))
    assert answer_to(bench, "late") == first
    assert len(bench.seen_of(ClaimPath)) == 1


def test_a_refused_save_refuses_its_repeats_and_a_later_repeat_tries_again(bench, tmp_path) -> None:
    room, target, claim = save_twice_at_once(bench, tmp_path, "call-3")
    bench.send(room, PathRefused(claim.path, claim.origin, ErrorCode.PATH_ALREADY_OPEN, "taken"))
    refused = bench.run_until(
        lambda: len(bench.seen_of(RequestFailed)) == 2 and bench.seen_of(RequestFailed)
    )
    assert sorted(f.origin.request_id for f in refused) == ["first", "retry"]
    bench.send(room, keyed(3, "later", SaveNotebook(NOTEBOOK, target, key="call-3")))
    bench.run_until(lambda: len(bench.seen_of(ClaimPath)) == 2)
    assert not [a for a in bench.seen_of(RequestAnswered) if a.origin.request_id == "later"]
