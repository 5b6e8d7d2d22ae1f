"""What a Room leaves for later and gets back in its own mailbox.

Two kinds, neither seen by any other actor: the payloads of the timers a Room arms
(``wakeupAfter``, back as a ``WakeupMessage``), and the tokens of the blocking work
it hands to its edge (``NbActor.offload``, back as ``BlockingWorkDone.token``).
thespian timers cannot be cancelled, so each timer payload says which arming it
belongs to and the Room drops the ones that are stale.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from nbstage.protocol.edge import Origin


@dataclass(frozen=True, slots=True)
class AutosaveDue:
    """Autosave timer payload."""

    generation: int
    """The Room's autosave generation when armed; a later edit re-arms and makes this stale."""


@dataclass(frozen=True, slots=True)
class KeepAliveExpired:
    """Keep-alive timer payload; also accepted as a message so tests can fire it in order."""

    generation: int
    """The lifetime generation it was armed in; a join since then makes it stale."""


@dataclass(frozen=True, slots=True)
class WaitExpired:
    """Timer payload: a caller waiting on an execution gets its report as it stands."""

    execution_id: str
    origin: Origin
    """The waiting request; it is answered unless the execution finished first."""


class SavePurpose(StrEnum):
    """Why a save was started, which says what to do once it is done."""

    AUTOSAVE = "autosave"
    REQUEST = "request"
    NEW_PATH = "new_path"
    CLOSE = "close"
    FIRST = "first"


@dataclass(frozen=True, slots=True)
class SaveFinished:
    """Offload token of one save: the snapshot of ``revision`` went to ``path``."""

    path: str | None
    """The notebook file, or None for the registry's untitled row."""
    revision: int
    purpose: SavePurpose
    origin: Origin | None
    """The request to answer, for a save someone asked for."""


@dataclass(frozen=True, slots=True)
class ExecutionRecorded:
    """Offload token: an execution's record was written to executions/."""

    execution_id: str
