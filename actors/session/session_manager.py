"""The SessionManager actor ("the child"): one MCP client's notebook sessions.

It owns the session state (decided by sessions.py), runs tool handlers against
the daemon over its own DaemonLink, and answers the ProxySupervisor with
finished tool results. Waiting is a table of pending replies keyed by daemon
request id, never a blocked mailbox.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import replace
from datetime import timedelta
from typing import Any

import orjson
from thespian.actors import ActorAddress, ChildActorExited, WakeupMessage

from nbstage.actors.common.base import NbActor, finished
from nbstage.actors.session import figure_files, reconcile, sessions, stale_reads
from nbstage.actors.session.daemon_link import (
    DaemonFailure,
    DaemonFrameArrived,
    DaemonLink,
    DaemonLinkClosed,
    DaemonLinkRefused,
    frame_from,
    is_current,
    reply_in,
)
from nbstage.actors.session.sessions import SessionState, Target
from nbstage.actors.session.tool_handlers import (
    SESSION_TOOLS,
    ToolContext,
    absolute,
    environment_fields,
    list_active_notebooks,
)
from nbstage.actors.session.watch_loop import WatchLoop
from nbstage.protocol.common.codec import to_wire
from nbstage.protocol.common.errors import ErrorCode, NbstageError
from nbstage.protocol.common.offload import BlockingWorkDone
from nbstage.protocol.common.words import plural
from nbstage.protocol.daemon.frames import MAX_FRAME_BYTES, FrameKind, FrameTooLarge
from nbstage.protocol.daemon.notices import Notice, notice_from_wire, with_notices
from nbstage.protocol.daemon.replies import (
    DaemonIdentity,
    NotebookJoined,
    NotebookSaved,
    RoomDescribed,
    reply_type,
)
from nbstage.protocol.daemon.requests import (
    AttachNotebook,
    CreateNotebook,
    DescribeRoom,
    GetIdentity,
    LeaveRoom,
    OpenNotebook,
)
from nbstage.protocol.mcp import tools
from nbstage.protocol.mcp.lifecycle import tool_error, tool_result
from nbstage.protocol.mcp.tool_names import ToolName
from nbstage.protocol.session.lab_wanted import LabStarted, LabWanted
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
    ToolCallFinished,
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


def lab_started(state_dir: str) -> dict[str, Any]:
    """On a worker thread: the state dir's Lab edge, started if none runs."""
    from nbstage.entrypoints.lab.launch import ensure_running

    return ensure_running(state_dir)


log = logging.getLogger("nbstage.session")

LINK_RETRY = timedelta(milliseconds=200)
FIRST_LINK_RETRY = timedelta(milliseconds=20)
"""While a daemon this client autostarted comes up: its socket appears within a second,
and every 200 ms lost there is on the new user's first call."""
HEARTBEAT_ENV = "NBSTAGE_HEARTBEAT_SECS"

DEGRADED = {
    tools.Access.PROJECTION_READ: "the notebook list cannot be read",
    tools.Access.DOCUMENT_READ: "the notebook cannot be read",
    tools.Access.DOCUMENT_MUTATION: "the notebook cannot be changed",
    tools.Access.KERNEL_CONTROL: "the kernel cannot be controlled",
    tools.Access.RUNTIME_READ: "execution results cannot be read",
    tools.Access.EXECUTE: "cells cannot run",
}


DEFERRAL_LIMIT = timedelta(seconds=15)
NEXT_RESULT = ""
"""In place of a call id: the notices of a join's answer (an approval waiting, edits restored
from the journal) go to the next tool result, the connect call's own or, for a rejoin in the
background, whichever comes next."""
NEXT_CALLS = {
    ErrorCode.CELL_NOT_FOUND: "get_all_cells()",
    ErrorCode.DEPENDENCIES_CHANGED: "manage_dependencies()",
}
"""The call that shows what a refusal with this code needs, for the result's next_call."""
FIRST_LINK_LIMIT = timedelta(seconds=30)
"""How long calls wait for a daemon that is being started for this client."""


class SessionManager(NbActor):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.config: SessionConfig | None = None
        self.supervisor: ActorAddress | None = None
        self.link: DaemonLink | None = None
        self.baseline_version: str | None = None
        self.next_result_lines: list[Notice] = []
        """Lines for the next finished tool call, whichever it is (a lost kernel)."""
        self.requested_runtimes: dict[str, str] = {}
        """create_notebook reports the runtime it was asked for ("python"), not the kernelspec."""
        self.state = SessionState()
        self.waiting: dict[int, tuple[type, Any]] = {}
        """Daemon request id → the reply type it expects and the continuation it resumes."""
        self.call_of: dict[int, str] = {}
        """Daemon request id → the tool call it is part of, whose result carries its notices."""
        self.notices: dict[str, list[Notice]] = {}
        """call_id → the lines the daemon's answers carried for it (a merge from disk, ...)."""
        self.calls: dict[str, ToolName] = {}
        """call_id → tool name, for calls not yet answered."""
        self.watch: ActorAddress | None = None
        self.deferred: list[tuple[ToolCallRequested, tools.ToolSpec, Any]] = []
        """Session tool calls that arrived while a rejoin was under way."""
        self.awaiting_first_link = False
        self.link_confirmed = False
        """Whether the current link's identity answer came back. Until it has, sessions may
        still name a daemon that restarted, so calls wait (SPEC §7: no stale handle)."""
        self.before_link: list[ToolCallRequested] = []
        """Calls held until the link answers: the first link while a daemon starts, or
        any new link until its identity shows which daemon it reached."""
        self.snapshot = stale_reads.Snapshot()
        self.rereads: dict[str, Any] = {}
        """call_id → a fresh handler for a projection read, replayed on the snapshot if
        the link goes down while the call waits on the daemon."""

    # --- start and the daemon link --------------------------------------------------------

    def receiveMsg_SessionConfig(self, msg: SessionConfig, sender: ActorAddress) -> None:
        self.config = msg
        self.supervisor = sender
        self.edge = sender
        if msg.autostart:
            self.awaiting_first_link = True
            self.wakeupAfter(FIRST_LINK_LIMIT, payload=FirstLinkOverdue())
        if msg.rejoin_target:
            # The restart target enters the session model at once, so a disconnect that
            # arrives before the daemon's first answer cancels it like any other rejoin.
            self.state = replace(self.state, recovery=self._target_of(msg.rejoin_target))
        ready = SessionManagerReady(os.getpid(), msg.generation, tools.builtin_tool_list())
        self.send(sender, ready)
        self._connect()
        self._start_watch()

    def _start_watch(self) -> None:
        self.watch = self.createActor(WatchLoop)
        heartbeat = float(os.environ.get(HEARTBEAT_ENV) or 1.0)
        start = StartWatch(self.config.socket_path, heartbeat, self._client_info(), self.edge)
        self.send(self.watch, start)

    def receiveMsg_ChildActorExited(self, msg: ChildActorExited, sender: ActorAddress) -> None:
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
        self.link = DaemonLink(self._tell_edge, self.config.socket_path, self.myAddress)
        self.link_confirmed = False
        self._daemon(GetIdentity(), self._on_identity)

    def _tell_edge(self, message: object) -> None:
        self.send(self.edge, message)

    def receiveMsg_WakeupMessage(self, msg: WakeupMessage, sender: ActorAddress) -> None:
        match msg.payload:
            case RetryLink() if self.link is None:
                self._connect()
            case RetryRecovery():
                self._decide(sessions.RecoveryDue())
            case FirstLinkOverdue():
                self._first_link_settled()
            case DeferredExpired(call_id):
                expired = [d for d in self.deferred if d[0].call_id == call_id]
                self.deferred = [d for d in self.deferred if d[0].call_id != call_id]
                for msg, _spec, _args in expired:
                    self._finish(msg.call_id, tool_error(_UNREACHABLE))

    def _on_identity(self, reply: DaemonIdentity | DaemonFailure) -> None:
        """The link's own identity answer: the daemon is up, so recovery need not wait for
        the watch loop's first heartbeat (which reports the same incarnation later)."""
        if isinstance(reply, DaemonFailure):
            if self.link is not None:
                self.link_confirmed = True
            self._release_held_calls()
            return
        if self._version_changed(reply.version):
            return
        self.link_confirmed = True
        self._incarnation_seen(reply.incarnation)
        self._first_link_settled()

    def _first_link_settled(self) -> None:
        """The first link answered (or the wait is over): the calls held for it run now."""
        self.awaiting_first_link = False
        self._release_held_calls()

    def _release_held_calls(self) -> None:
        held, self.before_link = self.before_link, []
        for msg in held:
            self.receiveMsg_ToolCallRequested(msg, self.supervisor)

    def _version_changed(self, version: str) -> bool:
        """Check a live daemon's version against this process's baseline, handing off if
        it differs. The first version seen, by the link or the watch loop, is the baseline
        (the watch loop may start late and first see an already upgraded daemon)."""
        self.baseline_version, handoff = reconcile.against_baseline(self.baseline_version, version)
        if handoff is None:
            return False
        self._hand_off(handoff.from_version, handoff.to_version)
        return True

    def _target_of(self, value: str) -> Target:
        if value.endswith(".ipynb") or "/" in value:
            return Target(path=absolute(value, self.config.cwd))
        return Target(notebook_id=value)

    # --- what the watch loop reports ------------------------------------------------------

    def receiveMsg_DaemonIncarnationSeen(
        self, msg: DaemonIncarnationSeen, sender: ActorAddress
    ) -> None:
        if self._version_changed(msg.version):
            return
        if self.link is None:
            self._connect()
        self._incarnation_seen((msg.pid, msg.started_at))

    def _incarnation_seen(self, incarnation: tuple[Any, ...]) -> None:
        if incarnation == self.state.incarnation:
            return
        self._decide(sessions.IncarnationSeen(incarnation, None))

    def receiveMsg_DaemonWentAway(self, msg: DaemonWentAway, sender: ActorAddress) -> None:
        log.info("the daemon went away; sessions wait for its return")

    def receiveMsg_DaemonVersionChanged(
        self, msg: DaemonVersionChanged, sender: ActorAddress
    ) -> None:
        self._hand_off(msg.from_version, msg.to_version)

    def _hand_off(self, from_version: str, to_version: str) -> None:
        """A daemon of another version: this code must not serve it; the supervisor restarts
        the session manager from the installed code at once."""
        handoff = HandoffRequested(from_version, to_version, self.config.generation)
        self.send(self.supervisor, handoff)

    def receiveMsg_DaemonLinkClosed(self, msg: DaemonLinkClosed, sender: ActorAddress) -> None:
        self._link_lost(msg)

    def receiveMsg_DaemonLinkRefused(self, msg: DaemonLinkRefused, sender: ActorAddress) -> None:
        self._link_lost(msg)

    def _link_lost(self, msg: DaemonLinkClosed | DaemonLinkRefused) -> None:
        if not is_current(self.link, msg):
            return
        level = logging.INFO if isinstance(msg, DaemonLinkRefused) else logging.WARNING
        log.log(level, "daemon link %s: %s", type(msg).__name__, msg.reason)
        self.link = None
        self.link_confirmed = False
        failure = DaemonFailure(ErrorCode.DAEMON_UNREACHABLE, _UNREACHABLE)
        waiting, self.waiting = self.waiting, {}
        self.call_of = {}
        for _expected, resume in waiting.values():
            resume(failure)
        if not self.awaiting_first_link:
            self._release_held_calls()
        retry = FIRST_LINK_RETRY if self.awaiting_first_link else LINK_RETRY
        self.wakeupAfter(retry, payload=RetryLink())

    def receiveMsg_DaemonFrameArrived(self, msg: DaemonFrameArrived, sender: ActorAddress) -> None:
        frame = frame_from(self.link, msg)
        if frame is None:
            return
        if frame["type"] == FrameKind.PROGRESS:
            call_id = self.call_of.get(frame.get("id"))
            if call_id is not None and isinstance(frame.get("message"), str):
                self.send(self.supervisor, ToolCallProgressed(call_id, frame["message"]))
            return
        waiting = self.waiting.pop(frame.get("id"), None)
        if waiting is None:
            return
        call_id = self.call_of.pop(frame["id"], None)
        if call_id is not None:
            self._note(call_id, frame.get("notices"))
        expected, resume = waiting
        resume(reply_in(frame, expected))

    def _daemon(self, request: object, resume: Any, call_id: str | None = None) -> None:
        """Send ``request``; ``resume`` gets its typed reply or a DaemonFailure."""
        if self.link is None:
            resume(DaemonFailure(ErrorCode.DAEMON_UNREACHABLE, _UNREACHABLE))
            return
        try:
            request_id = self.link.send(request)
        except FrameTooLarge as exc:
            resume(DaemonFailure(ErrorCode.BAD_REQUEST, _too_large_to_send(exc.size)))
            return
        self.waiting[request_id] = (reply_type(request), resume)
        if call_id is not None:
            self.call_of[request_id] = call_id

    def _note(self, call_id: str, notices: object) -> None:
        if not isinstance(notices, list):
            return
        kept = (
            self.next_result_lines
            if call_id == NEXT_RESULT
            else self.notices.setdefault(call_id, [])
        )
        for notice in map(notice_from_wire, notices):
            if notice is not None and notice not in kept:
                kept.append(notice)

    # --- tool calls -----------------------------------------------------------------------

    def receiveMsg_ToolCallRequested(self, msg: ToolCallRequested, sender: ActorAddress) -> None:
        if self.awaiting_first_link:
            self.before_link.append(msg)
            return
        spec = tools.TOOLS_BY_NAME.get(msg.name)
        try:
            args = spec.parse(msg.arguments)
        except NbstageError as exc:
            self._finish(
                msg.call_id, tool_error(f"Invalid arguments for {msg.name}: {exc.message}")
            )
            return
        self.calls[msg.call_id] = msg.name
        match msg.name:
            case ToolName.CONNECT_NOTEBOOK:
                self._connect_notebook(msg.call_id, args)
            case ToolName.CREATE_NOTEBOOK:
                self.requested_runtimes[msg.call_id] = args.runtime
                create = {
                    "runtime": args.runtime,
                    "ephemeral": args.ephemeral,
                    "key": msg.idempotency_key,
                }
                create["working_dir"] = absolute(args.working_dir or ".", self.config.cwd)
                self._decide(sessions.ConnectRequested(msg.call_id, Target(create=create)))
            case ToolName.DISCONNECT_NOTEBOOK:
                self._decide(sessions.DisconnectRequested(msg.call_id, args.notebook_id))
            case ToolName.LIST_ACTIVE_NOTEBOOKS:
                self._projection_read(msg.call_id, list_active_notebooks, self._context(msg), args)
            case _:
                self._session_tool(msg, spec, args)

    def _connect_notebook(self, call_id: str, args: tools.ConnectArgs) -> None:
        if (args.path is None) == (args.notebook_id is None):
            self._finish(call_id, tool_error("Give exactly one of path and notebook_id."))
            return
        if args.path is not None:
            target = Target(path=absolute(args.path, self.config.cwd))
        else:
            target = Target(notebook_id=args.notebook_id)
        self._decide(sessions.ConnectRequested(call_id, target))

    def _rejoining(self) -> bool:
        pending = self.state.pending
        first_rejoin = self.state.recovery is not None and self.state.incarnation is None
        return first_rejoin or (pending is not None and pending.background)

    def _session_tool(self, msg: ToolCallRequested, spec: tools.ToolSpec, args: Any) -> None:
        if self.link is not None and not self.link_confirmed:
            # A new link may reach a restarted daemon: the session's handle is used only
            # once the link's identity has shown which daemon it is (and dropped a stale one).
            self.before_link.append(msg)
            return
        if self.state.active is None and self._rejoining():
            self.deferred.append((msg, spec, args))
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
        if self.link is None:
            message = (
                f"The notebook daemon is unreachable, so {DEGRADED[spec.access]} right now. "
                "nbstage is reconnecting and will rejoin this notebook; try again shortly."
            )
            self._finish(msg.call_id, tool_error(message))
            return
        self._run(msg.call_id, SESSION_TOOLS[msg.name](self._context(msg), args))

    def _projection_read(self, call_id: str, tool: Any, ctx: ToolContext, args: Any) -> None:
        """A read the snapshot may answer, marked stale, while the daemon link is down."""
        if self.link is None:
            self._finish(call_id, stale_reads.stale_answer(self.snapshot, tool(ctx, args)))
            return
        self.rereads[call_id] = lambda: tool(ctx, args)
        self._run(call_id, tool(ctx, args))

    def _context(self, msg: ToolCallRequested) -> ToolContext:
        active = self.state.active
        return ToolContext(
            notebook_id=active.notebook_id if active else "",
            key=msg.idempotency_key,
            cwd=self.config.cwd,
            active_id=active.notebook_id if active else None,
            parked_ids=tuple(s.notebook_id for s in self.state.parked),
            state_dir=self.config.state_dir,
            figures=self._figures(),
        )

    def _run(self, call_id: str, handler: Any, reply: Any = None, asked: object = None) -> None:
        """Advance a handler until it waits on the daemon or finishes."""
        self._observe(reply, asked)
        if call_id not in self.calls:
            self.notices.pop(call_id, None)
            self.rereads.pop(call_id, None)
            handler.close()
            return
        failed = isinstance(reply, DaemonFailure)
        reread = self.rereads.get(call_id)
        if failed and reply.code == ErrorCode.DAEMON_UNREACHABLE and reread is not None:
            handler.close()
            self._finish(call_id, stale_reads.stale_answer(self.snapshot, reread()))
            return
        try:
            request = handler.throw(reply) if failed else handler.send(reply)
        except StopIteration as done:
            self._finish(call_id, done.value)
            return
        except DaemonFailure as exc:
            next_call = NEXT_CALLS.get(exc.code)
            self._finish(call_id, tool_error(exc.message, {"code": exc.code}, next_call))
            return
        except Exception:
            log.exception("tool %s failed", self.calls.get(call_id))
            self._finish(call_id, tool_error("Internal error in nbstage; see its logs."))
            return
        if isinstance(request, LabWanted):
            self.offload(LabStarted(call_id, handler), lambda: lab_started(request.state_dir))
            return
        self._daemon(request, lambda answer: self._run(call_id, handler, answer, request), call_id)

    def _observe(self, reply: object, asked: object) -> None:
        """A save the daemon confirmed moves the session's best target and the supervisor's
        restart target, also when its call was cancelled meanwhile. Every answer feeds the
        snapshot that reads are served from while the link is down."""
        if asked is not None and not isinstance(reply, DaemonFailure):
            self.snapshot = stale_reads.record(self.snapshot, asked, reply, time.time())
        if isinstance(reply, NotebookSaved):
            self._decide(sessions.SessionSaved(reply.notebook_id, reply.path))
            self._target_changed(TargetChange.SAVED, reply.notebook_id, reply.path)

    def _target_changed(self, change: TargetChange, notebook_id: str, path: str | None) -> None:
        self.send(self.supervisor, RestartTargetChanged(change, notebook_id, path))

    def _finish(self, call_id: str, result: dict[str, Any]) -> None:
        self.calls.pop(call_id, None)
        self.rereads.pop(call_id, None)
        self.requested_runtimes.pop(call_id, None)
        notices = [*self.next_result_lines, *self.notices.pop(call_id, [])]
        self.next_result_lines = []
        result = with_notices(result, notices)
        images = figure_files.images_in(result)
        folder = self._figures()
        if not images or folder is None:
            self.send(self.supervisor, ToolCallFinished(call_id, orjson.dumps(result)))
            return
        keep = self.config.figure_files
        self.offload(
            FiguresWritten(call_id, orjson.dumps(result)),
            lambda: figure_files.write_figures(folder, images, keep),
            "figures",
        )

    def handlers(self) -> dict[Any, Any]:
        return {
            finished(FiguresWritten): self._figures_written,
            finished(LabStarted): self._lab_started,
        }

    def _lab_started(self, done: BlockingWorkDone) -> None:
        token: LabStarted = done.token
        failure = DaemonFailure(ErrorCode.INTERNAL, f"JupyterLab did not start: {done.error}")
        self._run(token.call_id, token.handler, done.result if done.ok else failure)

    def _figures_written(self, done: BlockingWorkDone) -> None:
        """The result goes out once its images are on disk; if they could not be written,
        it goes out without naming their files."""
        token: FiguresWritten = done.token
        result_json = token.result_json
        if not done.ok:
            log.warning("figures not written: %s", done.error)
            result = figure_files.without_files(orjson.loads(result_json))
            result_json = orjson.dumps(result)
        self.send(self.supervisor, ToolCallFinished(token.call_id, result_json))

    def _figures(self) -> str | None:
        if self.config is None or self.config.figure_files <= 0:
            return None
        return os.path.join(self.config.state_dir, figure_files.FOLDER)

    def receiveMsg_ToolCallCancelled(self, msg: ToolCallCancelled, sender: ActorAddress) -> None:
        self.calls.pop(msg.call_id, None)
        self.rereads.pop(msg.call_id, None)
        self.notices.pop(msg.call_id, None)
        self.before_link = [held for held in self.before_link if held.call_id != msg.call_id]

    # --- sessions -------------------------------------------------------------------------

    def _decide(self, event: object) -> None:
        before = (self.state.active, self.state.parked)
        self.state, actions = sessions.decide(self.state, event)
        if (self.state.active, self.state.parked) != before:
            held = {s.notebook_id: s.path for s in (self.state.active, *self.state.parked) if s}
            self.snapshot = stale_reads.keep_only(self.snapshot, held)
        if (self.state.active, self.state.parked) != before and self.watch is not None:
            self.send(self.watch, ClientInfoChanged(self._client_info()))
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
                case sessions.Join(activation_id, target):
                    self._join(activation_id, target)
                case sessions.Leave(notebook_id, peer_id):
                    self._daemon(LeaveRoom(notebook_id, peer_id), lambda _answer: None)
                case sessions.Answer(call_id, result):
                    self._answer_session_call(call_id, result)
                case sessions.Refuse(call_id, message):
                    self._finish(call_id, tool_error(message))
                case sessions.TellNextResult(notice):
                    self.next_result_lines.append(notice)
                case sessions.RetryRecoveryLater(after):
                    self.wakeupAfter(timedelta(seconds=after), payload=RetryRecovery())
        if self.deferred and (self.state.active is not None or not self._rejoining()):
            deferred, self.deferred = self.deferred, []
            for msg, spec, args in deferred:
                self._session_tool(msg, spec, args)

    def _join(self, activation_id: int, target: Target) -> None:
        label = self.config.label
        if target.create is not None:
            request = CreateNotebook(**target.create, peer_label=label)
        elif target.path is not None:
            request = OpenNotebook(target.path, label)
        else:
            request = AttachNotebook(target.notebook_id, label)
        self._daemon(request, lambda reply: self._joined(activation_id, reply), NEXT_RESULT)

    def _joined(self, activation_id: int, reply: NotebookJoined | DaemonFailure) -> None:
        if isinstance(reply, DaemonFailure):
            unavailable = reply.code in (ErrorCode.NOTEBOOK_UNAVAILABLE, ErrorCode.NOT_FOUND)
            self._decide(sessions.JoinFailed(activation_id, reply.message, unavailable))
            return
        session = sessions.Session(
            reply.notebook_id, reply.path, reply.peer_id, self.state.incarnation
        )
        self._decide(sessions.JoinSucceeded(activation_id, session, to_wire(reply)))

    def _answer_session_call(self, call_id: str, result: dict[str, Any]) -> None:
        name = self.calls.get(call_id)
        if name == ToolName.CREATE_NOTEBOOK:
            structured = {
                "notebook_id": result["notebook_id"],
                "path": None,
                "ephemeral": result["ephemeral"],
                "runtime": self.requested_runtimes.pop(call_id, result["runtime"]),
            }
            text = f"Created notebook {result['notebook_id']}; its kernel is starting."
            self._target_changed(TargetChange.JOINED, result["notebook_id"], None)
        elif name == ToolName.DISCONNECT_NOTEBOOK:
            structured, text = result, f"Disconnected from {result['disconnected']}."
            self._target_changed(TargetChange.LEFT, result["disconnected"], None)
        elif result["cell_count"] is None:
            self._answer_already_connected(call_id, result)
            return
        else:
            structured, kernel = _connected(result)
            text = f"Connected to {result['path'] or result['notebook_id']} {kernel}"
            self._target_changed(TargetChange.JOINED, result["notebook_id"], result["path"])
        self._finish(call_id, tool_result(structured, text=text))

    def _answer_already_connected(self, call_id: str, result: dict[str, Any]) -> None:
        """Connecting to the active notebook joins nothing; its facts come from the room."""

        def answer(room: RoomDescribed | DaemonFailure) -> None:
            if isinstance(room, DaemonFailure):
                self._finish(call_id, tool_error(room.message, {"code": room.code}))
                return
            facts = {
                "cell_count": room.cell_count,
                "kernel_status": room.kernel_status,
                "runtime": room.runtime,
                "kernel_refused": room.kernel_refused,
            }
            structured, kernel = _connected({**result, **facts})
            text = f"Already connected to {result['path'] or result['notebook_id']} {kernel}"
            self._target_changed(TargetChange.JOINED, result["notebook_id"], result["path"])
            self._finish(call_id, tool_result(structured, text=text))

        self._daemon(DescribeRoom(result["notebook_id"]), answer)

    def receiveMsg_StopSessionManager(self, msg: StopSessionManager, sender: ActorAddress) -> None:
        if self.link is not None:
            self.link.close()
            self.link = None

    def receiveMsg_ActorExitRequest(self, msg: object, sender: ActorAddress) -> None:
        self.watch = None
        if self.link is not None:
            self.link.close()


def _connected(result: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """connect_notebook's structuredContent, and its words on cells and kernel."""
    hidden = ("ephemeral", "runtime", "kernel_refused", "environment")
    structured = {k: v for k, v in result.items() if k not in hidden}
    structured["kernelspec"] = result.get("runtime")
    structured |= environment_fields(result.get("environment"))
    cells = plural(result["cell_count"], "cell")
    if result.get("kernel_refused"):
        structured["kernel_refused"] = result["kernel_refused"]
        return structured, f"({cells}, no kernel). {result['kernel_refused']}"
    kernel = " ".join(str(v) for v in (result.get("runtime"), result["kernel_status"]) if v)
    if structured["env_source"]:
        kernel += f" in the {structured['env_source']} environment"
    return structured, f"({cells}, kernel {kernel})."


_UNREACHABLE = (
    "The notebook daemon is unreachable right now; nbstage is reconnecting and will "
    "rejoin your notebook. Try again in a moment."
)


def _too_large_to_send(size: int) -> str:
    return (
        f"The request is {size:,} bytes, over the daemon's "
        f"{MAX_FRAME_BYTES // (1024 * 1024)} MiB limit for one frame, so it was not sent. "
        "Send less at once, for example a long source split over several cells."
    )
