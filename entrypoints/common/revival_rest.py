"""A client's rest after a revival whose daemon did not come up (entrypoints/control/
daemon_revival.py says when): a daemon that dies as it starts is not launched again at
every refused link or page for as long as the client runs. Shared by the Lab edge and a
session child; kept apart from the revival itself, which a session child loads only
when it first needs it."""

from __future__ import annotations

from collections.abc import Callable

REST_SECS = 60.0


class Rest:
    """While it lasts, the client starts no daemon; it still finds one that answers."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self.until = 0.0

    @property
    def on(self) -> bool:
        return self._clock() < self.until

    def begin(self) -> None:
        self.until = self._clock() + REST_SECS
