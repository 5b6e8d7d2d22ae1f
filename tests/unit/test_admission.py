"""Admission decisions for open and attach, from facts alone (SPEC §5 Rooms)."""

from __future__ import annotations

import pytest

from nbstage.actors.daemon.admission import (
    AttachFacts,
    JoinResident,
    Refuse,
    StartNewRoom,
    admit_attach,
    admit_open,
    refuse_beyond_limits,
)
from nbstage.protocol.common.errors import ErrorCode
from nbstage.protocol.daemon_actors.rooms import RoomSource

PATH = "/home/u/work/analysis.ipynb"
OTHER_PATH = "/home/u/work/other.ipynb"
RESIDENT_ID = "11111111-1111-4111-8111-111111111111"
REGISTERED_ID = "22222222-2222-4222-8222-222222222222"
FRESH_ID = "33333333-3333-4333-8333-333333333333"
ASKED_ID = "44444444-4444-4444-8444-444444444444"

NOTHING_KNOWN = AttachFacts(bound_path=None, bound_file_exists=False, has_untitled=False)
BOUND_AND_PRESENT = AttachFacts(bound_path=PATH, bound_file_exists=True, has_untitled=False)
BOUND_BUT_MISSING = AttachFacts(bound_path=PATH, bound_file_exists=False, has_untitled=False)
UNTITLED_ONLY = AttachFacts(bound_path=None, bound_file_exists=False, has_untitled=True)


@pytest.mark.parametrize(
    ("resident_by_path", "file_exists", "registered_id", "expected"),
    [
        pytest.param(
            {PATH: RESIDENT_ID},
            True,
            None,
            JoinResident(RESIDENT_ID),
            id="a path that a resident room holds joins that room",
        ),
        pytest.param(
            {PATH: RESIDENT_ID},
            False,
            None,
            JoinResident(RESIDENT_ID),
            id="a resident room is joined even when its file has since been deleted",
        ),
        pytest.param(
            {PATH: RESIDENT_ID},
            True,
            REGISTERED_ID,
            JoinResident(RESIDENT_ID),
            id="the resident room wins over a registry binding for the same path",
        ),
        pytest.param(
            {},
            True,
            REGISTERED_ID,
            StartNewRoom(REGISTERED_ID, RoomSource.FILE, PATH),
            id="an existing file with a registry binding loads under the bound uuid",
        ),
        pytest.param(
            {},
            True,
            None,
            StartNewRoom(FRESH_ID, RoomSource.FILE, PATH, binding_pending=True),
            id="an existing file without a binding loads under a fresh uuid, to be bound",
        ),
        pytest.param(
            {OTHER_PATH: RESIDENT_ID},
            True,
            None,
            StartNewRoom(FRESH_ID, RoomSource.FILE, PATH, binding_pending=True),
            id="a room resident for another path is not joined",
        ),
        pytest.param(
            {},
            False,
            None,
            ErrorCode.NOT_FOUND,
            id="a missing file without a room is refused as not found",
        ),
        pytest.param(
            {},
            False,
            REGISTERED_ID,
            ErrorCode.NOT_FOUND,
            id="a registry binding does not make a missing file openable",
        ),
        pytest.param(
            {OTHER_PATH: RESIDENT_ID},
            False,
            None,
            ErrorCode.NOT_FOUND,
            id="a missing file is refused even while other rooms are resident",
        ),
    ],
)
def test_admit_open(resident_by_path, file_exists, registered_id, expected) -> None:
    admission = admit_open(resident_by_path, PATH, file_exists, registered_id, FRESH_ID)
    if isinstance(expected, ErrorCode):
        assert isinstance(admission, Refuse)
        assert admission.code is expected
        assert PATH in admission.message
    else:
        assert admission == expected


@pytest.mark.parametrize(
    ("resident_ids", "facts", "expected"),
    [
        pytest.param(
            {ASKED_ID},
            NOTHING_KNOWN,
            JoinResident(ASKED_ID),
            id="a resident room is joined even when the registry knows nothing of it",
        ),
        pytest.param(
            {ASKED_ID: object()},
            NOTHING_KNOWN,
            JoinResident(ASKED_ID),
            id="resident rooms may be given as a mapping keyed by uuid",
        ),
        pytest.param(
            {ASKED_ID},
            BOUND_AND_PRESENT,
            JoinResident(ASKED_ID),
            id="a resident room is joined rather than loaded again from its file",
        ),
        pytest.param(
            set(),
            BOUND_AND_PRESENT,
            StartNewRoom(ASKED_ID, RoomSource.FILE, PATH),
            id="a binding whose file exists loads that file under the asked uuid",
        ),
        pytest.param(
            {RESIDENT_ID},
            BOUND_AND_PRESENT,
            StartNewRoom(ASKED_ID, RoomSource.FILE, PATH),
            id="another resident room does not stand in for the asked uuid",
        ),
        pytest.param(
            set(),
            AttachFacts(bound_path=PATH, bound_file_exists=True, has_untitled=True),
            StartNewRoom(ASKED_ID, RoomSource.FILE, PATH),
            id="an existing bound file wins over a stale untitled copy",
        ),
        pytest.param(
            set(),
            UNTITLED_ONLY,
            StartNewRoom(ASKED_ID, RoomSource.UNTITLED, None),
            id="a persisted untitled notebook loads from the registry",
        ),
        pytest.param(
            set(),
            AttachFacts(bound_path=PATH, bound_file_exists=False, has_untitled=True),
            StartNewRoom(ASKED_ID, RoomSource.UNTITLED, None),
            id="a binding whose file is gone falls back to the untitled copy",
        ),
        pytest.param(
            set(),
            AttachFacts(bound_path=None, bound_file_exists=True, has_untitled=False),
            ErrorCode.NOTEBOOK_UNAVAILABLE,
            id="a file fact without a bound path never loads anything",
        ),
        pytest.param(
            set(),
            BOUND_BUT_MISSING,
            ErrorCode.NOTEBOOK_UNAVAILABLE,
            id="a binding whose file is gone and no untitled copy is refused",
        ),
        pytest.param(
            set(),
            NOTHING_KNOWN,
            ErrorCode.NOTEBOOK_UNAVAILABLE,
            id="an unknown uuid is refused as unavailable",
        ),
        pytest.param(
            {RESIDENT_ID: object()},
            NOTHING_KNOWN,
            ErrorCode.NOTEBOOK_UNAVAILABLE,
            id="an unknown uuid is refused while other rooms are resident",
        ),
    ],
)
def test_admit_attach(resident_ids, facts, expected) -> None:
    admission = admit_attach(resident_ids, ASKED_ID, facts)
    if isinstance(expected, ErrorCode):
        assert isinstance(admission, Refuse)
        assert admission.code is expected
        assert ASKED_ID in admission.message
    else:
        assert admission == expected


def test_a_refused_attach_says_what_to_do_next() -> None:
    admission = admit_attach(set(), ASKED_ID, NOTHING_KNOWN)
    assert isinstance(admission, Refuse)
    assert "Create a new one or open a path" in admission.message


def test_a_refused_open_points_at_creating_and_saving() -> None:
    admission = admit_open({}, PATH, False, None, FRESH_ID)
    assert isinstance(admission, Refuse)
    assert "create_notebook" in admission.message
    assert "save_notebook" in admission.message


# --- limits on resident rooms ------------------------------------------------------------


@pytest.mark.parametrize(
    ("resident", "mine", "phrase"),
    [
        pytest.param(0, 0, None, id="an empty daemon admits"),
        pytest.param(2, 1, None, id="below both limits admits"),
        pytest.param(4, 0, "(max_rooms)", id="the daemon is full"),
        pytest.param(5, 0, "(max_rooms)", id="beyond the daemon's limit"),
        pytest.param(3, 2, "(max_rooms_per_connection)", id="this client is at its limit"),
        pytest.param(4, 2, "(max_rooms)", id="both: the daemon's limit is named"),
    ],
)
def test_refuse_beyond_limits(resident: int, mine: int, phrase: str | None) -> None:
    refusal = refuse_beyond_limits(resident, mine, max_rooms=4, per_connection=2)
    if phrase is None:
        assert refusal is None
        return
    assert refusal.code is ErrorCode.TOO_MANY_ROOMS
    assert phrase in refusal.message
    assert "nbstage admin evict" in refusal.message
