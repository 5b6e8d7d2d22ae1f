"""The Room's handlers for the people watching in JupyterLab (ADR 0004): what each message
changed is mirrored into their shared document once the answers the message produced
have gone out (``AfterMail``); the requests held for its build or its freeze
are served once it is back, and a person's edit is journalled like an agent's. A
person's message takes the document with every change mirrored first. The state is the
sharing part's (sharing.py); these act through the Room."""

from __future__ import annotations

import logging
from typing import Any

from nbstage.actors.common.effects import AfterMail
from nbstage.actors.daemon.room import person_edits
from nbstage.actors.daemon.room.person_said import taken
from nbstage.protocol.common.errors import a_failure
from nbstage.protocol.daemon import lab
from nbstage.protocol.daemon_actors.edge import Origin
from nbstage.protocol.daemon_actors.room_followups import SharedDocMirrorDue

log = logging.getLogger("nbstage.room")


def after_message(room: Any) -> None:
    """What the message changed reaches the daemon's watchers now, and the people
    watching once its answers are out."""
    room.act(*room.sharing.beacon.after(room))
    sharing = room.sharing
    if sharing.mirror_due or not sharing.watched:
        return
    if room.doc is not None and sharing.stalled_at == room.doc.revision:
        return
    if sharing.behind(room.doc, room.peers, room.seat.runs.book.live_cells()):
        sharing.mirror_due = True
        room.act(AfterMail(SharedDocMirrorDue()))


def mirror(room: Any, due: SharedDocMirrorDue | None = None) -> None:
    """Everything the Room changed, into the people's document and out to them. A mirror
    that fails is logged and not tried again until the document changes: tried after
    every message, it would run the daemon's loop hot."""
    sharing = room.sharing
    sharing.mirror_due = False
    if not sharing.watched:
        return
    running, nid = room.seat.runs.book.live_cells(), room.config.notebook_id
    try:
        pushes = sharing.mirror(room.doc, room.peers, running, room.edge, nid)
    except BaseException as exc:
        if not a_failure(exc):
            raise
        log.exception("room %s: the people's document did not take the changes", nid)
        sharing.stalled_at = room.doc.revision if room.doc is not None else None
        return
    sharing.stalled_at = None
    room.act(*pushes)


def joined(room: Any, origin: Origin, req: lab.JoinSharedDoc) -> None:
    mirror(room)
    room.act(*room.sharing.join(origin, req, room.doc, room.peers))


def shared_doc_built(room: Any, done: Any) -> None:
    """The people's requests held for the build are served now, in the order they came,
    after the people who stayed joined through a freeze have what they lacked."""
    running, nid = room.seat.runs.book.live_cells(), room.config.notebook_id
    _served(room, *room.sharing.built(done, room.doc, running, room.edge, nid))


def shared_doc_idle(room: Any, due: Any) -> None:
    running = room.seat.runs.book.live_cells()
    room.act(*room.sharing.idle(due, room.doc, room.peers, running))


def shared_doc_frozen(room: Any, done: Any) -> None:
    """A freeze came back; the people's requests held for it, if any, are served now."""
    running, nid = room.seat.runs.book.live_cells(), room.config.notebook_id
    _served(room, *room.sharing.frozen_back(done, room.doc, running, room.edge, nid))


def _served(room: Any, todo: list[Any], held: list[tuple[Origin, Any]]) -> None:
    room.act(*todo)
    for origin, body in held:
        room.serve(origin, body)


def person_said(room: Any, origin: Origin, req: lab.PassSharedDocMessage) -> None:
    """A person's edit is journalled like an agent's; they hear back once it is. While
    the document is frozen, their awareness is answered without it, and a sync message
    thaws it (held until it is back)."""
    aside = room.sharing.aside(origin, req, room.doc, room.edge)
    if aside is not None:
        room.act(*aside)
        return
    if room.sharing.holds(origin, req):
        return
    mirror(room)
    room.close.refuse("the edit was not taken")
    said = room.sharing.heard(req, room.doc, room.edge)
    if said.records:
        room.notices.post(person_edits.notice(said.records))
    room.act(*taken(said, origin, room.journal, room.file.journalled))
