"""The SessionManager actor ("the child"): one MCP client's notebook sessions.

It owns the session state (decided by sessions.py), runs tool handlers against
the daemon over its own DaemonLink, and answers the ProxySupervisor with
finished tool results. Waiting is a table of pending replies keyed by daemon
request id, never a blocked mailbox.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from thespian.actors import ActorAddress, WakeupMessage

from nbstage.actors import sessions, thespian_tweaks
from nbstage.actors.base import NbActor
from nbstage.actors.daemon_link import DaemonFrameArrived, DaemonLink, DaemonLinkClosed
from nbstage.actors.sessions import SessionState, Target
from nbstage.actors.tool_handlers import (
    SESSION_TOOLS,
    DaemonCall,
    DaemonFailure,
    ToolContext,
    absolute,
    list_active_notebooks,
)
from nbstage.protocol import tools
from nbstage.protocol.errors import NbstageError
from nbstage.protocol.mcp import tool_error, tool_result
from nbstage.protocol.supervision import (
    SessionConfig,
    SessionManagerReady,
    StopSessionManager,
    ToolCallCancelled,
    ToolCallFinished,
    ToolCallRequested,
)

log = logging.getLogger("nbstage.session")

LINK_RETRY = timedelta(milliseconds=200)


@dataclass(frozen=True, slots=True)
class RetryLink:
    pass


@dataclass
class Running:
    """A tool call waiting on the daemon."""

    call_id: str
    handler: Any


class SessionManager(NbActor):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.config: SessionConfig | None = None
        self.supervisor: ActorAddress | None = None
        self.link: DaemonLink | None = None
        self.links = 0
        self.identity: dict[str, Any] | None = None
        self.state = SessionState()
        self.waiting: dict[int, Any] = {}
        self.calls: dict[str, str] = {}
        """call_id → tool name, for calls not yet answered."""

    # --- start and the daemon link --------------------------------------------------------

    def receiveMsg_SessionConfig(self, msg: SessionConfig, sender: ActorAddress) -> None:
        self.config = msg
        self.supervisor = sender
        self._connect()

    def _connect(self) -> None:
        post = thespian_tweaks.self_poster(self)
        self.links += 1
        try:
            self.link = DaemonLink(self.config.socket_path, post, self.links)
        except OSError:
            self.wakeupAfter(LINK_RETRY, payload=RetryLink())
            return
        self.waiting[self.link.send("identity")] = self._on_identity

    def receiveMsg_WakeupMessage(self, msg: WakeupMessage, sender: ActorAddress) -> None:
        if isinstance(msg.payload, RetryLink) and self.link is None:
            self._connect()

    def _on_identity(self, reply: dict[str, Any] | DaemonFailure) -> None:
        if isinstance(reply, DaemonFailure):
            return
        self.identity = reply
        title = f"nbstage (daemon {reply['version']})"
        self.send(self.supervisor, SessionManagerReady(os.getpid(), self.config.generation, title))
        if self.config.rejoin_target:
            self._decide(sessions.RejoinRequested(self._target_of(self.config.rejoin_target)))

    def _target_of(self, value: str) -> Target:
        if value.endswith(".ipynb") or "/" in value:
            return Target(path=absolute(value, self.config.cwd))
        return Target(notebook_id=value)

    def receiveMsg_DaemonLinkClosed(self, msg: DaemonLinkClosed, sender: ActorAddress) -> None:
        if self.link is None or msg.link != self.link.link:
            return
        log.warning("daemon link closed: %s", msg.reason)
        self.link = None
        failure = DaemonFailure("daemon_unreachable", _UNREACHABLE)
        for resume in list(self.waiting.values()):
            resume(failure)
        self.waiting.clear()
        self._decide(sessions.SessionsLost())
        self.wakeupAfter(LINK_RETRY, payload=RetryLink())

    def receiveMsg_DaemonFrameArrived(self, msg: DaemonFrameArrived, sender: ActorAddress) -> None:
        if self.link is None or msg.link != self.link.link:
            return
        frame = msg.frame
        resume = self.waiting.pop(frame.get("id"), None)
        if resume is None:
            return
        if frame["type"] == "error":
            resume(DaemonFailure(frame["error"]["code"], frame["error"]["message"]))
        else:
            resume(frame.get("result", {}))

    def _daemon(self, call: DaemonCall, resume: Any) -> None:
        if self.link is None:
            resume(DaemonFailure("daemon_unreachable", _UNREACHABLE))
            return
        self.waiting[self.link.send(call.kind, **call.fields)] = resume

    # --- tool calls -----------------------------------------------------------------------

    def receiveMsg_ToolCallRequested(self, msg: ToolCallRequested, sender: ActorAddress) -> None:
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
            case "connect_notebook":
                self._connect_notebook(msg.call_id, args)
            case "create_notebook":
                create = {"runtime": args.runtime, "ephemeral": args.ephemeral}
                create["working_dir"] = absolute(args.working_dir or ".", self.config.cwd)
                self._decide(sessions.ConnectRequested(msg.call_id, Target(create=create)))
            case "disconnect_notebook":
                self._decide(sessions.DisconnectRequested(msg.call_id, args.notebook_id))
            case "list_active_notebooks":
                self._run(msg.call_id, list_active_notebooks(self._context(msg), args))
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

    def _session_tool(self, msg: ToolCallRequested, spec: tools.ToolSpec, args: Any) -> None:
        if self.state.active is None:
            self._finish(msg.call_id, tool_error(sessions.no_session_message(self.state.drop)))
            return
        self._run(msg.call_id, SESSION_TOOLS[msg.name](self._context(msg), args))

    def _context(self, msg: ToolCallRequested) -> ToolContext:
        active = self.state.active
        return ToolContext(
            notebook_id=active.notebook_id if active else "",
            key=msg.idempotency_key,
            cwd=self.config.cwd,
            active_id=active.notebook_id if active else None,
            parked_ids=tuple(s.notebook_id for s in self.state.parked),
        )

    def _run(self, call_id: str, handler: Any, reply: Any = None) -> None:
        """Advance a handler until it waits on the daemon or finishes."""
        if call_id not in self.calls:
            handler.close()
            return
        try:
            failed = isinstance(reply, DaemonFailure)
            call = handler.throw(reply) if failed else handler.send(reply)
        except StopIteration as done:
            self._finish(call_id, done.value)
            return
        except DaemonFailure as exc:
            self._finish(call_id, tool_error(exc.message, {"code": exc.code}))
            return
        except Exception:
            log.exception("tool %s failed", self.calls.get(call_id))
            self._finish(call_id, tool_error("Internal error in nbstage; see its logs."))
            return
        self._daemon(call, lambda answer: self._run(call_id, handler, answer))

    def _finish(self, call_id: str, result: dict[str, Any]) -> None:
        self.calls.pop(call_id, None)
        self.send(self.supervisor, ToolCallFinished(call_id, result))

    def receiveMsg_ToolCallCancelled(self, msg: ToolCallCancelled, sender: ActorAddress) -> None:
        self.calls.pop(msg.call_id, None)

    # --- sessions -------------------------------------------------------------------------

    def _decide(self, event: object) -> None:
        self.state, actions = sessions.decide(self.state, event)
        for action in actions:
            match action:
                case sessions.Join(activation_id, target):
                    self._join(activation_id, target)
                case sessions.Leave(notebook_id, peer_id):
                    self._daemon(
                        DaemonCall("leave", {"notebook_id": notebook_id, "peer_id": peer_id}),
                        lambda _answer: None,
                    )
                case sessions.Answer(call_id, result):
                    self._answer_session_call(call_id, result)
                case sessions.Refuse(call_id, message):
                    self._finish(call_id, tool_error(message))

    def _join(self, activation_id: int, target: Target) -> None:
        label = self.config.label
        if target.create is not None:
            call = DaemonCall("create", {**target.create, "peer_label": label})
        elif target.path is not None:
            call = DaemonCall("open", {"path": target.path, "peer_label": label})
        else:
            call = DaemonCall("attach", {"notebook_id": target.notebook_id, "peer_label": label})
        self._daemon(call, lambda reply: self._joined(activation_id, reply))

    def _joined(self, activation_id: int, reply: Any) -> None:
        if isinstance(reply, DaemonFailure):
            unavailable = reply.code in ("notebook_unavailable", "not_found")
            self._decide(sessions.JoinFailed(activation_id, reply.message, unavailable))
            return
        incarnation = tuple(self.identity["incarnation"]) if self.identity else None
        session = sessions.Session(
            reply["notebook_id"], reply["path"], reply["peer_id"], incarnation
        )
        self._decide(sessions.JoinSucceeded(activation_id, session, reply))

    def _answer_session_call(self, call_id: str, result: dict[str, Any]) -> None:
        name = self.calls.get(call_id)
        if name == "create_notebook":
            structured = {
                "notebook_id": result["notebook_id"],
                "path": None,
                "ephemeral": result["ephemeral"],
                "runtime": result["runtime"],
            }
            text = f"Created notebook {result['notebook_id']}; its kernel is starting."
        elif name == "disconnect_notebook":
            structured, text = result, f"Disconnected from {result['disconnected']}."
        else:
            structured = {k: v for k, v in result.items() if k not in ("ephemeral", "runtime")}
            text = (
                f"Connected to {result['path'] or result['notebook_id']} "
                f"({result['cell_count']} cells, kernel {result['kernel_status']})."
            )
        self._finish(call_id, tool_result(structured, text=text))

    def receiveMsg_StopSessionManager(self, msg: StopSessionManager, sender: ActorAddress) -> None:
        if self.link is not None:
            self.link.close()
            self.link = None

    def receiveMsg_ActorExitRequest(self, msg: object, sender: ActorAddress) -> None:
        if self.link is not None:
            self.link.close()


_UNREACHABLE = (
    "The notebook daemon is not reachable right now; nbstage is reconnecting. "
    "Try again in a moment."
)
