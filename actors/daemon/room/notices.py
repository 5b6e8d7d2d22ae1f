"""The lines a Room adds to its answers, for the agents in it (no actor, no I/O).

A *posted* notice (a merge, a deleted file) goes once to each daemon connection that had
a peer in the room when it was posted, on that connection's next answer from the room.
A *standing* line (autosave paused) goes on every answer until it is withdrawn.
Connections are the edge's ``Origin.conn``: each session manager speaks for one agent on
its own connection.
"""

from __future__ import annotations

from nbstage.protocol.daemon.notices import Notice

KEEP = 16
"""Posted notices kept for connections that have not asked since."""


class NoticeBoard:
    def __init__(self) -> None:
        self.posted: list[tuple[int, Notice]] = []
        self.count = 0
        self.read_up_to: dict[int, int] = {}
        """Connection → the count of notices posted when it last got its notices."""
        self.standing: dict[str, Notice] = {}

    def follow(self, conn: int) -> None:
        """A peer joined from ``conn``: it gets what is posted from now on."""
        self.read_up_to.setdefault(conn, self.count)

    def unfollow(self, conn: int) -> None:
        self.read_up_to.pop(conn, None)
        self._trim()

    def post(self, line: Notice) -> None:
        self.count += 1
        self.posted.append((self.count, line))
        self._trim()

    def stand(self, key: str, line: Notice | None) -> None:
        """Set (or, with None, withdraw) the standing line under ``key``."""
        if line is None:
            self.standing.pop(key, None)
        else:
            self.standing[key] = line

    def take(self, conn: int) -> tuple[Notice, ...]:
        """The lines for an answer on ``conn``: its unread notices, then standing lines."""
        since = self.read_up_to.get(conn)
        fresh: list[Notice] = []
        if since is not None and since < self.count:
            fresh = [line for n, line in self.posted if n > since]
            self.read_up_to[conn] = self.count
            self._trim()
        return (*fresh, *self.standing.values())

    def _trim(self) -> None:
        oldest = min(self.read_up_to.values(), default=self.count)
        self.posted = [(n, line) for n, line in self.posted if n > oldest][-KEEP:]
