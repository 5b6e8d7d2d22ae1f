"""A Room keeps a bounded output per execution, and takes outputs for a cell gone meanwhile.

In-process Room and Kernel actors with the scripted kernel, which echoes a cell's source
as its stdout; offloaded record writes run at once, so the record on disk is final when
the execution's answer arrives.
"""

from __future__ import annotations

from pathlib import Path

import orjson
from thespian.actors import ActorAddress

from nbstage.actors.common.output_bounds import NOTICE_STREAM
from nbstage.actors.daemon.kernel.kernelspecs import PYTHON3
from nbstage.actors.daemon.room import Room
from nbstage.protocol.common.settings import Settings
from nbstage.protocol.daemon.requests import (
    CreateCell,
    DeleteCell,
    ExecuteCell,
    GetCell,
    GetExecution,
)
from nbstage.protocol.daemon_actors.edge import ClientRequest, Origin
from nbstage.protocol.daemon_actors.kernels import KernelBackendKind
from nbstage.protocol.daemon_actors.rooms import RoomSource, StartRoom
from tests.unit.actor_harness import ActorBench
from tests.unit.test_room_races import NOTEBOOK, answer_to, join

LIMIT = 8192


def start_room(bench: ActorBench, state: Path) -> ActorAddress:
    (state / "executions").mkdir()
    room = bench.create(Room)
    settings = Settings(keep_alive_secs=3600.0, output_limit_bytes=LIMIT)
    start = StartRoom(
        NOTEBOOK,
        RoomSource.NEW,
        None,
        True,
        PYTHON3,
        None,
        str(state),
        str(state / "kernels"),
        settings,
        bench.recorder,
        kernel_backend=KernelBackendKind.SCRIPTED,
    )
    bench.send(room, start)
    join(bench, room, "join", seq=1)
    return room


def create_cell(bench: ActorBench, room: ActorAddress, source: str) -> str:
    bench.send(room, ClientRequest(Origin(1, "create"), CreateCell(NOTEBOOK, source=source)))
    return answer_to(bench, "create")["cell_id"]


def stored_record(state: Path, execution_id: str) -> dict:
    return orjson.loads((state / "executions" / f"{execution_id}.json").read_bytes())


def test_outputs_for_a_cell_deleted_while_it_runs_land_once_in_the_record(
    bench: ActorBench, tmp_path: Path
) -> None:
    room = start_room(bench, tmp_path)
    cell_id = create_cell(bench, room, "print('once')")
    run = ClientRequest(Origin(1, "run"), ExecuteCell(NOTEBOOK, cell_id, 5.0))
    delete = ClientRequest(Origin(1, "delete"), DeleteCell(NOTEBOOK, cell_id))

    bench.send_in_order((room, run), (room, delete))

    assert answer_to(bench, "delete") == {"deleted": cell_id}
    execution = answer_to(bench, "run")["execution"]
    texts = ["print('once')"]
    assert [output["text"] for output in execution["outputs"]] == texts
    record = stored_record(tmp_path, execution["execution_id"])
    assert [output["text"] for output in record["outputs"]] == texts
    again = GetExecution(NOTEBOOK, execution["execution_id"])
    bench.send(room, ClientRequest(Origin(1, "again"), again))
    assert [output["text"] for output in answer_to(bench, "again")["execution"]["outputs"]] == texts


def test_a_cell_keeps_the_head_and_tail_of_a_long_output_in_the_notebook_and_the_record(
    bench: ActorBench, tmp_path: Path
) -> None:
    room = start_room(bench, tmp_path)
    source = "".join(f"line {i:06d}\n" for i in range(20_000))
    cell_id = create_cell(bench, room, source)
    bench.send(room, ClientRequest(Origin(1, "run"), ExecuteCell(NOTEBOOK, cell_id, 5.0)))
    execution = answer_to(bench, "run")["execution"]

    bench.send(room, ClientRequest(Origin(1, "read"), GetCell(NOTEBOOK, cell_id)))
    cell = answer_to(bench, "read")["cell"]
    record = stored_record(tmp_path, execution["execution_id"])
    for outputs in (execution["outputs"], cell["outputs"], record["outputs"]):
        head, notice, tail = outputs
        assert source.startswith(head["text"])
        assert source.endswith(tail["text"])
        assert len(head["text"]) + len(tail["text"]) == LIMIT
        assert notice["name"] == NOTICE_STREAM
        assert f"{len(source) - LIMIT:,} bytes" in notice["text"]


def test_a_reply_with_a_preview_is_cut_before_it_is_encoded(
    bench: ActorBench, tmp_path: Path
) -> None:
    room = start_room(bench, tmp_path)
    cell_id = create_cell(bench, room, "x" * 6000)
    bench.send(room, ClientRequest(Origin(1, "run"), ExecuteCell(NOTEBOOK, cell_id, 5.0)))
    answer_to(bench, "run")

    bench.send(room, ClientRequest(Origin(1, "whole"), GetCell(NOTEBOOK, cell_id)))
    bench.send(room, ClientRequest(Origin(1, "cut", 1000), GetCell(NOTEBOOK, cell_id, 1000)))

    assert answer_to(bench, "whole")["cell"]["outputs"][0]["text"] == "x" * 6000
    cut = answer_to(bench, "cut")["cell"]["outputs"][0]["text"]
    assert cut.startswith("x" * 500)
    assert "5,000 bytes cut here" in cut
