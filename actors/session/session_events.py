"""What the session model takes in (a connect, a join's outcome, a new daemon
incarnation, …) and the actions it hands the SessionManager to carry out."""

from __future__ import annotations

from typing import Any

from nbstage.actors.session.session_model import Session, Target
from nbstage.protocol.common.frozen import frozen
from nbstage.protocol.daemon.notices import Notice


@frozen
class ConnectRequested:
    call_id: str
    target: Target


@frozen
class RejoinRequested:
    """A background rejoin (watch loop or restart target); never beats an installed session."""

    target: Target


@frozen
class JoinSucceeded:
    activation_id: int
    session: Session
    details: dict[str, Any]


@frozen
class JoinFailed:
    activation_id: int
    message: str
    unavailable: bool = False


@frozen
class DisconnectRequested:
    call_id: str
    notebook_id: str | None


@frozen
class IncarnationSeen:
    """The watch loop saw this daemon incarnation alive.

    Handles bound to another incarnation are removed; the active one's best target
    (or the supervisor's handoff target, given the first time) is recovered.
    Parked handles are dropped, not recovered.
    """

    incarnation: tuple[Any, ...]
    handoff_target: Target | None = None


@frozen
class SessionSaved:
    """A notebook of this session was saved to ``path``: its best target is now the file."""

    notebook_id: str
    path: str


@frozen
class RecoveryDue:
    """Time to try the recovery target (again)."""


# --- actions ------------------------------------------------------------------------------


@frozen
class Join:
    activation_id: int
    target: Target


@frozen
class Leave:
    notebook_id: str
    peer_id: str


@frozen
class Answer:
    call_id: str
    result: dict[str, Any]


@frozen
class Refuse:
    call_id: str
    message: str


@frozen
class TellNextResult:
    """A notice for the next tool result, whichever tool it is."""

    notice: Notice


@frozen
class RetryRecoveryLater:
    after: float
    """Seconds: 0.2 after the first failed rejoin, doubling to 5 while they keep failing."""


Action = Join | Leave | Answer | Refuse | RetryRecoveryLater | TellNextResult
