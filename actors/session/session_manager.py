"""The SessionManager actor ("the child"): one MCP client's notebook sessions.

It owns the session state (decided by sessions.py), runs tool handlers against
the daemon over its own DaemonLink, and answers the ProxySupervisor with
finished tool results. Its parts: the requests waiting on the daemon, keyed by
request id, never a blocked mailbox (daemon_requests.py); the open calls and the
notices their results carry (call_book.py); the calls held back until the link or a
rejoin can serve them (held_calls.py). The link to the daemon and the watch loop are
handled beside it, through it (daemon_upkeep.py), and so is what it does with the
session model's decisions (session_decisions.py); both take who this client is, as the
watch loop reports it, from ``_client_info``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from datetime import timedelta
from functools import partial
from typing import Any

from thespian.actors import ActorAddress, ActorExitRequest, ChildActorExited

from nbstage.actors.common.base import Key, NbActor, finished, wakeup
from nbstage.actors.session import daemon_upkeep, session_decisions, sessions, stale_reads
from nbstage.actors.session import result_delivery as delivery
from nbstage.actors.session import session_events as events
from nbstage.actors.session.call_book import CallBook
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
    session_event,
    unreachable_now,
)
from nbstage.actors.session.session_model import SessionState
from nbstage.actors.session.tool_handlers import (
    SESSION_TOOLS,
    ToolContext,
    list_active_notebooks,
)
from nbstage.actors.session.tool_runs import Ask, Done, step, tool_context
from nbstage.protocol.common.errors import ErrorCode, NbstageError
from nbstage.protocol.common.offload import BlockingWorkDone
from nbstage.protocol.daemon.notices import with_notices
from nbstage.protocol.daemon.replies import (
    NotebookSaved,
)
from nbstage.protocol.mcp import page_links, tools
from nbstage.protocol.mcp.tool_names import ToolName
from nbstage.protocol.mcp.tool_results import tool_error
from nbstage.protocol.session.lab_wanted import BrowserWanted, LabStarted, LabWanted
from nbstage.protocol.session.session_followups import (
    DeferredExpired,
    FiguresWritten,
    FirstLinkOverdue,
    RetryLink,
    RetryRecovery,
)
from nbstage.protocol.session.supervision import (
    RestartTargetChanged,
    SessionConfig,
    StopSessionManager,
    TargetChange,
    ToolCallCancelled,
    ToolCallRequested,
)
from nbstage.protocol.session.watching import (
    DaemonIncarnationSeen,
    DaemonVersionChanged,
    DaemonWentAway,
)


def lab_work(wanted: LabWanted | BrowserWanted) -> dict[str, Any]:
    """On a worker thread: the state dir's Lab edge, started if none runs, or the browser
    opened on a notebook's URL where a display allows it (ADR 0004)."""
    from nbstage.entrypoints.common.lab_browser import open_url
    from nbstage.entrypoints.common.lab_start import ensure_running

    if isinstance(wanted, BrowserWanted):
        return open_url(wanted.state_dir, wanted.url, os.environ)
    return ensure_running(wanted.state_dir)


DEFERRAL_LIMIT = timedelta(seconds=15)


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
            SessionConfig: partial(daemon_upkeep.configured, self),
            ChildActorExited: partial(daemon_upkeep.child_exited, self),
            DaemonIncarnationSeen: partial(daemon_upkeep.incarnation_reported, self),
            DaemonWentAway: partial(daemon_upkeep.daemon_went_away, self),
            DaemonVersionChanged: partial(daemon_upkeep.version_reported, self),
            DaemonLinkClosed: partial(daemon_upkeep.link_lost, self),
            DaemonLinkRefused: partial(daemon_upkeep.link_lost, self),
            DaemonFrameArrived: partial(daemon_upkeep.frame_arrived, self),
            ToolCallRequested: self._tool_call,
            ToolCallCancelled: self._call_cancelled,
            StopSessionManager: lambda msg, sender: self.daemon.close(),
            ActorExitRequest: self._exit,
            wakeup(RetryLink): partial(daemon_upkeep.retry_link, self),
            wakeup(RetryRecovery): lambda due: session_decisions.decide(self, events.RecoveryDue()),
            wakeup(FirstLinkOverdue): lambda due: daemon_upkeep.first_link_settled(self),
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

    def _deferred_expired(self, due: DeferredExpired) -> None:
        for msg in self.held.expire(due.call_id):
            self._finish(msg.call_id, tool_error(UNREACHABLE))

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
        self.book.open(msg.call_id, msg.name)
        if msg.name == ToolName.CREATE_NOTEBOOK:
            self.book.requested_runtimes[msg.call_id] = args.runtime
        cwd = self.config.cwd
        event = session_event(msg.name, msg.call_id, msg.idempotency_key, args, cwd)
        if isinstance(event, str):
            self._finish(msg.call_id, tool_error(event))
        elif event is not None:
            session_decisions.decide(self, event)
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
            page_links.builds_page(msg.name, msg.for_app),
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
            session_decisions.decide(self, events.SessionSaved(reply.notebook_id, reply.path))
            self._target_changed(TargetChange.SAVED, reply.notebook_id, reply.path)

    def _target_changed(self, change: TargetChange, notebook_id: str, path: str | None) -> None:
        self.send(self.supervisor, RestartTargetChanged(change, notebook_id, path))

    def _client_info(self) -> dict[str, Any]:
        """Who this client is, as the watch loop tells the daemon (and tells again when the
        active or parked notebooks change)."""
        config, active = self.config, self.state.active
        return {
            "label": config.label,
            "operator_id": config.operator_id,
            "supervisor_pid": config.supervisor_pid,
            "session_manager_pid": os.getpid(),
            "restarts": config.restarts,
            "active": active.notebook_id if active else None,
            "parked": [p.notebook_id for p in self.state.parked],
        }

    def _finish(self, call_id: str, result: dict[str, Any]) -> None:
        """The result goes out, its figures written first (result_delivery.py)."""
        result = with_notices(result, self.book.close(call_id))
        self.carry(delivery.delivered(call_id, result, self.config, self.supervisor))

    def _call_cancelled(self, msg: ToolCallCancelled, sender: ActorAddress) -> None:
        self.book.cancel(msg.call_id)
        self.held.cancel(msg.call_id)

    def _exit(self, msg: ActorExitRequest, sender: ActorAddress) -> None:
        self.watch = None
        self.daemon.close()
