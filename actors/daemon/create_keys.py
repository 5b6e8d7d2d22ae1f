"""Exactly-once creates: which notebook a create_notebook call's idempotency key made.

A session child killed after the daemon accepted its create is replaced, and the
supervisor retries the call under the same key. The Daemon asks this book what to do
with each keyed create: make a room, join the room the key already made, or wait for
the first create of that key to finish. Plain bookkeeping, no actor and no I/O.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from nbstage.protocol.common.frozen import frozen

REMEMBERED_CREATES = 1024

W = TypeVar("W")


@frozen
class MakeRoom:
    """No create of this key is known: make the room (and report it with ``made``)."""


@frozen
class JoinMade:
    """The key already made this notebook: join it instead of making another."""

    notebook_id: str


@frozen
class WaitForFirst:
    """The first create of this key is still being made; the waiter is kept until then."""


@dataclass
class CreateKeys(Generic[W]):
    made_by: OrderedDict[str, str | None] = field(default_factory=OrderedDict)
    """key → the notebook it made, or None while that create is under way."""
    waiting: dict[str, list[W]] = field(default_factory=dict)

    def begin(self, key: str, waiter: W, alive: set[str]) -> MakeRoom | JoinMade | WaitForFirst:
        """A keyed create arrived; ``alive`` holds the notebooks whose rooms still exist."""
        if key in self.made_by:
            notebook_id = self.made_by[key]
            if notebook_id is None:
                self.waiting.setdefault(key, []).append(waiter)
                return WaitForFirst()
            if notebook_id in alive:
                return JoinMade(notebook_id)
        self.made_by[key] = None
        self.made_by.move_to_end(key)
        while len(self.made_by) > REMEMBERED_CREATES:
            oldest, _ = self.made_by.popitem(last=False)
            self.waiting.pop(oldest, None)
        return MakeRoom()

    def made(self, key: str, notebook_id: str) -> list[W]:
        """The first create made ``notebook_id``; returns the waiters, to join it too."""
        if key in self.made_by:
            self.made_by[key] = notebook_id
        return self.waiting.pop(key, [])

    def failed(self, key: str) -> list[W]:
        """The first create failed: forget the key (a retry tries again); returns the
        waiters, to be refused the same way."""
        self.made_by.pop(key, None)
        return self.waiting.pop(key, [])
