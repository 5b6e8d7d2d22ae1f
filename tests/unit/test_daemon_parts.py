"""The Daemon actor's parts, without the actor: the room directory
(actors/daemon/room_directory.py), who waits for closings (close_waits.py) and the
admissions carried through as steps (admitting.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from nbstage.actors.common.effects import Fail, Offload
from nbstage.actors.daemon.admission import StartNewRoom
from nbstage.actors.daemon.admitting import Admitting, Join, NewRoom
from nbstage.actors.daemon.close_waits import CloseWaits, Stopping
from nbstage.actors.daemon.room_directory import RoomDirectory
from nbstage.actors.daemon.room_start import RoomWish, installed_kernelspecs
from nbstage.protocol.common.errors import ErrorCode, NbstageError
from nbstage.protocol.common.settings import Settings
from nbstage.protocol.daemon.replies import KeptRoom, RoomEvicted, RoomsReaped
from nbstage.protocol.daemon.requests import AttachNotebook, CreateNotebook, OpenNotebook
from nbstage.protocol.daemon_actors.edge import Origin
from nbstage.protocol.daemon_actors.rooms import CloseReason, RoomSource

A, B = "/notes/a.ipynb", "/notes/b.ipynb"
CALLER, OTHER = Origin(1, "r1"), Origin(2, "r2")


def directory(*rooms: tuple[str, str | None]) -> RoomDirectory:
    rooms_by = RoomDirectory()
    for notebook_id, path in rooms:
        rooms_by.add(notebook_id, f"address-{notebook_id}", path, ephemeral=False)
    return rooms_by


# --- the directory --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("held_by", "claimant", "refused_by"),
    [
        pytest.param(None, "n1", None, id="a free path is claimed"),
        pytest.param("n1", "n1", None, id="its own path"),
        pytest.param("n2", "n1", "n2", id="another room's path is refused"),
    ],
)
def test_a_path_is_held_by_one_room(
    held_by: str | None, claimant: str, refused_by: str | None
) -> None:
    rooms = directory(("n1", None), ("n2", None))
    if held_by is not None:
        rooms.claim(A, held_by)
    assert rooms.claim(A, claimant) == refused_by
    assert rooms.by_path[A] == (refused_by or claimant)


def test_a_bound_path_replaces_the_old_one_and_outlives_a_release() -> None:
    rooms = directory(("n1", A))
    assert rooms.bind("n1", B) is not None
    assert rooms.by_path == {B: "n1"}
    assert not rooms.get("n1").ephemeral
    rooms.release("n1", B)
    assert rooms.by_path == {B: "n1"}, "a room's own path is not let go"
    rooms.claim(A, "n1")
    rooms.release("n1", A)
    assert A not in rooms.by_path
    assert rooms.bind("gone", A) is None


def test_a_forgotten_room_lets_go_of_its_path_unless_another_holds_it() -> None:
    rooms = directory(("n1", A), ("n2", B))
    rooms.forget("n1")
    assert rooms.by_path == {B: "n2"}
    rooms.add("n3", "address-n3", A, ephemeral=False)
    assert rooms.claim(A, "n2") == "n3"
    rooms.by_path[A] = "n2"
    rooms.forget("n3")
    assert rooms.by_path[A] == "n2"


@pytest.mark.parametrize(
    ("body", "deferred"),
    [
        pytest.param(AttachNotebook("n1"), True, id="attach to a closing room"),
        pytest.param(OpenNotebook(A), True, id="open of a closing room's path"),
        pytest.param(OpenNotebook("a.ipynb"), False, id="a relative path is no match"),
        pytest.param(AttachNotebook("n2"), False, id="an open room"),
        pytest.param(CreateNotebook(), False, id="a create"),
    ],
)
def test_an_admission_to_a_closing_room_waits(body: object, deferred: bool) -> None:
    rooms = directory(("n1", A), ("n2", B))
    rooms.close("n1", CloseReason.REAPED)
    assert (rooms.closing_target(body) is rooms.get("n1")) is deferred


def test_an_evict_closes_an_open_room_and_marks_a_closing_one() -> None:
    rooms = directory(("n1", A), ("n2", B))
    assert rooms.evict("n1", CALLER) is True
    assert rooms.get("n1").closing is False, "the Daemon closes it"
    rooms.close("n1", CloseReason.EVICTED)
    rooms.close("n2", CloseReason.REAPED)
    assert rooms.evict("n2", OTHER) is False
    assert rooms.get("n2").close_reason is CloseReason.EVICTED
    with pytest.raises(NbstageError) as refused:
        rooms.evict("nowhere", CALLER)
    assert refused.value.code is ErrorCode.NOT_FOUND
    assert rooms.alive() == set()
    rooms.keep("n2")
    assert rooms.alive() == {"n2"}


# --- who waits for closings -----------------------------------------------------------


def test_a_reap_is_answered_once_every_room_it_chose_is_gone_or_kept() -> None:
    waits = CloseWaits()
    assert waits.reap_begun(OTHER, []) == [(OTHER, RoomsReaped([], []))]
    assert waits.reap_begun(CALLER, ["n1", "n2"]) == []
    kept = KeptRoom("n2", "reaped", "disk full", 1.0)
    assert waits.settled("n2", kept) == []
    rooms = directory(("n1", A))
    assert waits.closed("n1", rooms.get("n1"), saved=True) == [
        (CALLER, RoomsReaped(["n1"], [kept]))
    ]


def test_an_eviction_is_answered_when_its_room_closes() -> None:
    rooms = directory(("n1", A))
    rooms.evict("n1", CALLER)
    waits = CloseWaits()
    assert waits.closed("n1", rooms.get("n1"), saved=False) == [(CALLER, RoomEvicted("n1", False))]
    assert waits.exited("n1") == []


def test_the_stop_finishes_once_when_no_room_is_left() -> None:
    waits = CloseWaits()
    waits.stopping = Stopping({"n1", "n2"})
    waits.closed("n1", None, saved=True)
    assert not waits.stopping.finish_now()
    waits.exited("n2")
    assert waits.stopping.closed == 1, "a room that exited on its own was not closed"
    assert waits.stopping.finish_now()
    assert not waits.stopping.finish_now()


# --- admissions as steps --------------------------------------------------------------


class FakeRegistry:
    def __init__(self, bound: dict[str, str] | None = None) -> None:
        self.bound = bound or {}

    def id_for(self, path: str) -> str | None:
        return next((nid for nid, p in self.bound.items() if p == path), None)

    def path_for(self, notebook_id: str) -> str | None:
        return self.bound.get(notebook_id)

    def load_untitled(self, notebook_id: str) -> bytes | None:
        return None


def test_an_open_of_a_registered_file_starts_its_room_and_joins_it(tmp_path: Path) -> None:
    notebook = tmp_path / "a.ipynb"
    notebook.write_text("{}")
    admitting = Admitting(RoomDirectory(), Settings())
    steps = admitting.open(
        CALLER, OpenNotebook(str(notebook), "me"), FakeRegistry({"n1": str(notebook)})
    )
    start = StartNewRoom("n1", RoomSource.FILE, str(notebook))
    assert steps == [NewRoom(start, RoomWish("me"), CALLER), Join("n1", CALLER, "me", False)]


def test_a_resident_room_is_joined_and_a_new_one_past_the_limit_refused() -> None:
    rooms = directory(("n1", A))
    rooms.get("n1").started_by = CALLER.conn
    admitting = Admitting(rooms, Settings(max_rooms_per_connection=1))
    assert admitting.attach(OTHER, AttachNotebook("n1", "you"), FakeRegistry()) == [
        Join("n1", OTHER, "you", False)
    ]
    refused = admitting.create(CALLER, CreateNotebook(runtime=None, peer_label="me"))
    assert refused == [Fail(CALLER, refused[0].error)]
    assert refused[0].error.code is ErrorCode.TOO_MANY_ROOMS
    with pytest.raises(NbstageError) as beyond:
        admitting.open(CALLER, OpenNotebook("/notes/missing.ipynb"), FakeRegistry())
    assert beyond.value.code is ErrorCode.NOT_FOUND, "a missing file, before any limit"


def test_a_keyed_create_is_made_once_and_its_repeats_join_or_share_its_refusal() -> None:
    admitting = Admitting(RoomDirectory(), Settings())
    first = CreateNotebook(runtime="python", peer_label="me", key="k")
    repeat = CreateNotebook(runtime="python", peer_label="again", key="k")
    read = Offload(admitting_token(CALLER, first), installed_kernelspecs)
    assert admitting.create(CALLER, first) == [read]
    assert admitting.create(OTHER, repeat) == [], "the repeat waits for the first"
    steps = admitting.create_with(CALLER, first, None, stopping=False)
    new_room, creator, waiter = steps
    assert isinstance(new_room, NewRoom)
    notebook_id = new_room.start.notebook_id
    assert creator == Join(notebook_id, CALLER, "me", True)
    assert waiter == Join(notebook_id, OTHER, "again", True)

    second = CreateNotebook(runtime=None, peer_label="me", key="k2")
    admitting.create_keys.begin("k2", (CALLER, second), set())
    admitting.create(OTHER, CreateNotebook(runtime=None, key="k2"))
    refused = admitting.create_with(CALLER, second, None, stopping=True)
    assert refused == [Fail(CALLER, refused[0].error), Fail(OTHER, refused[0].error)]
    assert refused[0].error.code is ErrorCode.SHUTTING_DOWN


def admitting_token(origin: Origin, req: CreateNotebook) -> object:
    from nbstage.protocol.daemon_actors.daemon_followups import KernelspecResolved

    return KernelspecResolved(origin, req)
