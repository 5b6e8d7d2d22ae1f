"""Admission: which room answers an open or attach, decided from facts alone.

The Daemon actor gathers the facts (resident rooms, registry rows, whether a
file exists) and calls these functions in one mailbox step, so checking that a
notebook is available and starting its load cannot be split by another request.
"""

from __future__ import annotations

from collections.abc import Mapping

from nbstage.protocol.common.errors import ErrorCode
from nbstage.protocol.common.frozen import frozen
from nbstage.protocol.daemon_actors.rooms import RoomSource


@frozen
class JoinResident:
    notebook_id: str


@frozen
class StartNewRoom:
    notebook_id: str
    source: RoomSource
    path: str | None
    binding_pending: bool = False
    """The registry has no binding for ``path`` yet: the new room answers nobody until
    the Daemon has recorded it."""


@frozen
class Refuse:
    code: ErrorCode
    message: str


Admission = JoinResident | StartNewRoom | Refuse


@frozen
class AttachFacts:
    """What the registry and the file system say about a UUID."""

    bound_path: str | None
    bound_file_exists: bool
    has_untitled: bool


def admit_open(
    resident_by_path: Mapping[str, str],
    path: str,
    file_exists: bool,
    registered_id: str | None,
    fresh_id: str,
) -> Admission:
    """Open by canonical path: one room per path, reusing the registry's UUID for it."""
    if path in resident_by_path:
        return JoinResident(resident_by_path[path])
    if not file_exists:
        return Refuse(
            ErrorCode.NOT_FOUND,
            f"No notebook file at {path}. Use create_notebook, then save_notebook with this path.",
        )
    if registered_id is not None:
        return StartNewRoom(registered_id, RoomSource.FILE, path)
    return StartNewRoom(fresh_id, RoomSource.FILE, path, binding_pending=True)


def admit_attach(
    resident_ids: set[str] | Mapping[str, object], notebook_id: str, facts: AttachFacts
) -> Admission:
    """Attach by UUID is attach-only: it never makes an empty document under a known id."""
    if notebook_id in resident_ids:
        return JoinResident(notebook_id)
    if facts.bound_path is not None and facts.bound_file_exists:
        return StartNewRoom(notebook_id, RoomSource.FILE, facts.bound_path)
    if facts.has_untitled:
        return StartNewRoom(notebook_id, RoomSource.UNTITLED, None)
    return Refuse(
        ErrorCode.NOTEBOOK_UNAVAILABLE,
        f"Notebook {notebook_id} is not available: it is not open, has no saved file and no "
        "persisted copy (ephemeral notebooks end with the daemon). "
        "Create a new one or open a path.",
    )


def refuse_beyond_limits(
    resident: int, started_by_connection: int, max_rooms: int, per_connection: int
) -> Refuse | None:
    """A new room is refused once the daemon holds ``max_rooms``, or once this
    connection has started ``per_connection`` that are still resident."""
    if resident >= max_rooms:
        held = f"The daemon already holds {resident} notebooks, its limit (max_rooms)."
    elif started_by_connection >= per_connection:
        held = (
            f"This client already opened {started_by_connection} notebooks, its limit "
            "(max_rooms_per_connection)."
        )
    else:
        return None
    return Refuse(
        ErrorCode.TOO_MANY_ROOMS,
        f"{held} Disconnect from notebooks you no longer need, or ask the operator to "
        "free some with `nbstage admin evict ID`.",
    )
