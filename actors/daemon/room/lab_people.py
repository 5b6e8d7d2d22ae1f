"""The Room's handlers for the people watching in JupyterLab (ADR 0004): what each message
changed is mirrored into their shared document, the requests held for its build are
served once it is built, and a person's edit is journalled like an agent's. The state is
the sharing part's (sharing.py); these act through the Room."""

from __future__ import annotations

from typing import Any

from nbstage.actors.daemon.room import person_edits, sharing
from nbstage.protocol.daemon import lab
from nbstage.protocol.daemon_actors.edge import Origin


def after_message(room: Any) -> None:
    """What the message changed reaches the people watching and the daemon's watchers."""
    room.act(*room.sharing.beacon.after(room))
    if room.sharing.watched:
        running, nid = room.seat.runs.book.live_cells(), room.config.notebook_id
        room.act(*room.sharing.mirror(room.doc, room.peers, running, room.edge, nid))


def joined(room: Any, origin: Origin, req: lab.JoinSharedDoc) -> None:
    room.act(*room.sharing.join(origin, req, room.doc, room.peers))


def shared_doc_built(room: Any, done: Any) -> None:
    """The people's requests held for the build are served now, in the order they came."""
    running = room.seat.runs.book.live_cells()
    todo, held = room.sharing.built(done, room.doc, running)
    room.act(*todo)
    for origin, body in held:
        room.serve(origin, body)


def person_said(room: Any, origin: Origin, req: lab.PassSharedDocMessage) -> None:
    """A person's edit is journalled like an agent's; they hear back once it is."""
    if room.sharing.holds(origin, req):
        return
    room.close.refuse("the edit was not taken")
    said = room.sharing.heard(req, room.doc, room.edge)
    if said.records:
        room.notices.post(person_edits.notice(said.records))
    room.act(*sharing.taken(said, origin, room.journal, room.file.journalled))
