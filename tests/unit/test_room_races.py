"""Room lifetime races, driven by explicit message order on in-process actors (SPEC §14)."""

from __future__ import annotations

from nbstage.actors.daemon.kernel.kernelspecs import PYTHON3
from nbstage.actors.daemon.room import Room
from nbstage.protocol.common.settings import Settings
from nbstage.protocol.daemon.requests import CreateCell, ExecuteCell, LeaveRoom
from nbstage.protocol.daemon_actors.edge import (
    ClientRequest,
    KernelProcessStarted,
    Origin,
    RequestAnswered,
)
from nbstage.protocol.daemon_actors.kernels import KernelBackendKind
from nbstage.protocol.daemon_actors.room_followups import KeepAliveExpired
from nbstage.protocol.daemon_actors.rooms import JoinRoom, RoomSource, StartRoom
from tests.unit.actor_harness import ActorBench

NOTEBOOK = "nb-1"
NEVER = Settings(keep_alive_secs=3600.0)


def start_room(bench: ActorBench, tmp_path) -> object:
    room = bench.create(Room)
    bench.send(
        room,
        StartRoom(
            NOTEBOOK,
            RoomSource.NEW,
            None,
            True,
            PYTHON3,
            None,
            str(tmp_path),
            str(tmp_path / "kernels"),
            NEVER,
            bench.recorder,
            kernel_backend=KernelBackendKind.SCRIPTED,
        ),
    )
    return room


def answer_to(bench: ActorBench, request_id: str) -> dict:
    def find():
        for msg in bench.seen_of(RequestAnswered):
            if msg.origin.request_id == request_id:
                return msg.result()
        return None

    return bench.run_until(find)


def join(bench: ActorBench, room: object, request_id: str, seq: int) -> str:
    bench.send(room, JoinRoom(Origin(1, request_id), "tester", False, seq))
    return answer_to(bench, request_id)["peer_id"]


def kernel_pids(bench: ActorBench) -> list[int]:
    return [m.pid for m in bench.seen_of(KernelProcessStarted)]


def run_cell(bench: ActorBench, room: object, request_id: str) -> dict:
    origin = Origin(1, f"{request_id}-cell")
    bench.send(room, ClientRequest(origin, CreateCell(NOTEBOOK, source="print(1)")))
    cell_id = answer_to(bench, origin.request_id)["cell_id"]
    bench.send(room, ClientRequest(Origin(1, request_id), ExecuteCell(NOTEBOOK, cell_id, 5.0)))
    return answer_to(bench, request_id)["execution"]


def test_join_after_teardown_began_gets_a_fresh_kernel_that_runs(bench, tmp_path) -> None:
    room = start_room(bench, tmp_path)
    peer = join(bench, room, "join-1", seq=1)
    bench.run_until(lambda: kernel_pids(bench))
    bench.send(room, ClientRequest(Origin(1, "leave"), LeaveRoom(NOTEBOOK, peer)))
    answer_to(bench, "leave")
    # the keep-alive timer of generation 1 fires before the next join arrives: teardown begins
    bench.send(room, KeepAliveExpired(generation=1))
    join(bench, room, "join-2", seq=2)
    pids = bench.run_until(lambda: len(kernel_pids(bench)) == 2 and kernel_pids(bench))
    assert pids[0] != pids[1]
    execution = run_cell(bench, room, "run")
    assert execution["status"] == "done"
    assert execution["outputs"][0]["text"] == "print(1)"


def test_join_inside_the_window_keeps_the_kernel_and_ignores_the_stale_timer(
    bench, tmp_path
) -> None:
    room = start_room(bench, tmp_path)
    peer = join(bench, room, "join-1", seq=1)
    bench.run_until(lambda: kernel_pids(bench))
    bench.send(room, ClientRequest(Origin(1, "leave"), LeaveRoom(NOTEBOOK, peer)))
    answer_to(bench, "leave")
    join(bench, room, "join-2", seq=2)
    # the timer armed at generation 1 fires after the rejoin: it is stale and changes nothing
    bench.send(room, KeepAliveExpired(generation=1))
    execution = run_cell(bench, room, "run")
    assert execution["status"] == "done"
    assert len(kernel_pids(bench)) == 1
