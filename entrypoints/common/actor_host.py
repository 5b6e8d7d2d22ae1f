"""One process's actors, driven from its asyncio loop.

Every nbstage process (``nbstage mcp``, its session child, the daemon) holds its
actors together on thespian's ``simpleSystemBase`` (ADR 0002). Actors never block
and never touch the outside world; the process's edge owns the I/O. The host is
the seam between the two:

- the edge hands a message to an actor with :meth:`ActorHost.tell`, which runs
  every delivery that follows from it before returning;
- whatever the actors address to the edge (``host.edge_address``) is handed to the
  edge's ``deliver`` callback, in the order it was sent;
- ``wakeupAfter`` timers fire from a loop callback scheduled for the next one due;
- a ``TellAfterMail`` addressed to the edge is the host's own: its message is told in a
  later turn of the loop, after the edge has taken (and written) every message of the
  delivery under way. A timer due at once would not wait: thespian runs it within
  the same delivery, before the edge gets that delivery's mail.

Only the loop's thread calls in. Worker threads (``offload_runner.py``) report back
through the loop too.

Delivery is never re-entered: a ``tell`` made while the host is already running
(from ``deliver``, say) is queued and runs right after, so mailbox order holds.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable
from typing import Any

from nbstage.actors.common.thespian_tweaks import InProcessSystem
from nbstage.protocol.common import method_cache
from nbstage.protocol.common.host_mail import TellAfterMail

log = logging.getLogger("nbstage.host")

TIMER_SLACK = 0.0002
"""thespian and asyncio read the same monotonic clock through different calls; a
timer callback that fires a hair early would find nothing due and spin."""


class ActorHost:
    def __init__(self, deliver: Callable[[Any], None]) -> None:
        # The process's actors are about to start, so its start-up imports are done.
        method_cache.forget()
        self.loop = asyncio.get_running_loop()
        self._system = InProcessSystem()
        self._deliver = deliver
        self._queued: deque[tuple[Any, Any]] = deque()
        self._running = False
        self._timer: asyncio.TimerHandle | None = None
        self._closed = False

    @property
    def edge_address(self) -> Any:
        return self._system.edge_address

    def create(self, actor_class: type) -> Any:
        return self._system.create(actor_class)

    def tell(self, address: Any, message: Any) -> None:
        if self._closed:
            return
        self._queued.append((address, message))
        self._run()

    def live_actors(self) -> list[str]:
        return self._system.live_actors()

    def close(self) -> None:
        self._closed = True
        if self._timer is not None:
            self._timer.cancel()
        self._system.shutdown()

    def _run(self) -> None:
        if self._running:
            return
        self._running = True
        try:
            while True:
                while self._queued:
                    self._system.post(*self._queued.popleft())
                self._system.run()
                mail = self._system.collect()
                if not mail and not self._queued:
                    break
                for message in mail:
                    self._hand_to_edge(message)
        finally:
            self._running = False
        self._schedule_timer()

    def _hand_to_edge(self, message: Any) -> None:
        if isinstance(message, TellAfterMail):
            # after this delivery's mail, which the edge writes as it takes it
            self.loop.call_soon(self.tell, message.to, message.message)
            return
        try:
            self._deliver(message)
        except Exception:
            log.exception("the edge could not take %s", type(message).__name__)

    def _schedule_timer(self) -> None:
        """Have the loop call back when the next timer is due.

        A callback already set for that moment or sooner stays: most deliveries arm a
        timer later than one already armed, and a callback that finds nothing due only
        sets the next one."""
        delay = self._system.seconds_to_next_timer()
        if delay is None or self._closed:
            return
        when = self.loop.time() + delay + TIMER_SLACK
        if self._timer is not None:
            if self._timer.when() <= when:
                return
            self._timer.cancel()
        self._timer = self.loop.call_at(when, self._timers_due)

    def _timers_due(self) -> None:
        self._timer = None
        self._run()
