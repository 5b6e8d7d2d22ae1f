"""manage_dependencies in one Room (simpleSystemBase), with the order of its messages
driven by the test: an environment build is held, and its outcome injected, so what
happens meanwhile is decided by mailbox order and nothing else.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from nbstage.actors.daemon.environment import dependencies
from nbstage.actors.daemon.environment.environments import EnvironmentUnavailable
from nbstage.actors.daemon.kernel.kernelspecs import PYTHON3
from nbstage.actors.daemon.room import Room
from nbstage.protocol.common.offload import BlockingWorkDone
from nbstage.protocol.common.settings import Settings
from nbstage.protocol.daemon.requests import ApplyDependencies, ManageDependencies
from nbstage.protocol.daemon_actors.edge import (
    ClientRequest,
    KernelProcessEnded,
    KernelProcessStarted,
    Origin,
    RequestAnswered,
    RequestFailed,
)
from nbstage.protocol.daemon_actors.kernels import KernelBackendKind
from nbstage.protocol.daemon_actors.room_followups import DependenciesPrepared
from nbstage.protocol.daemon_actors.rooms import (
    CloseReason,
    CloseRoom,
    JoinRoom,
    RoomClosed,
    RoomSource,
    StartRoom,
)
from tests.unit.actor_harness import ActorBench, HoldAppends

NOTEBOOK = "nb-deps"


@pytest.fixture
def bench(holding_bench: ActorBench) -> ActorBench:
    return holding_bench


def joined_room(bench: ActorBench, tmp_path: Path):
    room = bench.create(Room)
    start = StartRoom(
        NOTEBOOK,
        RoomSource.NEW,
        None,
        False,
        PYTHON3,
        None,
        str(tmp_path),
        str(tmp_path / "kernels"),
        Settings(keep_alive_secs=3600.0),
        bench.recorder,
        kernel_backend=KernelBackendKind.SCRIPTED,
    )
    bench.send(room, start)
    bench.send(room, JoinRoom(Origin(1, "join"), "tester", False, 1))
    outcome(bench, "join")
    bench.run_until(lambda: bench.seen_of(KernelProcessStarted))
    return room


def outcome(bench: ActorBench, request_id: str):
    def find():
        for msg in bench.seen():
            answer = isinstance(msg, RequestAnswered | RequestFailed)
            if answer and msg.origin.request_id == request_id:
                return msg
        return None

    return bench.run_until(find)


def manage(bench: ActorBench, room, request_id: str, **fields) -> None:
    bench.send(room, ClientRequest(Origin(1, request_id), ManageDependencies(NOTEBOOK, **fields)))


def current(bench: ActorBench, room, request_id: str) -> dict:
    manage(bench, room, request_id)
    return outcome(bench, request_id).result()["after"]


def held_build(bench: ActorBench, room, package: str):
    """Ask for ``package`` with apply=restart, and hold its build: the test says when it
    ends, and how, by sending its BlockingWorkDone."""
    bench.system.tell(bench.recorder, HoldAppends(DependenciesPrepared))
    manage(bench, room, "build", add=[package], apply=ApplyDependencies.RESTART)
    return bench.run_until(
        lambda: [
            m for m in bench.seen() if isinstance(getattr(m, "token", None), DependenciesPrepared)
        ]
    )[0]


def test_an_edit_while_the_build_runs_wins_and_the_build_changes_nothing(
    bench: ActorBench, tmp_path: Path
) -> None:
    room = joined_room(bench, tmp_path)
    kernels = len(bench.seen_of(KernelProcessStarted))
    build = held_build(bench, room, "six")

    manage(bench, room, "edit", add=["numpy"])
    assert outcome(bench, "edit").result()["after"]["dependencies"] == ["numpy"]
    bench.send(room, BlockingWorkDone(build.token, (tmp_path / "built", True)))

    refused = outcome(bench, "build")
    assert isinstance(refused, RequestFailed)
    assert refused.code == "dependencies_changed"
    assert "Dependencies changed since review" in refused.message
    assert current(bench, room, "read")["dependencies"] == ["numpy"]
    assert len(bench.seen_of(KernelProcessStarted)) == kernels, "the kernel was not replaced"


def test_a_failed_build_answers_uvs_words_and_changes_nothing(
    bench: ActorBench, tmp_path: Path
) -> None:
    room = joined_room(bench, tmp_path)
    build = held_build(bench, room, "nosuch")
    said = EnvironmentUnavailable("uv pip install failed: No solution found: nosuch")
    bench.send(room, BlockingWorkDone(build.token, error=said))

    refused = outcome(bench, "build")
    assert isinstance(refused, RequestFailed)
    assert refused.code == "build_failed"
    assert "No solution found: nosuch" in refused.message
    assert current(bench, room, "read") == {
        "dependencies": [],
        "fingerprint": dependencies.fingerprint([]),
    }


def test_a_repeated_key_is_answered_once_and_edits_once(bench: ActorBench, tmp_path: Path) -> None:
    room = joined_room(bench, tmp_path)
    manage(bench, room, "first", add=["six"], key="k1")
    manage(bench, room, "again", add=["six"], key="k1")
    first, again = outcome(bench, "first").result(), outcome(bench, "again").result()
    assert first == again
    assert first["added"] == ["six"]
    manage(bench, room, "other", add=["six>=1"], key="k2")
    assert outcome(bench, "other").result()["before"]["dependencies"] == ["six"]


def test_a_close_during_a_build_waits_for_it_and_answers_its_call(
    bench: ActorBench, tmp_path: Path
) -> None:
    room = joined_room(bench, tmp_path)
    build = held_build(bench, room, "six")
    bench.send(room, CloseRoom(CloseReason.EVICTED))
    bench.run_until(lambda: bench.seen_of(KernelProcessEnded))
    assert not bench.seen_of(RoomClosed), "the kernel is gone, but the close waits for the build"

    bench.send(room, BlockingWorkDone(build.token, (tmp_path / "built", True)))
    refused = outcome(bench, "build")
    assert isinstance(refused, RequestFailed)
    assert refused.code == "shutting_down"
    bench.run_until(lambda: bench.seen_of(RoomClosed))
