"""Drive real actors in one process (simpleSystemBase) and record what they send out.

A Recorder stands in for the socket edge and for the Daemon: it forwards
messages on the test's behalf (so replies come back to it) and keeps everything
it receives. Tests then inject messages in the exact order a race needs.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from thespian.actors import Actor, ActorAddress, ActorSystem


@dataclass(frozen=True)
class Forward:
    target: Any
    message: Any


@dataclass(frozen=True)
class Recorded:
    """Ask the Recorder for everything it received so far."""


class Recorder(Actor):
    def __init__(self) -> None:
        super().__init__()
        self.seen: list[Any] = []

    def receiveMessage(self, msg: Any, sender: ActorAddress) -> None:
        if isinstance(msg, Forward):
            self.send(msg.target, msg.message)
        elif isinstance(msg, Recorded):
            self.send(sender, list(self.seen))
        else:
            self.seen.append(msg)


class ActorBench:
    def __init__(self) -> None:
        self.system = ActorSystem("simpleSystemBase", transientUnique=True)
        self.recorder = self.system.createActor(Recorder)

    def close(self) -> None:
        self.system.shutdown()

    def create(self, cls: type) -> ActorAddress:
        return self.system.createActor(cls)

    def send(self, target: ActorAddress, message: Any) -> None:
        """Deliver ``message`` to ``target`` as if the Recorder sent it."""
        self.system.tell(self.recorder, Forward(target, message))

    def seen(self) -> list[Any]:
        return self.system.ask(self.recorder, Recorded(), 5)

    def seen_of(self, kind: type) -> list[Any]:
        return [m for m in self.seen() if isinstance(m, kind)]

    def run_until(self, predicate: Callable[[], Any], timeout: float = 5.0) -> Any:
        """Let timers fire until ``predicate`` holds; fail if it never does."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = predicate()
            if value:
                return value
            self.system.listen(0.005)
        raise AssertionError("condition never held while actors ran")
