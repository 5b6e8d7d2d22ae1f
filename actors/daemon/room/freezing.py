"""A freeze of the Room's shared document under way on a worker (ADR 0004, "Freezing and
thawing off the Room's thread"), when one starts, and what becomes of it when it comes back.

When: the idle timer (``idle_step``, pure) freezes a document nobody has sent a sync
message to and the Room has had nothing to mirror into for ``shared_doc_idle_secs``,
watched or not (ADR 0004, item 19); it runs as one chain a live document, armed again
for what is left of the period while there is activity (thespian's timers cannot be
cancelled). A watched document is not frozen while a cell runs or a mirror is due.

The Room lets its live document go to the worker (``SharedDoc.detach``) and touches it no
more until the ``SharedDocFrozen`` of that freeze's generation comes back. What happens
meanwhile decides what the result is worth (``outcome``, pure): a person who asked for the
document, or a change the people watching must see, takes the live one back and the
frozen form is dropped; a room that closed drops both; with nobody watching, an edit of
the Document needs nothing, since a thaw compares every cell's checksum with the
Document of its own time. Plain, no actors.
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
    wanted: bool = False
    """The Room changed what the people still watching see: they must have it."""


def outcome(
    under_way: int | None,
    generation: int,
    room_open: bool,
    held: bool,
    failed: bool,
    wanted: bool = False,
) -> FreezeOutcome:
    """What the freeze of ``generation`` comes to, the one of ``under_way`` being in flight
    (None: none is). ``held``: a person's join or sync message waits for the document;
    ``wanted``: a change is to be mirrored to the people watching."""
    if under_way is None or generation != under_way:
        return FreezeOutcome.STALE
    if not room_open:
        return FreezeOutcome.CLOSED
    if held or failed or wanted:
        return FreezeOutcome.TAKEN_BACK
    return FreezeOutcome.KEPT


class IdleStep(StrEnum):
    STALE = "stale"
    """A timer of another generation, or no live document: nothing, and no new timer."""
    WAIT = "wait"
    """Not idle long enough: the timer is armed again for ``after`` seconds."""
    FREEZE = "freeze"


@dataclass(frozen=True)
class IdleDecision:
    step: IdleStep
    after: float = 0.0


def idle_step(
    current: int,
    generation: int,
    live: bool,
    quiet_for: float,
    idle_secs: float,
    watched: bool,
    busy: bool,
) -> IdleDecision:
    """What the idle timer of ``generation`` does, ``current`` being the sharing part's.
    ``quiet_for``: seconds since the last sync message of a person, join, leave or
    mirror; ``busy``: a cell runs or a mirror is due (a watched document waits a period
    more: a running cell's end is a change the people will see at once)."""
    if generation != current or not live:
        return IdleDecision(IdleStep.STALE)
    if quiet_for < idle_secs:
        return IdleDecision(IdleStep.WAIT, idle_secs - quiet_for)
    if watched and busy:
        return IdleDecision(IdleStep.WAIT, idle_secs)
    return IdleDecision(IdleStep.FREEZE)
