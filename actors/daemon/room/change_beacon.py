"""The Room's word that its document changed (issue 25): after a message that moved the
document's revision (an agent's or a person's edit, outputs, a merge with the file), a
``changed`` room event goes to the daemon's watchers. It is said at once, then at most
once per PAUSE while changes go on, so a run that prints or a flood of edits costs the
watchers a few frames a second; the last revision is always said. Sessions subscribed
to the notebook as an MCP resource gather these into one notice per burst
(actors/session/change_bursts.py)."""

from __future__ import annotations

from typing import Any, Final

from nbstage.actors.daemon.room.actions import Action, Send, Wake
from nbstage.protocol.daemon_actors.edge import EventKind, RoomEventOccurred
from nbstage.protocol.daemon_actors.room_followups import ChangeSayDue

PAUSE: Final = 0.1


class ChangeBeacon:
    def __init__(self) -> None:
        self.revision: int | None = None
        """The revision last said (None: none yet; the room's first load is not a change)."""
        self.pausing = False

    def after(self, room: Any) -> list[Action]:
        """What to send once ``room`` has handled a message."""
        if room.doc is None or self.pausing:
            return []
        if self.revision is None or room.doc.revision == self.revision:
            self.revision = room.doc.revision
            return []
        return self._say(room)

    def pause_over(self, room: Any) -> list[Action]:
        self.pausing = False
        return self.after(room)

    def _say(self, room: Any) -> list[Action]:
        self.revision, self.pausing = room.doc.revision, True
        detail = {"revision": self.revision}
        event = RoomEventOccurred(EventKind.CHANGED, room.config.notebook_id, detail)
        return [Send(room.edge, event), Wake(PAUSE, ChangeSayDue())]
