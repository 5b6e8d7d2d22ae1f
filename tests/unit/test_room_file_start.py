"""A room opened from a file reads it off the loop: what may arrive before the read is done.

The read is held (``HoldAppends(NotebookFileRead)``), so each test puts its messages in
the mailbox while the file is still being read, then lets the read finish.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from thespian.actors import ActorExitRequest

from nbstage.actors.daemon.actor import Daemon
from nbstage.actors.daemon.room import Room
from nbstage.protocol.common.errors import ErrorCode
from nbstage.protocol.common.settings import Settings
from nbstage.protocol.daemon.requests import DescribeRoom, EvictRoom, OpenNotebook
from nbstage.protocol.daemon_actors.edge import (
    ClientRequest,
    Origin,
    RequestAnswered,
    RequestFailed,
    RoomResident,
)
from nbstage.protocol.daemon_actors.room_followups import NotebookFileRead
from nbstage.protocol.daemon_actors.rooms import (
    CloseReason,
    CloseRoom,
    DaemonStarted,
    JoinRoom,
    PathRecorded,
    RoomClosed,
    RoomStarted,
    RoomStartFailed,
    StartDaemon,
)
from tests.unit.actor_harness import (
    ActorBench,
    HoldAppends,
    ReleaseAppends,
    file_room_start,
    held_work,
    run_inline,
)

NOTEBOOK = "nb-file"
QUIET = Settings(keep_alive_secs=3600.0, file_check_secs=3600.0)


@pytest.fixture
def notebook_file(tmp_path: Path) -> Path:
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell("1+1"), nbformat.v4.new_markdown_cell("# two")]
    path = tmp_path / "two.ipynb"
    path.write_text(nbformat.writes(notebook))
    return path


def start_held(bench: ActorBench, path: Path, binding_pending: bool = False) -> object:
    """A room whose file read is held; the test decides when it finishes."""
    bench.system.tell(bench.recorder, HoldAppends(NotebookFileRead))
    room = bench.create(Room)
    bench.send(room, file_room_start(NOTEBOOK, path, QUIET, bench.recorder, binding_pending))
    bench.run_until(lambda: held_work(bench, NotebookFileRead))
    return room


def reply_to(bench: ActorBench, request_id: str) -> list[RequestAnswered | RequestFailed]:
    return [
        m
        for m in bench.seen_of(RequestAnswered) + bench.seen_of(RequestFailed)
        if m.origin.request_id == request_id
    ]


def test_a_join_waits_for_the_file_and_sees_its_cells(holding_bench, notebook_file) -> None:
    room = start_held(holding_bench, notebook_file)
    holding_bench.send(room, JoinRoom(Origin(1, "join"), "tester", False, 1))
    assert reply_to(holding_bench, "join") == []
    assert holding_bench.seen_of(RoomStarted) == []

    holding_bench.system.tell(holding_bench.recorder, ReleaseAppends())
    answers = holding_bench.run_until(lambda: reply_to(holding_bench, "join"))
    assert len(answers) == 1
    assert isinstance(answers[0], RequestAnswered)
    assert answers[0].result()["cell_count"] == 2
    assert len(holding_bench.seen_of(RoomStarted)) == 1


def test_the_path_recorded_before_the_file_is_read_does_not_start_the_room(
    holding_bench, notebook_file
) -> None:
    """An open by path also waits for the Daemon's PathRecorded; when that comes first,
    the room must go on waiting for its file instead of starting with no document."""
    room = start_held(holding_bench, notebook_file, binding_pending=True)
    holding_bench.send_in_order(
        (room, JoinRoom(Origin(1, "join"), "tester", False, 1)),
        (room, PathRecorded(str(notebook_file), None, None)),
    )
    assert reply_to(holding_bench, "join") == []
    assert holding_bench.seen_of(RoomStarted) == []

    holding_bench.system.tell(holding_bench.recorder, ReleaseAppends())
    answers = holding_bench.run_until(lambda: reply_to(holding_bench, "join"))
    assert [type(a) for a in answers] == [RequestAnswered]
    assert answers[0].result()["cell_count"] == 2


def test_a_file_that_cannot_be_parsed_fails_the_room_and_its_held_joins(
    holding_bench, tmp_path
) -> None:
    broken = tmp_path / "broken.ipynb"
    broken.write_text("{ not json")
    room = start_held(holding_bench, broken)
    holding_bench.send(room, JoinRoom(Origin(1, "join"), "tester", False, 1))

    holding_bench.system.tell(holding_bench.recorder, ReleaseAppends())
    answers = holding_bench.run_until(lambda: reply_to(holding_bench, "join"))
    failed = holding_bench.run_until(lambda: holding_bench.seen_of(RoomStartFailed))
    assert [type(a) for a in answers] == [RequestFailed]
    assert answers[0].code is failed[0].code
    assert answers[0].code is not ErrorCode.INTERNAL
    assert holding_bench.seen_of(RoomStarted) == []


def test_a_close_while_the_file_is_read_fails_the_held_join_at_once(
    holding_bench, notebook_file
) -> None:
    """The Daemon ends a closed room (ActorExitRequest) maybe before its read comes back,
    so the join held for the start is answered by the close itself."""
    room = start_held(holding_bench, notebook_file)
    holding_bench.send_in_order(
        (room, JoinRoom(Origin(1, "join"), "tester", False, 1)),
        (room, CloseRoom(CloseReason.DAEMON_STOPPING)),
    )
    closed = holding_bench.run_until(lambda: holding_bench.seen_of(RoomClosed))
    assert closed[0].saved is True
    answers = reply_to(holding_bench, "join")
    assert [type(a) for a in answers] == [RequestFailed]

    holding_bench.send(room, ActorExitRequest())
    holding_bench.system.tell(holding_bench.recorder, ReleaseAppends())
    assert len(reply_to(holding_bench, "join")) == 1
    assert holding_bench.seen_of(RoomStarted) == []


def test_a_request_while_the_file_is_read_is_refused_as_unavailable(
    holding_bench, notebook_file
) -> None:
    """The operator's console lists a starting room and may ask it before anyone joined."""
    room = start_held(holding_bench, notebook_file)
    holding_bench.send(room, ClientRequest(Origin(2, "describe"), DescribeRoom(NOTEBOOK)))
    (refused,) = reply_to(holding_bench, "describe")
    assert isinstance(refused, RequestFailed)
    assert refused.code is ErrorCode.NOTEBOOK_UNAVAILABLE
    assert "still being opened" in refused.message

    holding_bench.system.tell(holding_bench.recorder, ReleaseAppends())
    holding_bench.run_until(lambda: holding_bench.seen_of(RoomStarted))
    holding_bench.send(room, ClientRequest(Origin(2, "again"), DescribeRoom(NOTEBOOK)))
    (described,) = reply_to(holding_bench, "again")
    assert isinstance(described, RequestAnswered)


def test_an_eviction_asked_while_the_read_fails_is_still_answered(holding_bench, tmp_path) -> None:
    """The order that loses the eviction: the Daemon takes EvictRoom (and sends CloseRoom),
    the room's read fails first (RoomStartFailed), and only then does the room close."""
    bench = holding_bench
    state = tmp_path / "state"
    state.mkdir()
    daemon = bench.create(Daemon)
    bench.send(daemon, StartDaemon(str(state), str(state / "kernels"), QUIET))
    bench.run_until(lambda: bench.seen_of(DaemonStarted))
    broken = tmp_path / "broken.ipynb"
    broken.write_text("{ not json")
    bench.system.tell(bench.recorder, HoldAppends(NotebookFileRead))
    bench.send(daemon, ClientRequest(Origin(1, "open"), OpenNotebook(str(broken), "a")))
    (read,) = bench.run_until(lambda: held_work(bench, NotebookFileRead))
    (notebook_id,) = [m.notebook_id for m in bench.seen_of(RoomResident)]

    bench.send_in_order(
        (daemon, ClientRequest(Origin(2, "evict"), EvictRoom(notebook_id))),
        (read.reply_to, run_inline(read)),
    )
    (evicted,) = bench.run_until(lambda: reply_to(bench, "evict"))
    assert isinstance(evicted, RequestAnswered)
    assert evicted.result() == {"evicted": notebook_id, "saved": True}
    (opened,) = reply_to(bench, "open")
    assert isinstance(opened, RequestFailed)
