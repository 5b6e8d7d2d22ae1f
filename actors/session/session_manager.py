"""The SessionManager actor ("the child"): one MCP client's notebook sessions.

It owns the session state (decided by sessions.py), runs tool handlers against
the daemon over its own DaemonLink, and answers the ProxySupervisor with
finished tool results. Its parts: the requests waiting on the daemon, keyed by
request id, never a blocked mailbox (daemon_requests.py); the open calls and the
notices their results carry (call_book.py); the calls held back until the link or a
rejoin can serve them (held_calls.py).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import timedelta
from typing import Any

from thespian.actors import ActorAddress, ActorExitRequest, ChildActorExited

from nbstage.actors.common.base import Key, NbActor, finished, wakeup
from nbstage.actors.session import result_delivery as delivery
from nbstage.actors.session import session_events as events
from nbstage.actors.session import sessions, stale_reads
from nbstage.actors.session.call_book import NEXT_RESULT, CallBook
from nbstage.actors.session.daemon_link import (
    DaemonFailure,
    DaemonFrameArrived,
    DaemonLinkClosed,
    DaemonLinkRefused,
)
from nbstage.actors.session.daemon_requests import UNREACHABLE, DaemonRequests
from nbstage.actors.session.held_calls import HeldCalls
from nbstage.actors.session.resource_driver import ResourceDriver
from nbstage.actors.session.session_calls import (
    already_connected,
    join_outcome,
    join_request,
    session_answer,
    session_event,
    target_of,
    unreachable_now,
)
from nbstage.actors.session.session_model import SessionState, Target
from nbstage.actors.session.tool_handlers import (
    SESSION_TOOLS,
    ToolContext,
    list_active_notebooks,
)
from nbstage.actors.session.tool_runs import Ask, Done, step, tool_context
from nbstage.actors.session.watch_loop import WatchLoop
from nbstage.protocol.common.errors import ErrorCode, NbstageError
from nbstage.protocol.common.offload import BlockingWorkDone
from nbstage.protocol.daemon.notices import with_notices
from nbstage.protocol.daemon.replies import (
    DaemonIdentity,
    NotebookJoined,
    NotebookSaved,
    RoomDescribed,
)
from nbstage.protocol.daemon.requests import (
    DescribeRoom,
    GetIdentity,
    LeaveRoom,
)
from nbstage.protocol.mcp import mcp_apps, tools
from nbstage.protocol.mcp.tool_names import ToolName
from nbstage.protocol.mcp.tool_results import tool_error
from nbstage.protocol.session.lab_wanted import BrowserWanted, LabStarted, LabWanted
from nbstage.protocol.session.resource_messages import ResourceRequested
from nbstage.protocol.session.session_followups import (
    DeferredExpired,
    FiguresWritten,
    FirstLinkOverdue,
    RetryLink,
    RetryRecovery,
)
from nbstage.protocol.session.supervision import (
    ActiveSessionChanged,
    HandoffRequested,
    RestartTargetChanged,
    SessionConfig,
    SessionManagerReady,
    StopSessionManager,
    TargetChange,
    ToolCallCancelled,
    ToolCallProgressed,
    ToolCallRequested,
)
from nbstage.protocol.session.watching import (
    ClientInfoChanged,
    DaemonIncarnationSeen,
    DaemonVersionChanged,
    DaemonWentAway,
    StartWatch,
)


def lab_work(wanted: LabWanted | BrowserWanted) -> dict[str, Any]:
    """On a worker thread: the state dir's Lab edge, started if none runs, or the browser
    opened on a notebook's URL where a display allows it (ADR 0004)."""
    from nbstage.entrypoints.common.lab_browser import open_url
    from nbstage.entrypoints.common.lab_start import ensure_running

    if isinstance(wanted, BrowserWanted):
        return open_url(wanted.state_dir, wanted.url, os.environ)
    return ensure_running(wanted.state_dir)


log = logging.getLogger("nbstage.session")

LINK_RETRY = timedelta(milliseconds=200)
FIRST_LINK_RETRY = timedelta(milliseconds=20)
"""While a daemon this client autostarted comes up: its socket appears within a second,
and every 200 ms lost there is on the new user's first call."""
HEARTBEAT_ENV = "NBSTAGE_HEARTBEAT_SECS"

DEFERRAL_LIMIT = timedelta(seconds=15)
FIRST_LINK_LIMIT = timedelta(seconds=30)
"""How long calls wait for a daemon that is being started for this client."""


class SessionManager(NbActor):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.config: SessionConfig | None = None
        self.supervisor: ActorAddress | None = None
        self.daemon = DaemonRequests()
        self.state = SessionState()
        self.book = CallBook()
        self.watch: ActorAddress | None = None
        self.held = HeldCalls()
        self.snapshot = stale_reads.Snapshot()
        self.resources = ResourceDriver(self)

    def handlers(self) -> dict[Key, Callable[..., None]]:
        return {
            SessionConfig: self._configured,
            ChildActorExited: self._child_exited,
            DaemonIncarnationSeen: self._incarnation_reported,
            DaemonWentAway: self._daemon_went_away,
            DaemonVersionChanged: self._version_reported,
            DaemonLinkClosed: self._link_lost,
            DaemonLinkRefused: self._link_lost,
            DaemonFrameArrived: self._frame_arrived,
            ToolCallRequested: self._tool_call,
            ToolCallCancelled: self._call_cancelled,
            StopSessionManager: lambda msg, sender: self.daemon.close(),
            ActorExitRequest: self._exit,
            wakeup(RetryLink): self._retry_link,
            wakeup(RetryRecovery): lambda due: self._decide(events.RecoveryDue()),
            wakeup(FirstLinkOverdue): lambda due: self._first_link_settled(),
            wakeup(DeferredExpired): self._deferred_expired,
            finished(FiguresWritten): lambda d: self.carry(
                delivery.after_figures(d, self.supervisor)
            ),
            finished(LabStarted): self._lab_started,
            **self.resources.handlers(),
        }

    def _lab_started(self, done: BlockingWorkDone) -> None:
        token: LabStarted = done.token
        failure = DaemonFailure(ErrorCode.INTERNAL, f"JupyterLab did not start: {done.error}")
        self._run(token.call_id, token.handler, done.result if done.ok else failure)

    # --- start and the daemon link --------------------------------------------------------

    def _configured(self, msg: SessionConfig, sender: ActorAddress) -> None:
        self.config = msg
        self.supervisor = sender
        self.edge = sender
        if msg.autostart:
            self.held.awaiting_first_link = True
            self.wakeupAfter(FIRST_LINK_LIMIT, payload=FirstLinkOverdue())
        if msg.rejoin_target:
            # The restart target enters the session model at once, so a disconnect that
            # arrives before the daemon's first answer cancels it like any other rejoin.
            self.state = replace(self.state, recovery=target_of(msg.rejoin_target, msg.cwd))
        ready = SessionManagerReady(os.getpid(), msg.generation, tools.builtin_tool_list())
        self.send(sender, ready)
        self._connect()
        self._start_watch()

    def _start_watch(self) -> None:
        self.watch = self.createActor(WatchLoop)
        heartbeat = float(os.environ.get(HEARTBEAT_ENV) or 1.0)
        start = StartWatch(self.config.socket_path, heartbeat, self._client_info(), self.edge)
        self.send(self.watch, start)

    def _child_exited(self, msg: ChildActorExited, sender: ActorAddress) -> None:
        if self.watch is not None and msg.childAddress == self.watch:
            log.warning("the watch loop exited; starting a new one")
            self._start_watch()

    def _client_info(self) -> dict[str, Any]:
        cfg = self.config
        active = self.state.active
        return {
            "label": cfg.label,
            "operator_id": cfg.operator_id,
            "supervisor_pid": cfg.supervisor_pid,
            "session_manager_pid": os.getpid(),
            "restarts": cfg.restarts,
            "active": active.notebook_id if active else None,
            "parked": [p.notebook_id for p in self.state.parked],
        }

    def _connect(self) -> None:
        self.daemon.connect(self._tell_edge, self.config.socket_path, self.myAddress)
        self.held.confirmed = False
        self.daemon.send(GetIdentity(), self._on_identity)

    def _tell_edge(self, message: object) -> None:
        self.send(self.edge, message)

    def _retry_link(self, due: RetryLink) -> None:
        if self.daemon.link is None:
            self._connect()

    def _deferred_expired(self, due: DeferredExpired) -> None:
        for msg in self.held.expire(due.call_id):
            self._finish(msg.call_id, tool_error(UNREACHABLE))

    def _on_identity(self, reply: DaemonIdentity | DaemonFailure) -> None:
        """The link's own identity answer: the daemon is up, so recovery need not wait for
        the watch loop's first heartbeat (which reports the same incarnation later)."""
        if isinstance(reply, DaemonFailure):
            if self.daemon.link is not None:
                self.held.confirmed = True
            self._release_held_calls()
            return
        if self._version_changed(reply.version):
            return
        self.held.confirmed = True
        self._incarnation_seen(reply.incarnation)
        self._first_link_settled()

    def _first_link_settled(self) -> None:
        """The first link answered (or the wait is over): the calls held for it run now."""
        self.held.awaiting_first_link = False
        self._release_held_calls()

    def _release_held_calls(self) -> None:
        for msg in self.held.release():
            if isinstance(msg, ResourceRequested):
                self.resources.requested(msg, self.supervisor)
            else:
                self._tool_call(msg, self.supervisor)

    def _version_changed(self, version: str) -> bool:
        """Check a live daemon's version against this process's first, handing off if
        it differs."""
        handoff = self.held.version_seen(version)
        if handoff is None:
            return False
        self._hand_off(handoff.from_version, handoff.to_version)
        return True

    # --- what the watch loop reports ------------------------------------------------------

    def _incarnation_reported(self, msg: DaemonIncarnationSeen, sender: ActorAddress) -> None:
        if self._version_changed(msg.version):
            return
        if self.daemon.link is None:
            self._connect()
        self._incarnation_seen((msg.pid, msg.started_at))

    def _incarnation_seen(self, incarnation: tuple[Any, ...]) -> None:
        if incarnation == self.state.incarnation:
            return
        self._decide(events.IncarnationSeen(incarnation, None))

    def _version_reported(self, msg: DaemonVersionChanged, sender: ActorAddress) -> None:
        self._hand_off(msg.from_version, msg.to_version)

    def _daemon_went_away(self, msg: DaemonWentAway, sender: ActorAddress) -> None:
        log.info("the daemon went away; sessions wait for its return")

    def _hand_off(self, from_version: str, to_version: str) -> None:
        """A daemon of another version: this code must not serve it; the supervisor restarts
        the session manager from the installed code at once."""
        handoff = HandoffRequested(from_version, to_version, self.config.generation)
        self.send(self.supervisor, handoff)

    def _link_lost(self, msg: DaemonLinkClosed | DaemonLinkRefused, sender: ActorAddress) -> None:
        if not self.daemon.lost(msg):
            return
        level = logging.INFO if isinstance(msg, DaemonLinkRefused) else logging.WARNING
        log.log(level, "daemon link %s: %s", type(msg).__name__, msg.reason)
        self.held.confirmed = False
        if not self.held.awaiting_first_link:
            self._release_held_calls()
        retry = FIRST_LINK_RETRY if self.held.awaiting_first_link else LINK_RETRY
        self.wakeupAfter(retry, payload=RetryLink())

    def _frame_arrived(self, msg: DaemonFrameArrived, sender: ActorAddress) -> None:
        self.daemon.arrived(msg, self._progressed, self.book.note)

    def _progressed(self, call_id: str, line: str) -> None:
        self.send(self.supervisor, ToolCallProgressed(call_id, line))

    # --- tool calls -----------------------------------------------------------------------

    def _tool_call(self, msg: ToolCallRequested, sender: ActorAddress) -> None:
        if self.held.hold_for_first_link(msg):
            return
        spec = tools.TOOLS_BY_NAME.get(msg.name)
        try:
            args = spec.parse(msg.arguments)
        except NbstageError as exc:
            message = f"Invalid arguments for {msg.name}: {exc.message}"
            self._finish(msg.call_id, tool_error(message))
            return
        self.book.open(msg.call_id, msg.name, msg.for_app)
        if msg.name == ToolName.CREATE_NOTEBOOK:
            self.book.requested_runtimes[msg.call_id] = args.runtime
        cwd = self.config.cwd
        event = session_event(msg.name, msg.call_id, msg.idempotency_key, args, cwd)
        if isinstance(event, str):
            self._finish(msg.call_id, tool_error(event))
        elif event is not None:
            self._decide(event)
        elif msg.name == ToolName.LIST_ACTIVE_NOTEBOOKS:
            self._projection_read(msg.call_id, list_active_notebooks, self._context(msg), args)
        else:
            self._session_tool(msg, spec, args)

    def _session_tool(self, msg: ToolCallRequested, spec: tools.ToolSpec, args: Any) -> None:
        if self.held.hold_until_confirmed(msg, self.daemon.link is not None):
            return
        if self.state.active is None and sessions.rejoining(self.state):
            self.held.defer(msg, spec, args)
            self.wakeupAfter(DEFERRAL_LIMIT, payload=DeferredExpired(msg.call_id))
            return
        if self.state.active is None:
            pending = self.state.pending
            rejoining = pending is not None and pending.background
            message = sessions.no_session_message(self.state.drop, rejoining)
            self._finish(msg.call_id, tool_error(message))
            return
        if spec.access is tools.Access.PROJECTION_READ:
            self._projection_read(msg.call_id, SESSION_TOOLS[msg.name], self._context(msg), args)
            return
        if self.daemon.link is None:
            self._finish(msg.call_id, tool_error(unreachable_now(spec.access)))
            return
        self._run(msg.call_id, SESSION_TOOLS[msg.name](self._context(msg), args))

    def _projection_read(self, call_id: str, tool: Any, ctx: ToolContext, args: Any) -> None:
        """A read the snapshot may answer, marked stale, while the daemon link is down."""
        if self.daemon.link is None:
            self._finish(call_id, stale_reads.stale_answer(self.snapshot, tool(ctx, args)))
            return
        self.book.rereads[call_id] = lambda: tool(ctx, args)
        self._run(call_id, tool(ctx, args))

    def _context(self, msg: ToolCallRequested) -> ToolContext:
        config = self.config
        return tool_context(
            self.state,
            msg.idempotency_key,
            config.cwd,
            delivery.figure_folder(config),
            config.state_dir,
        )

    def _run(self, call_id: str, handler: Any, reply: Any = None, asked: object = None) -> None:
        """Advance a handler until it waits on the daemon or finishes."""
        self._observe(reply, asked)
        if not self.book.is_open(call_id):
            self.book.cancel(call_id)
            handler.close()
            return
        reread = self.book.rereads.get(call_id)
        if (
            isinstance(reply, DaemonFailure)
            and reply.code == ErrorCode.DAEMON_UNREACHABLE
            and reread
        ):
            handler.close()
            self._finish(call_id, stale_reads.stale_answer(self.snapshot, reread()))
            return
        match step(handler, reply, self.book.names.get(call_id)):
            case Done(result):
                self._finish(call_id, result)
            case Ask(LabWanted() | BrowserWanted() as wanted):
                self.offload(LabStarted(call_id, handler), lambda: lab_work(wanted))
            case Ask(request):
                self.daemon.send(request, self._resume(call_id, handler, request), call_id)

    def _resume(self, call_id: str, handler: Any, request: object) -> Callable[[Any], None]:
        return lambda answer: self._run(call_id, handler, answer, request)

    def _observe(self, reply: object, asked: object) -> None:
        """A save the daemon confirmed moves the session's best target and the supervisor's
        restart target, also when its call was cancelled meanwhile. Every answer feeds the
        snapshot that reads are served from while the link is down."""
        if asked is not None and not isinstance(reply, DaemonFailure):
            self.snapshot = stale_reads.record(self.snapshot, asked, reply, time.time())
        if isinstance(reply, NotebookSaved):
            self._decide(events.SessionSaved(reply.notebook_id, reply.path))
            self._target_changed(TargetChange.SAVED, reply.notebook_id, reply.path)

    def _target_changed(self, change: TargetChange, notebook_id: str, path: str | None) -> None:
        self.send(self.supervisor, RestartTargetChanged(change, notebook_id, path))

    def _finish(self, call_id: str, result: dict[str, Any]) -> None:
        """The result goes out, its figures written first (result_delivery.py); the
        outputs for the MCP App's page only to a client that takes it."""
        result = mcp_apps.for_client(result, call_id in self.book.for_app)
        result = with_notices(result, self.book.close(call_id))
        self.carry(delivery.delivered(call_id, result, self.config, self.supervisor))

    def _call_cancelled(self, msg: ToolCallCancelled, sender: ActorAddress) -> None:
        self.book.cancel(msg.call_id)
        self.held.cancel(msg.call_id)

    # --- sessions -------------------------------------------------------------------------

    def _decide(self, event: object) -> None:
        before = (self.state.active, self.state.parked)
        self.state, actions = sessions.decide(self.state, event)
        if (self.state.active, self.state.parked) != before:
            held = {s.notebook_id: s.path for s in (self.state.active, *self.state.parked) if s}
            self.snapshot = stale_reads.keep_only(self.snapshot, held)
        if (self.state.active, self.state.parked) != before and self.watch is not None:
            self.send(self.watch, ClientInfoChanged(self._client_info()))
            self.resources.refresh()
        if self.state.active != before[0]:
            active = self.state.active
            self.send(
                self.supervisor,
                ActiveSessionChanged(
                    active.notebook_id if active else None, active.path if active else None
                ),
            )
        for action in actions:
            match action:
                case events.Join(activation_id, target):
                    self._join(activation_id, target)
                case events.Leave(notebook_id, peer_id):
                    self.daemon.send(LeaveRoom(notebook_id, peer_id), lambda _answer: None)
                case events.Answer(call_id, result):
                    self._answer_session_call(call_id, result)
                case events.Refuse(call_id, message):
                    self._finish(call_id, tool_error(message))
                case events.TellNextResult(notice):
                    self.book.next_result.append(notice)
                case events.RetryRecoveryLater(after):
                    self.wakeupAfter(timedelta(seconds=after), payload=RetryRecovery())
        if self.held.deferred and (
            self.state.active is not None or not sessions.rejoining(self.state)
        ):
            for msg, spec, args in self.held.release_deferred():
                self._session_tool(msg, spec, args)

    def _join(self, activation_id: int, target: Target) -> None:
        request = join_request(target, self.config.label)
        self.daemon.send(request, lambda reply: self._joined(activation_id, reply), NEXT_RESULT)

    def _joined(self, activation_id: int, reply: NotebookJoined | DaemonFailure) -> None:
        self._decide(join_outcome(activation_id, reply, self.state.incarnation))

    def _answer_session_call(self, call_id: str, result: dict[str, Any]) -> None:
        runtime = self.book.requested_runtimes.pop(call_id, None)
        answer = session_answer(self.book.names.get(call_id), result, runtime)
        if answer is None:
            self._answer_already_connected(call_id, result)
            return
        self._target_changed(answer.change, answer.notebook_id, answer.path)
        self._finish(call_id, answer.result)

    def _answer_already_connected(self, call_id: str, result: dict[str, Any]) -> None:
        def answer(room: RoomDescribed | DaemonFailure) -> None:
            if isinstance(room, DaemonFailure):
                self._finish(call_id, tool_error(room.message, {"code": room.code}))
                return
            connected = already_connected(result, room)
            self._target_changed(connected.change, connected.notebook_id, connected.path)
            self._finish(call_id, connected.result)

        self.daemon.send(DescribeRoom(result["notebook_id"]), answer)

    def _exit(self, msg: ActorExitRequest, sender: ActorAddress) -> None:
        self.watch = None
        self.daemon.close()
