"""The Room's handlers for who comes and goes: its own start (the Daemon's StartRoom, the
document loaded or refused, the joins held back for the start let in), an agent's join,
and the close the Daemon asks for. The state is the opening, peers and closing parts';
these act through the Room."""

from __future__ import annotations

import os
from typing import Any

from nbstage.actors.daemon.room import actions, views
from nbstage.actors.daemon.room.closing import closing_error
from nbstage.protocol.common.errors import NbstageError
from nbstage.protocol.daemon_actors import rooms


def start_room(room: Any, msg: rooms.StartRoom, sender: Any) -> None:
    room.config, room.daemon, room.edge = msg, sender, msg.edge
    room.journal.start(msg.notebook_id, msg.state_dir)
    room.sharing.idle_secs = msg.settings.shared_doc_idle_secs
    room.deps.start(msg)
    room.peers.start(msg)
    room.file.start(msg, sender)
    has_runtime = msg.source is not rooms.RoomSource.NEW or msg.kernelspec is not None
    room.seat.start(msg, has_runtime, sender)
    room.env.kernel_name = msg.kernelspec.name if msg.kernelspec is not None else None
    room.act(*room.opening.start(msg, room.file.lane))


def loaded(room: Any, done: actions.Loaded) -> None:
    room.doc = done.doc
    if done.stamp is not None:
        room.file.disk.stamp, room.file.disk.base = done.stamp, done.base
    room.file.saved_revision = room.doc.revision
    room.act(*room.opening.loaded(room.config, room.file.journalled, room.file.lane))


def start_failed(room: Any, error: NbstageError) -> None:
    room.doc, room.opening.error = None, error
    failed = rooms.RoomStartFailed(room.config.notebook_id, error.code, error.message)
    room.send(room.daemon, failed)
    fail_held_joins(room, error)


def fail_held_joins(room: Any, error: NbstageError) -> None:
    room.act(*room.peers.refuse_held(room.opening.release(), error))


def started(room: Any, joins: tuple[rooms.JoinRoom, ...]) -> None:
    """The Daemon hears of it first, then the joins held come in; edits the journal gave
    back are said to them."""
    room.send(room.daemon, rooms.RoomStarted(room.config.notebook_id, os.getpid()))
    room.act(actions.ReportStatus())
    for join in joins:
        join_room(room, join, room.daemon)
    if (restored := room.journal.restored_notice(room.file.path)) is not None:
        room.notices.post(restored)


def join_room(room: Any, msg: rooms.JoinRoom, sender: Any) -> None:
    if room.opening.held_back(msg):
        return
    room.peers.saw(msg.join_seq)
    if room.close.asked:
        room.fail(msg.origin, closing_error("nobody joined it"))
        return
    if room.doc is None:
        room.fail(msg.origin, room.opening.unloaded_error())
        return
    peer_id = room.peers.join(msg.peer_label, msg.origin.conn)
    room.act(*room.file.arm_check(room.file.path, True), *room.seat.peer_joined())
    room.act(*room.peers.welcomed(msg, peer_id, views.facts(room)))


def close_room(room: Any, msg: rooms.CloseRoom, sender: Any) -> None:
    """Stop the kernel, then save what is unsaved; RoomClosed once the save is done and
    the kernel has stopped. Joins held for the start, and the people's requests held for
    a build or a freeze of the shared document, are answered now: the Daemon ends this
    room once it is closed, maybe before that work comes back."""
    room.close.by = sender
    fail_held_joins(room, closing_error("nobody joined it"))
    room.act(*room.sharing.refuse_held(closing_error("the shared document was not opened")))
    room.act(*room.close.begin(msg.reason, loaded=room.doc is not None))
