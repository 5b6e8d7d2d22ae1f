"""Once-only keys: a request with an idempotency key is carried out once per room.

A repeat gets the first answer, or waits for it while the first is under way. The memo
is bounded (the oldest keys go first); a refusal is not remembered, so a repeat after
one tries again.
"""

from __future__ import annotations

from collections import OrderedDict

from nbstage.protocol.daemon_actors.edge import Origin

REMEMBERED_KEYS = 512


class OnceKeys:
    def __init__(self, size: int = REMEMBERED_KEYS) -> None:
        self.size = size
        self.applied: OrderedDict[str, object] = OrderedDict()
        """Scoped idempotency key → the reply (or execution id) it was first answered with."""
        self.under_way: dict[Origin, str] = {}
        """A keyed request still being carried out (a save, a restart) → its scoped key."""
        self.repeats: dict[str, list[Origin]] = {}
        """Scoped key → repeats that arrived while its first request was carried out."""

    def known(self, key: str | None) -> bool:
        return key is not None and key in self.applied

    def first_answer(self, key: str) -> object:
        return self.applied[key]

    def wait_if_under_way(self, key: str | None, origin: Origin) -> bool:
        """True when ``key``'s first request is still being carried out: ``origin`` waits."""
        if key is None or key not in self.repeats:
            return False
        self.repeats[key].append(origin)
        return True

    def begin(self, key: str | None, origin: Origin) -> None:
        """``origin`` carries ``key`` out; it is answered later, through ``answered``."""
        if key is None:
            return
        self.repeats[key] = []
        self.under_way[origin] = key

    def remember(self, key: str | None, result: object) -> None:
        if key is None:
            return
        self.applied[key] = result
        while len(self.applied) > self.size:
            self.applied.popitem(last=False)

    def answered(self, origin: Origin, reply: object) -> list[Origin]:
        """``origin`` got ``reply``: its key remembers it; the repeats get it too."""
        key = self.under_way.pop(origin, None)
        if key is None:
            return []
        self.remember(key, reply)
        return self.repeats.pop(key, [])

    def failed(self, origin: Origin) -> list[Origin]:
        """``origin`` was refused: its repeats are too, and the key is not remembered."""
        key = self.under_way.pop(origin, None)
        return [] if key is None else self.repeats.pop(key, [])
