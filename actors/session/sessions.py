"""The session model as pure decisions: active and parked sessions, activations,
the intent epoch and drop info (SPEC §6).

``decide(state, event)`` returns the new state and the actions the
SessionManager actor must carry out. Nothing here talks to the daemon; joins
and leaves are actions, and their outcomes come back as events. That is what
lets the races of SPEC §14 be tested as plain tables.
"""

from __future__ import annotations

from dataclasses import field, replace
from enum import StrEnum
from typing import Any

from nbstage.protocol.common.frozen import frozen
from nbstage.protocol.daemon.notices import Notice, NoticeKind

MAX_PARKED = 8


class DropReason(StrEnum):
    """Why the slot is empty (SPEC §4). SWITCHED is part of the contract's vocabulary, but
    this model never produces it: a switch parks the old session and installs the new one
    in one step, and a failed switch leaves the old session in place."""

    SWITCHED = "switched to another notebook"
    DISCONNECTED = "disconnected"
    EVICTED = "notebook is no longer available"


FIRST_RECOVERY_DELAY = 0.2
MAX_RECOVERY_DELAY = 5.0


@frozen
class Target:
    """What a connect asks for: a file path, a notebook id, or a new notebook."""

    path: str | None = None
    notebook_id: str | None = None
    create: dict[str, Any] | None = None

    @property
    def shareable(self) -> bool:
        return self.create is None


@frozen
class Session:
    notebook_id: str
    path: str | None
    peer_id: str
    incarnation: tuple[Any, ...] | None = None

    def matches(self, target: Target) -> bool:
        return target.notebook_id == self.notebook_id or (
            target.path is not None and target.path == self.path
        )

    @property
    def best_target(self) -> str:
        """A saved path ahead of a UUID (SPEC §7.5)."""
        return self.path or self.notebook_id


@frozen
class Drop:
    reason: DropReason
    notebook_id: str | None
    path: str | None


@frozen
class Activation:
    activation_id: int
    target: Target
    waiters: tuple[str, ...]
    epoch: int
    background: bool = False


@frozen
class SessionState:
    active: Session | None = None
    parked: tuple[Session, ...] = ()
    """Least recently active first."""
    epoch: int = 0
    next_activation: int = 1
    pending: Activation | None = None
    drop: Drop | None = None
    stale: tuple[int, ...] = field(default=())
    """Activations that were superseded or cancelled; their joins are released on arrival."""
    incarnation: tuple[Any, ...] | None = None
    """The daemon incarnation new sessions are bound to."""
    recovery: Target | None = None
    """What to rejoin after the daemon came back, until it works or proves impossible."""
    recovery_delay: float = FIRST_RECOVERY_DELAY
    """How long the next failed rejoin waits before it is tried again (doubling)."""
    lost_kernel_of: str | None = None
    """The notebook whose session a new daemon incarnation ended: its rejoin gets a new
    kernel, and the agent is told so once."""


# --- events -------------------------------------------------------------------------------


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


def decide(state: SessionState, event: object) -> tuple[SessionState, list[Action]]:
    match event:
        case ConnectRequested():
            return _connect(state, event)
        case RejoinRequested(target):
            return _rejoin(state, target)
        case JoinSucceeded():
            return _joined(state, event)
        case JoinFailed():
            return _join_failed(state, event)
        case DisconnectRequested():
            return _disconnect(state, event)
        case IncarnationSeen():
            return _incarnation_seen(state, event)
        case RecoveryDue():
            return _recover(state)
        case SessionSaved(notebook_id, path):
            return _saved(state, notebook_id, path), []
    raise TypeError(f"unknown session event {event!r}")


def _connect(state: SessionState, event: ConnectRequested) -> tuple[SessionState, list[Action]]:
    pending = state.pending
    if pending is not None and pending.target == event.target and event.target.shareable:
        shared = replace(pending, waiters=(*pending.waiters, event.call_id))
        return replace(state, pending=shared), []
    actions: list[Action] = []
    if pending is not None:
        state = _supersede(state)
        actions += [Refuse(w, "superseded by a later connect") for w in pending.waiters]
    if state.active is not None and event.target.shareable and state.active.matches(event.target):
        result = _result(state.active, {}, resumed=False, switched_from=None)
        return state, [*actions, Answer(event.call_id, result)]
    activation = Activation(state.next_activation, event.target, (event.call_id,), state.epoch)
    state = replace(state, pending=activation, next_activation=state.next_activation + 1)
    return state, [*actions, Join(activation.activation_id, event.target)]


def _rejoin(state: SessionState, target: Target) -> tuple[SessionState, list[Action]]:
    if state.active is not None or state.pending is not None:
        return state, []
    activation = Activation(state.next_activation, target, (), state.epoch, background=True)
    state = replace(state, pending=activation, next_activation=state.next_activation + 1)
    return state, [Join(activation.activation_id, target)]


def _supersede(state: SessionState) -> SessionState:
    assert state.pending is not None
    return replace(state, pending=None, stale=(*state.stale, state.pending.activation_id))


def _joined(state: SessionState, event: JoinSucceeded) -> tuple[SessionState, list[Action]]:
    pending = state.pending
    new = event.session
    release: list[Action] = [Leave(new.notebook_id, new.peer_id)]
    if pending is None or pending.activation_id != event.activation_id:
        return replace(state, stale=_without(state.stale, event.activation_id)), release
    if pending.epoch != state.epoch or (pending.background and state.active is not None):
        return replace(state, pending=None), release
    return _install(
        replace(state, pending=None, recovery_delay=FIRST_RECOVERY_DELAY), pending, event
    )


def _install(
    state: SessionState, activation: Activation, event: JoinSucceeded
) -> tuple[SessionState, list[Action]]:
    new = event.session
    previous = state.active
    resumed_from = next((s for s in state.parked if s.notebook_id == new.notebook_id), None)
    parked = tuple(s for s in state.parked if s.notebook_id != new.notebook_id)
    actions: list[Action] = []
    switched_from = None
    if previous is not None:
        if previous.notebook_id == new.notebook_id:
            actions.append(Leave(previous.notebook_id, previous.peer_id))
        else:
            parked = (*parked, previous)
            switched_from = previous.notebook_id
    if resumed_from is not None:
        actions.append(Leave(resumed_from.notebook_id, resumed_from.peer_id))
    while len(parked) > MAX_PARKED:
        evicted, parked = parked[0], parked[1:]
        actions.append(Leave(evicted.notebook_id, evicted.peer_id))
    if activation.background and state.lost_kernel_of == new.notebook_id:
        actions.append(TellNextResult(kernel_lost_line(new)))
    state = replace(state, active=new, parked=parked, drop=None, recovery=None, lost_kernel_of=None)
    result = _result(
        new, event.details, resumed=resumed_from is not None, switched_from=switched_from
    )
    actions += [Answer(w, result) for w in activation.waiters]
    return state, actions


def kernel_lost_line(session: Session) -> Notice:
    return Notice(
        NoticeKind.KERNEL_RENEWED,
        f"The daemon restarted, so {session.path or session.notebook_id} was reopened with "
        "a new kernel: variables from before are gone; run the cells you need again.",
    )


def _result(
    session: Session, details: dict[str, Any], resumed: bool, switched_from: str | None
) -> dict[str, Any]:
    result = {
        "notebook_id": session.notebook_id,
        "path": session.path,
        "cell_count": details.get("cell_count"),
        "kernel_status": details.get("kernel_status"),
        "ephemeral": details.get("ephemeral"),
        "runtime": details.get("runtime"),
        "resumed": resumed,
    }
    if switched_from is not None:
        result["switched_from"] = switched_from
    for optional in ("kernel_refused", "environment"):
        if details.get(optional):
            result[optional] = details[optional]
    return result


def _join_failed(state: SessionState, event: JoinFailed) -> tuple[SessionState, list[Action]]:
    pending = state.pending
    if pending is None or pending.activation_id != event.activation_id:
        return replace(state, stale=_without(state.stale, event.activation_id)), []
    state = replace(state, pending=None)
    if pending.background:
        if not event.unavailable:
            slower = min(MAX_RECOVERY_DELAY, state.recovery_delay * 2)
            return replace(state, recovery_delay=slower), [RetryRecoveryLater(state.recovery_delay)]
        target = pending.target
        drop = Drop(DropReason.EVICTED, target.notebook_id, target.path)
        return replace(state, recovery=None, drop=drop), []
    return state, [Refuse(w, event.message) for w in pending.waiters]


def _disconnect(
    state: SessionState, event: DisconnectRequested
) -> tuple[SessionState, list[Action]]:
    actions: list[Action] = []
    rejoin_before = state
    state = replace(state, epoch=state.epoch + 1)
    if state.pending is not None:
        actions += [Refuse(w, "cancelled by disconnect_notebook") for w in state.pending.waiters]
        state = _supersede(state)
    rejoin = _rejoin_target(rejoin_before)
    state = replace(state, recovery=None)
    if (
        state.active is None
        and rejoin is not None
        and event.notebook_id in (None, rejoin.notebook_id)
    ):
        left = rejoin.notebook_id or rejoin.path
        drop = Drop(DropReason.DISCONNECTED, rejoin.notebook_id, rejoin.path)
        return replace(state, drop=drop), [*actions, Answer(event.call_id, {"disconnected": left})]
    target_id = event.notebook_id or (state.active.notebook_id if state.active else None)
    if state.active is not None and state.active.notebook_id == target_id:
        gone = state.active
        drop = Drop(DropReason.DISCONNECTED, gone.notebook_id, gone.path)
        state = replace(state, active=None, drop=drop)
        actions.append(Leave(gone.notebook_id, gone.peer_id))
        return state, [*actions, Answer(event.call_id, {"disconnected": gone.notebook_id})]
    parked = next((s for s in state.parked if s.notebook_id == target_id), None)
    if parked is None:
        message = (
            "No active notebook session to disconnect."
            if target_id is None
            else f"Notebook {target_id} is not connected in this session."
        )
        return state, [*actions, Refuse(event.call_id, message)]
    state = replace(state, parked=tuple(s for s in state.parked if s is not parked))
    actions.append(Leave(parked.notebook_id, parked.peer_id))
    return state, [*actions, Answer(event.call_id, {"disconnected": parked.notebook_id})]


def _saved(state: SessionState, notebook_id: str, path: str) -> SessionState:
    def moved(session: Session) -> Session:
        return replace(session, path=path) if session.notebook_id == notebook_id else session

    active = moved(state.active) if state.active is not None else None
    return replace(state, active=active, parked=tuple(moved(p) for p in state.parked))


def _rejoin_target(state: SessionState) -> Target | None:
    """What a background rejoin is (or will be) trying to reach, if one is under way."""
    if state.pending is not None and state.pending.background:
        return state.pending.target
    return state.recovery


def _incarnation_seen(
    state: SessionState, event: IncarnationSeen
) -> tuple[SessionState, list[Action]]:
    current = event.incarnation
    if state.incarnation is None:
        state = _adopt(state, current)
    recovery = state.recovery or event.handoff_target
    active = state.active
    lost_kernel_of = state.lost_kernel_of
    if active is not None and active.incarnation != current:
        recovery = event.handoff_target or _target_of(active)
        lost_kernel_of = active.notebook_id
        active = None
    parked = tuple(s for s in state.parked if s.incarnation == current)
    state = replace(
        state,
        incarnation=current,
        active=active,
        parked=parked,
        recovery=recovery,
        lost_kernel_of=lost_kernel_of,
    )
    if state.pending is not None and state.pending.background:
        state = _supersede(state)
    return _recover(state)


def _adopt(state: SessionState, incarnation: tuple[Any, ...]) -> SessionState:
    """Handles joined before the first report belong to the daemon that report describes."""

    def bound(session: Session) -> Session:
        return replace(session, incarnation=session.incarnation or incarnation)

    active = bound(state.active) if state.active is not None else None
    return replace(state, active=active, parked=tuple(bound(p) for p in state.parked))


def _target_of(session: Session) -> Target:
    return Target(path=session.path, notebook_id=session.notebook_id)


def _recover(state: SessionState) -> tuple[SessionState, list[Action]]:
    if state.recovery is None:
        return state, []
    return _rejoin(state, state.recovery)


def _without(items: tuple[int, ...], item: int) -> tuple[int, ...]:
    return tuple(i for i in items if i != item)


def no_session_message(drop: Drop | None, rejoining: bool = False) -> str:
    """The exact no-session error of SPEC §4."""
    if rejoining:
        return (
            "No active notebook session yet: nbstage is rejoining your notebook after a "
            "daemon restart. Try again in a moment."
        )
    if drop is None:
        return "No active notebook session. Call connect_notebook or create_notebook first."
    how = f'notebook_id="{drop.notebook_id}"' if drop.notebook_id else f'path="{drop.path}"'
    message = (
        f"No active notebook session ({drop.reason.value}). Reconnect with: connect_notebook({how})"
    )
    return message + (f" — file: {drop.path}" if drop.path else "")
