"""The session model as pure decisions: active and parked sessions, activations,
the intent epoch and drop info (SPEC §6).

``decide(state, event)`` returns the new state (``session_model.py``) and the actions
(``session_events.py``) the SessionManager actor must carry out. Nothing here talks to
the daemon; joins and leaves are actions, and their outcomes come back as events. That
is what lets the races of SPEC §14 be tested as plain tables.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from nbstage.actors.session import session_events as ev
from nbstage.actors.session.session_events import (
    Action,
    Answer,
    Join,
    Leave,
    Refuse,
    RetryRecoveryLater,
    TellNextResult,
)
from nbstage.actors.session.session_model import (
    FIRST_RECOVERY_DELAY,
    MAX_PARKED,
    MAX_RECOVERY_DELAY,
    Activation,
    Drop,
    DropReason,
    Session,
    SessionState,
    Target,
)
from nbstage.protocol.daemon.notices import Notice, NoticeKind


def decide(state: SessionState, event: object) -> tuple[SessionState, list[Action]]:
    match event:
        case ev.ConnectRequested():
            return _connect(state, event)
        case ev.RejoinRequested(target):
            return _rejoin(state, target)
        case ev.JoinSucceeded():
            return _joined(state, event)
        case ev.JoinFailed():
            return _join_failed(state, event)
        case ev.DisconnectRequested():
            return _disconnect(state, event)
        case ev.IncarnationSeen():
            return _incarnation_seen(state, event)
        case ev.RecoveryDue():
            return _recover(state)
        case ev.SessionSaved(notebook_id, path):
            return _saved(state, notebook_id, path), []
    raise TypeError(f"unknown session event {event!r}")


def _connect(state: SessionState, event: ev.ConnectRequested) -> tuple[SessionState, list[Action]]:
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


def _joined(state: SessionState, event: ev.JoinSucceeded) -> tuple[SessionState, list[Action]]:
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
    state: SessionState, activation: Activation, event: ev.JoinSucceeded
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


def _join_failed(state: SessionState, event: ev.JoinFailed) -> tuple[SessionState, list[Action]]:
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
    state: SessionState, event: ev.DisconnectRequested
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
    state: SessionState, event: ev.IncarnationSeen
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


def rejoining(state: SessionState) -> bool:
    """Whether session calls wait for a rejoin: the first after a start, or one under way
    in the background."""
    pending = state.pending
    first_rejoin = state.recovery is not None and state.incarnation is None
    return first_rejoin or (pending is not None and pending.background)


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
