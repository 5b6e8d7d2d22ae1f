"""A stopping daemon acknowledges no edit it will not keep (issue 11 §10).

The Daemon and its Rooms run on one simpleSystemBase, as in the daemon process; the
bench plays the socket edge and runs offloaded flushes at once, in order. Each race is
one burst (``ActorBench.send_in_order``): a request reaches the room either before the
daemon's CloseRoom or right after it, ahead of the room's closing flush.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from thespian.actors import ActorAddress

from nbstage.actors.daemon.actor import Daemon
from nbstage.actors.daemon.registry import Registry
from nbstage.protocol.common.errors import ErrorCode
from nbstage.protocol.common.settings import Settings
from nbstage.protocol.daemon.requests import (
    CreateCell,
    CreateNotebook,
    ExecuteCell,
    GetCell,
    MoveCell,
    SaveNotebook,
    SetCell,
)
from nbstage.protocol.daemon_actors.edge import (
    ClientRequest,
    KernelProcessEnded,
    Origin,
    RequestFailed,
)
from nbstage.protocol.daemon_actors.kernels import OutputsArrived
from nbstage.protocol.daemon_actors.rooms import (
    CloseReason,
    CloseRoom,
    DaemonStarted,
    DaemonStopped,
    RoomClosed,
    StartDaemon,
    StopDaemon,
)
from tests.unit import test_room_races as room_races
from tests.unit.actor_harness import ActorBench, Forward
from tests.unit.test_reaper_races import ask, reply, room_address

QUIET = Settings(reaper_interval_secs=3600.0, keep_alive_secs=3600.0)


@pytest.fixture
def state(tmp_path: Path) -> Path:
    state = tmp_path / "state"
    state.mkdir()
    return state


@pytest.fixture
def daemon(bench: ActorBench, state: Path) -> ActorAddress:
    address = bench.create(Daemon)
    bench.send(address, StartDaemon(str(state), str(state / "kernels"), QUIET))
    bench.run_until(lambda: bench.seen_of(DaemonStarted))
    return address


def persisted_room(bench: ActorBench, daemon: ActorAddress) -> tuple[str, ActorAddress, str]:
    joined = ask(bench, daemon, "create", CreateNotebook(ephemeral=False, peer_label="a"))
    notebook_id = joined["notebook_id"]
    room = room_address(bench, notebook_id)
    cell = ask(bench, room, "cell", CreateCell(notebook_id, source="old"))["cell_id"]
    ask(bench, room, "cell-2", CreateCell(notebook_id, source="second"))
    return notebook_id, room, cell


def flushed_sources(state: Path, notebook_id: str) -> list[str]:
    registry = Registry(state / "registry.sqlite3")
    try:
        content = registry.load_untitled(notebook_id)
    finally:
        registry.close()
    return ["".join(cell["source"]) for cell in orjson.loads(content)["cells"]]


def requests(notebook_id: str, cell_id: str) -> dict[str, Any]:
    return {
        "set": SetCell(notebook_id, cell_id, source="new"),
        "move": MoveCell(notebook_id, cell_id, after_cell_id=None),
        "execute": ExecuteCell(notebook_id, cell_id),
        "save": SaveNotebook(notebook_id, key="save-1"),
    }


@pytest.mark.parametrize("kind", ["set", "move", "execute", "save"])
def test_a_request_behind_the_close_is_refused_retryably(
    bench: ActorBench, daemon: ActorAddress, state: Path, kind: str
) -> None:
    notebook_id, room, cell = persisted_room(bench, daemon)
    late = ClientRequest(Origin(1, "late"), requests(notebook_id, cell)[kind])

    # the Recorder forwards the request to the room only once the daemon has sent the
    # room its CloseRoom: the request lands between CloseRoom and the closing flush
    bench.send_in_order((daemon, StopDaemon()), (bench.recorder, Forward(room, late)))

    refused = reply(bench, "late")
    assert isinstance(refused, RequestFailed), f"acknowledged while closing: {refused}"
    assert refused.code is ErrorCode.SHUTTING_DOWN
    assert "try again" in refused.message
    bench.run_until(lambda: bench.seen_of(DaemonStopped))
    assert flushed_sources(state, notebook_id) == ["old", "second"]


def test_an_edit_ahead_of_the_close_is_acknowledged_and_kept(
    bench: ActorBench, daemon: ActorAddress, state: Path
) -> None:
    notebook_id, room, cell = persisted_room(bench, daemon)
    edit = ClientRequest(Origin(1, "edit"), SetCell(notebook_id, cell, source="new"))

    bench.send_in_order((daemon, StopDaemon()), (room, edit))

    assert reply(bench, "edit") == {"cell_id": cell}
    bench.run_until(lambda: bench.seen_of(DaemonStopped))
    assert flushed_sources(state, notebook_id) == ["new", "second"]


# --- a closing room and its kernel, with a scripted kernel --------------------------------


def test_a_closing_room_ends_its_kernel_first_and_takes_no_late_outputs(
    bench: ActorBench, tmp_path: Path
) -> None:
    (tmp_path / "executions").mkdir()
    room = room_races.start_room(bench, tmp_path)
    room_races.join(bench, room, "join", seq=1)
    execution = room_races.run_cell(bench, room, "run")
    cell_id = execution["cell_id"]
    late = OutputsArrived(execution["execution_id"], [{"output_type": "stream", "text": "late"}])

    bench.send_in_order((room, CloseRoom(CloseReason.DAEMON_STOPPING)), (room, late))

    bench.run_until(lambda: bench.seen_of(RoomClosed))
    order = [type(m) for m in bench.seen() if isinstance(m, KernelProcessEnded | RoomClosed)]
    assert order == [KernelProcessEnded, RoomClosed], "the room closed before its kernel ended"
    bench.send(room, ClientRequest(Origin(1, "read"), GetCell(room_races.NOTEBOOK, cell_id)))
    outputs = room_races.answer_to(bench, "read")["cell"]["outputs"]
    assert [output["text"] for output in outputs] == ["print(1)"]
