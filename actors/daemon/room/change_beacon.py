"""The Room's word that its document changed (issue 25): after any message that moved
the document's revision (an agent's or a person's edit, outputs, a merge with the file),
one ``changed`` room event goes to the daemon's watchers. Sessions subscribed to the
notebook as an MCP resource gather these into one notice per burst
(actors/session/change_bursts.py)."""

from __future__ import annotations

from typing import Any

from nbstage.actors.daemon.room.actions import Action, Send
from nbstage.protocol.daemon_actors.edge import EventKind, RoomEventOccurred


class ChangeBeacon:
    def __init__(self) -> None:
        self.revision: int | None = None
        """The revision last said (None: none yet; the room's first load is not a change)."""

    def after(self, room: Any) -> list[Action]:
        """What to send once ``room`` has handled a message."""
        if room.doc is None:
            return []
        revision = room.doc.revision
        if self.revision is None or revision == self.revision:
            self.revision = revision
            return []
        self.revision = revision
        detail = {"revision": revision}
        return [
            Send(room.edge, RoomEventOccurred(EventKind.CHANGED, room.config.notebook_id, detail))
        ]
