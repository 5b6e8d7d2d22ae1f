"""What the SessionManager does with the session model's decisions (sessions.py decides):
the joins and leaves sent to the daemon, the session calls answered or refused, the
supervisor told of the active notebook and the restart target, the watch loop told of
who this client is, and the calls deferred for a rejoin let through once it settles.
These act through the SessionManager, which owns the session state."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from nbstage.actors.session import session_events as events
from nbstage.actors.session import sessions, stale_reads
from nbstage.actors.session.call_book import NEXT_RESULT
from nbstage.actors.session.daemon_link import DaemonFailure
from nbstage.actors.session.session_calls import (
    already_connected,
    join_outcome,
    join_request,
    session_answer,
)
from nbstage.actors.session.session_model import Target
from nbstage.protocol.daemon.replies import NotebookJoined, RoomDescribed
from nbstage.protocol.daemon.requests import DescribeRoom, LeaveRoom
from nbstage.protocol.mcp.tool_results import tool_error
from nbstage.protocol.session.session_followups import RetryRecovery
from nbstage.protocol.session.supervision import ActiveSessionChanged
from nbstage.protocol.session.watching import ClientInfoChanged


def decide(manager: Any, event: object) -> None:
    before = (manager.state.active, manager.state.parked)
    manager.state, actions = sessions.decide(manager.state, event)
    if (manager.state.active, manager.state.parked) != before:
        held = {s.notebook_id: s.path for s in (manager.state.active, *manager.state.parked) if s}
        manager.snapshot = stale_reads.keep_only(manager.snapshot, held)
    if (manager.state.active, manager.state.parked) != before and manager.watch is not None:
        manager.send(manager.watch, ClientInfoChanged(manager._client_info()))
        manager.resources.refresh()
    if manager.state.active != before[0]:
        active = manager.state.active
        manager.send(
            manager.supervisor,
            ActiveSessionChanged(
                active.notebook_id if active else None, active.path if active else None
            ),
        )
    for action in actions:
        match action:
            case events.Join(activation_id, target):
                join(manager, activation_id, target)
            case events.Leave(notebook_id, peer_id):
                manager.daemon.send(LeaveRoom(notebook_id, peer_id), lambda _answer: None)
            case events.Answer(call_id, result):
                answer_session_call(manager, call_id, result)
            case events.Refuse(call_id, message):
                manager._finish(call_id, tool_error(message))
            case events.TellNextResult(notice):
                manager.book.next_result.append(notice)
            case events.RetryRecoveryLater(after):
                manager.wakeupAfter(timedelta(seconds=after), payload=RetryRecovery())
    if manager.held.deferred and (
        manager.state.active is not None or not sessions.rejoining(manager.state)
    ):
        for msg, spec, args in manager.held.release_deferred():
            manager._session_tool(msg, spec, args)


def join(manager: Any, activation_id: int, target: Target) -> None:
    request = join_request(target, manager.config.label)
    manager.daemon.send(request, lambda reply: joined(manager, activation_id, reply), NEXT_RESULT)


def joined(manager: Any, activation_id: int, reply: NotebookJoined | DaemonFailure) -> None:
    decide(manager, join_outcome(activation_id, reply, manager.state.incarnation))


def answer_session_call(manager: Any, call_id: str, result: dict[str, Any]) -> None:
    runtime = manager.book.requested_runtimes.pop(call_id, None)
    answer = session_answer(manager.book.names.get(call_id), result, runtime)
    if answer is None:
        answer_already_connected(manager, call_id, result)
        return
    manager._target_changed(answer.change, answer.notebook_id, answer.path)
    manager._finish(call_id, answer.result)


def answer_already_connected(manager: Any, call_id: str, result: dict[str, Any]) -> None:
    def answer(room: RoomDescribed | DaemonFailure) -> None:
        if isinstance(room, DaemonFailure):
            manager._finish(call_id, tool_error(room.message, {"code": room.code}))
            return
        connected = already_connected(result, room)
        manager._target_changed(connected.change, connected.notebook_id, connected.path)
        manager._finish(call_id, connected.result)

    manager.daemon.send(DescribeRoom(result["notebook_id"]), answer)
