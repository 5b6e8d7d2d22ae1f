"""The reaper against joins and failing saves, and an attach against a removed record,
with the Daemon and its Rooms in one process.

The Daemon actor and the Rooms it creates run on one simpleSystemBase, as in the daemon
process; the bench plays the socket edge and runs offloaded saves at once, in order.
Each race is a burst of messages sent back to back (``ActorBench.send_in_order``), so
the reaper's sweep lands between a join's admission and its arrival in the room, or
between a room's close and a join for it, and nothing waits on time.
"""

from __future__ import annotations

import logging
import shutil
from datetime import timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest
from thespian.actors import Actor, ActorAddress, WakeupMessage

from nbstage.actors.daemon.actor import Daemon
from nbstage.actors.daemon.registry import Registry
from nbstage.protocol.common.settings import Settings
from nbstage.protocol.daemon.requests import (
    AttachNotebook,
    CellsFormat,
    CreateCell,
    CreateNotebook,
    DescribeRoom,
    EvictRoom,
    GetCells,
    LeaveRoom,
    ListRooms,
    RunReaper,
    SaveNotebook,
)
from nbstage.protocol.daemon_actors.daemon_followups import ReapDue
from nbstage.protocol.daemon_actors.edge import (
    ClientRequest,
    Origin,
    RequestAnswered,
    RequestFailed,
    RoomGone,
    RoomResident,
)
from nbstage.protocol.daemon_actors.rooms import DaemonStarted, StartDaemon
from tests.unit.actor_harness import ActorBench

REAP_AT_ONCE = Settings(reaper_ttl_secs=0.0, reaper_interval_secs=3600.0, keep_alive_secs=3600.0)
"""Every idle room is past its TTL, and only the test's sweeps run."""


@pytest.fixture
def daemon(bench: ActorBench, tmp_path: Path) -> ActorAddress:
    address = bench.create(Daemon)
    state = tmp_path / "state"
    state.mkdir()
    bench.send(address, StartDaemon(str(state), str(state / "kernels"), REAP_AT_ONCE))
    bench.run_until(lambda: bench.seen_of(DaemonStarted))
    return address


def reply(bench: ActorBench, request_id: str) -> dict[str, Any] | RequestFailed:
    def find() -> Any:
        for msg in bench.seen():
            if isinstance(msg, RequestAnswered | RequestFailed) and (
                msg.origin.request_id == request_id
            ):
                return msg.result() if isinstance(msg, RequestAnswered) else msg
        return None

    return bench.run_until(find)


def ask(bench: ActorBench, target: ActorAddress, request_id: str, body: Any) -> dict[str, Any]:
    bench.send(target, ClientRequest(Origin(1, request_id), body))
    answer = reply(bench, request_id)
    assert isinstance(answer, dict), f"{request_id} was refused: {answer}"
    return answer


def room_address(bench: ActorBench, notebook_id: str) -> ActorAddress:
    return [m.address for m in bench.seen_of(RoomResident) if m.notebook_id == notebook_id][-1]


def idle_room(bench: ActorBench, daemon: ActorAddress, name: str) -> tuple[str, ActorAddress]:
    """A kernel-less room whose only peer has left: idle, and past the TTL at once."""
    joined = ask(bench, daemon, f"create-{name}", CreateNotebook(runtime=None, peer_label=name))
    notebook_id = joined["notebook_id"]
    room = room_address(bench, notebook_id)
    ask(bench, room, f"leave-{name}", LeaveRoom(notebook_id, joined["peer_id"]))
    return notebook_id, room


def gone(bench: ActorBench) -> list[str]:
    return [m.notebook_id for m in bench.seen_of(RoomGone)]


def resident(bench: ActorBench, daemon: ActorAddress, request_id: str) -> dict[str, list[str]]:
    """Each resident room's peer labels."""
    rooms = ask(bench, daemon, request_id, ListRooms())["rooms"]
    return {room["notebook_id"]: [peer["label"] for peer in room["peers"]] for room in rooms}


def reaper_timer() -> WakeupMessage:
    return WakeupMessage(timedelta(0), ReapDue())


# --- reaper_spares_reserved (SPEC §14) ------------------------------------------------------


@pytest.mark.parametrize("sweep", ["timer", "operator"])
def test_reaper_spares_reserved(bench: ActorBench, daemon: ActorAddress, sweep: str) -> None:
    joining, room = idle_room(bench, daemon, "joining")
    control, _ = idle_room(bench, daemon, "control")
    sweep_message = (
        reaper_timer() if sweep == "timer" else ClientRequest(Origin(1, "reap"), RunReaper())
    )

    # the join is admitted (its JoinRoom is now queued for the room) and the sweep runs
    # before the room has seen it
    bench.send_in_order(
        (daemon, ClientRequest(Origin(1, "late-join"), AttachNotebook(joining, "late"))),
        (daemon, sweep_message),
    )

    joined = reply(bench, "late-join")
    assert isinstance(joined, dict), f"the join failed: {joined}"
    assert (joined["notebook_id"], joined["created"]) == (joining, False)
    if sweep == "operator":
        assert reply(bench, "reap") == {"reaped": [control], "kept": []}
    bench.run_until(lambda: control in gone(bench))
    assert joining not in gone(bench)
    assert resident(bench, daemon, "list") == {joining: ["late"]}
    cells = ask(bench, room, "read", GetCells(joining))
    assert cells["total"] == 0


def test_a_join_after_the_sweep_waits_for_the_close_and_is_refused_only_for_an_ephemeral(
    bench: ActorBench, daemon: ActorAddress
) -> None:
    """The other order: the sweep first, so the room is closing when the join arrives."""
    notebook_id, _ = idle_room(bench, daemon, "ghost")
    bench.send_in_order(
        (daemon, ClientRequest(Origin(1, "reap"), RunReaper())),
        (daemon, ClientRequest(Origin(1, "late-join"), AttachNotebook(notebook_id, "late"))),
    )
    assert reply(bench, "reap") == {"reaped": [notebook_id], "kept": []}
    refused = reply(bench, "late-join")
    assert isinstance(refused, RequestFailed)
    assert refused.code == "notebook_unavailable"
    assert gone(bench) == [notebook_id]


# --- a failed durability barrier keeps the room (SPEC §5 "Lifetime") -------------------------


def file_backed_room_with_an_edit(
    bench: ActorBench, daemon: ActorAddress, folder: Path
) -> tuple[str, ActorAddress, Path]:
    """A room saved at ``folder``/kept.ipynb, then edited, then left: unsaved and idle."""
    folder.mkdir()
    path = folder / "kept.ipynb"
    joined = ask(bench, daemon, "create", CreateNotebook(runtime=None, peer_label="writer"))
    notebook_id = joined["notebook_id"]
    room = room_address(bench, notebook_id)
    ask(bench, room, "save", SaveNotebook(notebook_id, str(path)))
    ask(bench, room, "edit", CreateCell(notebook_id, source="x = 'unsaved'"))
    ask(bench, room, "leave", LeaveRoom(notebook_id, joined["peer_id"]))
    return notebook_id, room, path


def unwritable(folder: Path) -> Path:
    """Put a plain file where ``folder`` was, so no save into it can work (even as root)."""
    aside = folder.with_name(folder.name + "-aside")
    folder.rename(aside)
    folder.write_text("not a directory")
    return aside


def writable_again(folder: Path, aside: Path) -> None:
    folder.unlink()
    aside.rename(folder)


def sources(bench: ActorBench, room: ActorAddress, notebook_id: str, request_id: str) -> list:
    cells = ask(bench, room, request_id, GetCells(notebook_id, format=CellsFormat.JSON))
    return [cell["source"] for cell in cells["cells"]]


def test_a_reaped_room_whose_save_fails_is_kept_and_serves_the_join_held_during_its_close(
    bench: ActorBench, daemon: ActorAddress, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    folder = tmp_path / "work"
    notebook_id, room, path = file_backed_room_with_an_edit(bench, daemon, folder)
    aside = unwritable(folder)

    with caplog.at_level(logging.ERROR, logger="nbstage.daemon"):
        bench.send_in_order(
            (daemon, ClientRequest(Origin(1, "reap"), RunReaper())),
            (daemon, ClientRequest(Origin(1, "held-join"), AttachNotebook(notebook_id, "after"))),
        )
        reaped = reply(bench, "reap")
    assert reaped["reaped"] == []
    [kept] = reaped["kept"]
    assert (kept["notebook_id"], kept["reason"]) == (notebook_id, "reaped")
    assert str(path) in kept["problem"]
    assert any(
        f"kept room {notebook_id}" in record.getMessage() and kept["problem"] in record.getMessage()
        for record in caplog.records
    )

    joined = reply(bench, "held-join")
    assert isinstance(joined, dict), f"the held join failed: {joined}"
    assert joined["cell_count"] == 1
    assert notebook_id not in gone(bench)
    assert sources(bench, room, notebook_id, "read") == ["x = 'unsaved'"]
    described = ask(bench, room, "describe", DescribeRoom(notebook_id))
    assert described["unsaved"] is True
    assert described["kept"] == kept
    ask(bench, room, "edit-again", CreateCell(notebook_id, source="y = 'after the failure'"))

    writable_again(folder, aside)
    ask(bench, room, "leave", LeaveRoom(notebook_id, joined["peer_id"]))
    assert ask(bench, daemon, "reap-again", RunReaper()) == {"reaped": [notebook_id], "kept": []}
    assert gone(bench) == [notebook_id]
    text = path.read_text()
    assert "x = 'unsaved'" in text
    assert "y = 'after the failure'" in text


def test_an_eviction_during_a_failing_reap_removes_the_room_and_says_it_was_not_saved(
    bench: ActorBench, daemon: ActorAddress, tmp_path: Path
) -> None:
    notebook_id, _, _ = file_backed_room_with_an_edit(bench, daemon, tmp_path / "work")
    aside = unwritable(tmp_path / "work")
    bench.send_in_order(
        (daemon, ClientRequest(Origin(1, "reap"), RunReaper())),
        (daemon, ClientRequest(Origin(1, "evict"), EvictRoom(notebook_id))),
    )
    assert reply(bench, "evict") == {"evicted": notebook_id, "saved": False}
    assert reply(bench, "reap") == {"reaped": [notebook_id], "kept": []}
    assert gone(bench) == [notebook_id]
    shutil.rmtree(aside)


# --- check_and_load_atomic (SPEC §14) -------------------------------------------------------


class RecordRemover(Actor):
    """Removes a persisted untitled notebook's registry record when told to: the burst
    puts that removal between the Daemon's admission of an attach and the new Room's
    start."""

    def receiveMessage(self, msg: Any, sender: ActorAddress) -> None:
        if isinstance(msg, tuple):
            registry_path, notebook_id = msg
            Registry(Path(registry_path)).forget_untitled(notebook_id)


def test_check_and_load_atomic(bench: ActorBench, daemon: ActorAddress, tmp_path: Path) -> None:
    registry_path = tmp_path / "state" / "registry.sqlite3"
    cells = [
        {
            "id": "u1",
            "cell_type": "code",
            "source": "kept = 1",
            "metadata": {},
            "outputs": [],
            "execution_count": None,
        }
    ]
    no_kernel = {"kernelspec": {"name": "no-such-kernel", "display_name": "none"}}
    notebook = {"nbformat": 4, "nbformat_minor": 5, "metadata": no_kernel, "cells": cells}
    Registry(registry_path).store_untitled("nb-u", orjson.dumps(notebook))
    remover = bench.create(RecordRemover)
    bench.send_in_order(
        (daemon, ClientRequest(Origin(1, "attach"), AttachNotebook("nb-u", "ada"))),
        (remover, (str(registry_path), "nb-u")),
    )
    joined = reply(bench, "attach")
    assert isinstance(joined, dict), f"the attach was refused: {joined}"
    assert Registry(registry_path).load_untitled("nb-u") is None, "the removal never ran"
    room = room_address(bench, "nb-u")
    shown = ask(bench, room, "cells", GetCells("nb-u", CellsFormat.SUMMARY))
    assert [cell["cell_id"] for cell in shown["cells"]] == ["u1"]
