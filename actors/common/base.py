"""What every nbstage actor shares: request handling that never lets an exception
escape, replies addressed to the socket edge, and blocking work handed to the edge.

thespian re-delivers a message whose handler raised, so an escaping exception
could apply a mutation twice. ``serve`` therefore turns every
failure into a :class:`RequestFailed` reply. Answers are the reply dataclasses of
``protocol/daemon/replies.py``, encoded here, once.

Dispatch: ``handlers()`` is the actor's one table, built once, keyed by message type.
An envelope is keyed by what it carries: ``request(GetCell)`` for a client request,
``finished(SaveFinished)`` for offloaded work by its token, ``progress(...)`` for a line
that work reported, ``wakeup(AutosaveDue)`` for a timer by its payload. The envelopes
themselves, and ``ActorExitRequest``, are rows the base adds to every table (the
``_on_*`` methods below); an actor's own table may replace one of those rows, as the
Daemon and the Room do for ``ClientRequest`` to hold a request back before it is
``serve``d. A message the table does not name goes to ``receiveUnrecognizedMessage``.
No method here is named ``receiveMsg_…``: thespian's plain ``Actor`` calls only
``receiveMessage``, and every other entry point is a row of the table.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from thespian.actors import Actor, ActorAddress, ActorExitRequest, WakeupMessage

from nbstage.actors.common.effects import AfterMail, Answer, Effect, Fail, Offload, Send, Wake
from nbstage.protocol.common.codec import dumps
from nbstage.protocol.common.errors import ErrorCode, NbstageError
from nbstage.protocol.common.host_mail import TellAfterMail
from nbstage.protocol.common.offload import BlockingWorkDone, BlockingWorkRequested, WorkProgressed
from nbstage.protocol.daemon.notices import Notice
from nbstage.protocol.daemon_actors.edge import (
    ClientRequest,
    Origin,
    RequestAnswered,
    RequestFailed,
)

log = logging.getLogger("nbstage.actors")

Key = type | tuple[type, type]


def request(body: type) -> Key:
    """The key of a client request, by the type of its body: handler(origin, body)."""
    return (ClientRequest, body)


def finished(token: type) -> Key:
    """The key of finished offloaded work, by its token's type: handler(done)."""
    return (BlockingWorkDone, token)


def progress(token: type) -> Key:
    """The key of a line offloaded work reported, by its token's type: handler(token, line)."""
    return (WorkProgressed, token)


def wakeup(payload: type) -> Key:
    """The key of a timer, by its payload's type: handler(payload)."""
    return (WakeupMessage, payload)


class NbActor(Actor):
    """Base of every nbstage actor."""

    edge: ActorAddress | None = None
    _table: dict[Key, Callable[..., None]] | None = None

    def handlers(self) -> dict[Key, Callable[..., None]]:
        """The dispatch table, asked for once. A plain message's handler takes
        (msg, sender); see ``request``, ``finished``, ``progress`` and ``wakeup``."""
        return {}

    def handler_for(self, key: Key) -> Callable[..., None] | None:
        if self._table is None:
            self._table = {
                ClientRequest: lambda msg, sender: self.serve(msg.origin, msg.body),
                WorkProgressed: self._on_work_progressed,
                WakeupMessage: self._on_wakeup,
                BlockingWorkDone: self._on_work_done,
                # thespian stops the actor once this row returns; an actor that holds
                # something to release names ActorExitRequest in its own table.
                ActorExitRequest: lambda msg, sender: None,
                **self.handlers(),
            }
        return self._table.get(key)

    def receiveMessage(self, msg: Any, sender: ActorAddress) -> None:
        handler = self.handler_for(type(msg))
        if handler is None:
            self.receiveUnrecognizedMessage(msg, sender)
        else:
            handler(msg, sender)

    def serve(self, origin: Origin, body: Any) -> None:
        """A client request to the table's ``request(type(body))`` row, guarded; the
        ``ClientRequest`` row, the base's or an actor's own, ends here."""
        handler = self.handler_for(request(type(body)))
        if handler is None:
            self.fail(origin, NbstageError(ErrorCode.UNKNOWN_REQUEST, "not handled here"))
            return
        self.guarded(origin, handler, body)

    def guarded(self, origin: Origin, handler: Callable[[Origin, Any], None], body: Any) -> None:
        try:
            handler(origin, body)
        except NbstageError as exc:
            self.fail(origin, exc)
        except Exception:
            log.exception("%s failed on %s", type(self).__name__, type(body).__name__)
            self.fail(origin, NbstageError(ErrorCode.INTERNAL, "internal error; see daemon logs"))

    def answer(self, origin: Origin, reply: object) -> None:
        if origin.preview is not None:
            # Only the daemon's actors answer with previews. Imported here, output_bounds
            # and the reply classes it reads stay out of the `nbstage mcp` edge (SPEC §11).
            from nbstage.actors.common.output_bounds import previewed

            reply = previewed(reply, origin.preview)
        self.send(self.edge, RequestAnswered(origin, dumps(reply), self.notices_for(origin)))

    def fail(self, origin: Origin, error: NbstageError) -> None:
        notices = self.notices_for(origin)
        self.send(self.edge, RequestFailed(origin, error.code, error.message, notices))

    def effect_carriers(self) -> dict[type, Callable[[Any], None]]:
        """How this actor carries out the effects any part may return
        (actors/common/effects.py); an actor's table of its own actions starts here."""
        return {
            Send: lambda x: self.send(x.to, x.message),
            Offload: lambda x: self.offload(x.token, x.work, x.lane, x.reports),
            Wake: lambda x: self.wakeupAfter(timedelta(seconds=x.seconds), payload=x.payload),
            AfterMail: lambda x: self.send(self.edge, TellAfterMail(self.myAddress, x.payload)),
            Answer: lambda x: self.answer(x.origin, x.reply),
            Fail: lambda x: self.fail(x.origin, x.error),
        }

    def carry(self, *effects: Effect) -> None:
        """Carry out ``effects`` in order (see ``effect_carriers``)."""
        carriers = self.effect_carriers()
        for effect in effects:
            carriers[type(effect)](effect)

    def notices_for(self, origin: Origin) -> tuple[Notice, ...]:
        """Lines for the agent that the answer to ``origin`` carries (see RequestAnswered)."""
        return ()

    def offload(
        self, token: Any, work: Callable[..., Any], lane: str | None = None, reports: bool = False
    ) -> None:
        """Run ``work`` off the loop; ``BlockingWorkDone(token, …)`` comes back to this actor.
        With ``reports``, the work is called with ``report(line)``, whose lines come back
        first as WorkProgressed, to the table's ``progress(type(token))`` handler."""
        self.send(self.edge, BlockingWorkRequested(token, work, self.myAddress, lane, reports))

    def _on_work_progressed(self, msg: WorkProgressed, sender: ActorAddress) -> None:
        handler = self.handler_for(progress(type(msg.token)))
        if handler is not None:
            handler(msg.token, msg.line)

    def _on_wakeup(self, msg: WakeupMessage, sender: ActorAddress) -> None:
        """A timer whose payload the table does not name is one an earlier state armed."""
        handler = self.handler_for(wakeup(type(msg.payload)))
        if handler is not None:
            handler(msg.payload)

    def _on_work_done(self, msg: BlockingWorkDone, sender: ActorAddress) -> None:
        handler = self.handler_for(finished(type(msg.token)))
        if handler is None:
            log.warning("%s has no use for finished %r", type(self).__name__, msg.token)
            return
        try:
            handler(msg)
        except Exception:
            log.exception("%s failed on finished %r", type(self).__name__, msg.token)

    def receiveUnrecognizedMessage(self, msg: object, sender: ActorAddress) -> None:
        log.warning("%s ignored %s from %s", type(self).__name__, type(msg).__name__, sender)
