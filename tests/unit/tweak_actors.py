"""Actors for tests/unit/test_thespian_tweaks.py; importable by spawned actor processes."""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass

from thespian.actors import Actor

from nbstage.actors import thespian_tweaks


@dataclass(frozen=True)
class PostFromThread:
    count: int


@dataclass(frozen=True)
class Posted:
    n: int


class ThreadPoster(Actor):
    """Posts ``count`` messages to itself from a thread, then reports how many arrived."""

    def __init__(self) -> None:
        super().__init__()
        self.asker = None
        self.expected = 0
        self.arrived = 0

    def receiveMessage(self, msg, sender):
        if isinstance(msg, PostFromThread):
            self.asker, self.expected = sender, msg.count
            post = thespian_tweaks.self_poster(self)
            threading.Thread(target=lambda: [post(Posted(i)) for i in range(msg.count)]).start()
        elif isinstance(msg, Posted):
            self.arrived += 1
            if self.arrived == self.expected:
                self.send(self.asker, self.arrived)


class Parent(Actor):
    """Creates a child actor (nested creation under spawn) and reports the child's pid."""

    def receiveMessage(self, msg, sender):
        if msg == "spawn-child":
            self.asker = sender
            self.send(self.createActor(Child), "pid")
        elif isinstance(msg, int):
            self.send(self.asker, msg)


class Child(Actor):
    def receiveMessage(self, msg, sender):
        if msg == "pid":
            self.send(sender, os.getpid())
