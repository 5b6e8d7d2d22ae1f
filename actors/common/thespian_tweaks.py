"""Every use nbstage makes of thespian's internals, in one place.

Each nbstage process runs its actors together on ``simpleSystemBase``, which
delivers messages in the thread that calls into it. nbstage drives it from the
process's asyncio loop (``entrypoints/common/actor_host.py``). thespian's public API is
made for a caller that blocks in ``ask()`` or ``listen()``; a loop must never
block, so four small things come from the base's private side:

1. an edge address whose mail the loop collects without waiting: a private
   context's receive queue;
2. running every delivery that is due, timers included, and returning at once;
3. how long until the next ``wakeupAfter`` timer is due, so the loop can call
   back exactly then instead of polling;
4. which actors still run, so a stopping process can tell that its actors ended
   themselves before the system is shut down under them.

And one repair: the base keeps pending timers in a list that it scans on every
delivery, and timers cannot be cancelled, so a daemon with many waits pending (each
``execute`` with ``wait_secs`` arms one) spent a third of its time in that scan.
:func:`use_timer_heap` keeps them in a heap instead, with the same behaviour.

thespian is pinned (setup.cfg) because of these; ``tests/unit/test_thespian_tweaks.py``
fails loudly if the internals move.
"""

from __future__ import annotations

import heapq
import itertools
import queue
from typing import Any

from thespian.actors import ActorAddress, ActorSystem
from thespian.system import simpleSystemBase
from thespian.system.timing import ExpirationTimer, currentTime

PINNED_THESPIAN = "4.0.1"


_timer_order = itertools.count()


def _heap_init(self: Any) -> None:
    self._wakeUps = []


def _heap_add(self: Any, from_actor: Any, time_period: Any, payload: Any) -> None:
    timer = ExpirationTimer(time_period)
    due = timer.view().remainingSeconds() + currentTime()
    heapq.heappush(self._wakeUps, (due, next(_timer_order), from_actor, timer, payload))


def _heap_pop_expired(self: Any, now: float) -> list[tuple[Any, Any, Any]]:
    expired = []
    while self._wakeUps and self._wakeUps[0][0] <= now:
        _, _, target, timer, payload = heapq.heappop(self._wakeUps)
        expired.append((target, timer, payload))
    return expired


def _heap_next(self: Any) -> Any:
    return self._wakeUps[0][3] if self._wakeUps else None


def _heap_status(self: Any, statusmsg: Any) -> Any:
    statusmsg.addWakeups([(entry[2], entry[3]) for entry in self._wakeUps])
    return statusmsg


def use_timer_heap() -> None:
    manager = simpleSystemBase.WakeupManager
    manager.__init__ = _heap_init
    manager._add_wakeup = _heap_add
    manager._pop_expired_wakeups = _heap_pop_expired
    manager._next_wakeup = _heap_next
    manager.add_wakeups_to_status = _heap_status


class InProcessSystem:
    """A ``simpleSystemBase`` actor system that never blocks its caller."""

    def __init__(self) -> None:
        self.system = ActorSystem("simpleSystemBase", transientUnique=True, logDefs=False)
        self._base = self.system._systemBase
        self._edge = self._base.external_clone()
        self._edge_mail: queue.Queue = self._edge.my_instance.rcvq
        self.edge_address: ActorAddress = self._edge.my_ext_addr

    def create(self, actor_class: type) -> ActorAddress:
        return self.system.createActor(actor_class)

    def post(self, address: ActorAddress, message: Any) -> None:
        """Queue a message from the edge address; nothing runs until :meth:`run`."""
        self._edge.tell(address, message)

    def run(self) -> None:
        """Deliver every queued message and due timer, and whatever they send in turn."""
        self._base._realizeWakeups()
        self._base._runSends()

    def collect(self) -> list[Any]:
        """Everything the actors sent to the edge address since the last call."""
        mail = []
        while True:
            try:
                mail.append(self._edge_mail.get_nowait())
            except queue.Empty:
                return mail

    def seconds_to_next_timer(self) -> float | None:
        due = self._base._next_wakeup()
        if due is None:
            return None
        return max(0.0, due.view(currentTime()).remainingSeconds())

    def live_actors(self) -> list[str]:
        """The class names of the actors still running, thespian's own stand-ins left out."""
        own = (
            simpleSystemBase.BadActor,
            simpleSystemBase.External,
            simpleSystemBase.ExternalPrivate,
        )
        return sorted(
            type(ref.instance).__name__
            for ref in self._base.actorRegistry.values()
            if ref is not None and ref.instance is not None and not isinstance(ref.instance, own)
        )

    def shutdown(self) -> None:
        self.system.shutdown()


def installed_version_matches() -> bool:
    from importlib.metadata import version

    return version("thespian") == PINNED_THESPIAN


use_timer_heap()
