"""A freeze of the Room's shared document under way on a worker (ADR 0004, "Freezing and
thawing off the Room's thread"), and what becomes of it when it comes back.

The Room lets its live document go to the worker (``SharedDoc.detach``) and touches it no
more until the ``SharedDocFrozen`` of that freeze's generation comes back. What happens
meanwhile decides what the result is worth (``outcome``, pure): a person who asked for the
document takes the live one back and the frozen form is dropped; a room that closed drops
both; an edit of the Document needs nothing, since a thaw compares every cell's checksum
with the Document of its own time. Plain, no actors.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from nbstage.actors.daemon.room.shared_build import ToFreeze
from nbstage.actors.daemon.room.shared_doc import SharedDoc
from nbstage.protocol.daemon.lab import JoinSharedDoc, PassSharedDocMessage
from nbstage.protocol.daemon_actors.edge import Origin


class FreezeOutcome(StrEnum):
    STALE = "stale"
    """Not the freeze under way (a replayed or an earlier one): nothing changes."""
    CLOSED = "closed"
    """The room has no Document any more: the document and the frozen form are dropped,
    the people's requests held for it refused."""
    TAKEN_BACK = "taken back"
    """Someone asked for the document meanwhile, or the worker failed: the live document,
    untouched by the worker's read, is watched again and the frozen form dropped."""
    KEPT = "kept"
    """Nobody asked: the frozen form is kept and the live document let go."""


@dataclass
class Freezing:
    """A freeze under way: its generation, the document the worker reads, and the
    people's requests held, in the order they came, until it is back."""

    generation: int
    shared: SharedDoc
    work: ToFreeze
    """Kept until the result is taken: the cells it names keep their outputs lists
    alive, so a mirror after taking the document back compares identities no other list
    has taken."""
    held: list[tuple[Origin, JoinSharedDoc | PassSharedDocMessage]] = field(default_factory=list)


def outcome(
    under_way: int | None, generation: int, room_open: bool, held: bool, failed: bool
) -> FreezeOutcome:
    """What the freeze of ``generation`` comes to, the one of ``under_way`` being in flight
    (None: none is)."""
    if under_way is None or generation != under_way:
        return FreezeOutcome.STALE
    if not room_open:
        return FreezeOutcome.CLOSED
    if held or failed:
        return FreezeOutcome.TAKEN_BACK
    return FreezeOutcome.KEPT
