"""Execution records in executions/: a live record is written only when an execution's id
leaves the daemon before it finished, and that answer waits for the record; old records are
pruned oldest first."""

from __future__ import annotations

import os

import pytest

from nbstage.actors.daemon.notebook.persistence import prune_executions
from nbstage.protocol.daemon.requests import CreateCell, ExecuteCell
from nbstage.protocol.daemon_actors.edge import ClientRequest, Origin, RequestAnswered
from nbstage.protocol.daemon_actors.room_followups import ExecutionRecorded, LiveExecutionRecorded
from tests.unit.actor_harness import HoldAppends, ReleaseAppends, held_work
from tests.unit.test_room_races import NOTEBOOK, answer_to, join, start_room


def new_cell(bench, room) -> str:
    bench.send(room, ClientRequest(Origin(1, "cell"), CreateCell(NOTEBOOK, source="1+1")))
    return answer_to(bench, "cell")["cell_id"]


def answered(bench, request_id: str) -> bool:
    return any(m.origin.request_id == request_id for m in bench.seen_of(RequestAnswered))


def test_an_execution_answered_once_finished_gets_no_live_record(bench, tmp_path) -> None:
    room = start_room(bench, tmp_path)
    join(bench, room, "join", seq=1)
    cell = new_cell(bench, room)
    bench.send(room, ClientRequest(Origin(1, "run"), ExecuteCell(NOTEBOOK, cell, 5.0)))
    assert answer_to(bench, "run")["execution"]["status"] == "done"
    bench.run_until(lambda: held_work(bench, ExecutionRecorded))
    assert held_work(bench, LiveExecutionRecorded) == []


def test_an_execution_answered_before_it_finished_is_on_disk_first(holding_bench, tmp_path) -> None:
    bench = holding_bench
    room = start_room(bench, tmp_path)
    join(bench, room, "join", seq=1)
    cell = new_cell(bench, room)
    bench.system.tell(bench.recorder, HoldAppends(LiveExecutionRecorded))
    bench.send(room, ClientRequest(Origin(1, "run"), ExecuteCell(NOTEBOOK, cell, 0.0)))
    [live] = bench.run_until(lambda: held_work(bench, LiveExecutionRecorded))
    assert not answered(bench, "run")
    bench.system.tell(bench.recorder, ReleaseAppends())
    execution = answer_to(bench, "run")["execution"]
    assert execution["execution_id"] == live.token.execution_id
    seen = bench.seen()
    written = seen.index(live)
    reply = next(
        i
        for i, m in enumerate(seen)
        if isinstance(m, RequestAnswered) and m.origin.request_id == "run"
    )
    assert written < reply


@pytest.mark.parametrize(
    ("files", "keep", "left"),
    [
        (0, 3, 0),
        (3, 3, 3),
        (5, 3, 3),
        (5, 0, 0),
    ],
)
def test_pruning_keeps_the_newest_records(tmp_path, files: int, keep: int, left: int) -> None:
    for i in range(files):
        record = tmp_path / f"e-{i}.json"
        record.write_bytes(b"{}")
        os.utime(record, ns=(i * 10**9, i * 10**9))
    (tmp_path / "e-9.tmp").write_bytes(b"{}")
    assert prune_executions(tmp_path, keep) == files - left
    names = sorted(p.name for p in tmp_path.glob("*.json"))
    assert names == [f"e-{i}.json" for i in range(files - left, files)]
    assert (tmp_path / "e-9.tmp").exists()
