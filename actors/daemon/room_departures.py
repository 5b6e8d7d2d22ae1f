"""The Daemon's handlers for rooms that go: an eviction asked for, a start that failed,
a close that ended (the room removed, or kept with its edits when its last save failed),
a Room actor that exited on its own. Each answers whoever waited for it (close_waits.py)
and lets the requests held for a closing room go on. The state is the room directory's
(room_directory.py); these act through the Daemon."""

from __future__ import annotations

import logging
from typing import Any

from thespian.actors import ActorExitRequest, ChildActorExited

from nbstage.actors.daemon.close_waits import evictions, kept_room
from nbstage.actors.daemon.reaper import AfterClose, after_close
from nbstage.actors.daemon.room_directory import RoomEntry
from nbstage.protocol.daemon import requests as asks
from nbstage.protocol.daemon.replies import KeptRoom
from nbstage.protocol.daemon_actors import rooms as msgs
from nbstage.protocol.daemon_actors.edge import EventKind, Origin, RoomEventOccurred, RoomGone
from nbstage.protocol.daemon_actors.rooms import CloseReason

log = logging.getLogger("nbstage.daemon")


def evict(daemon: Any, origin: Origin, req: asks.EvictRoom) -> None:
    if daemon.rooms.evict(req.notebook_id, origin):
        daemon._close_room(req.notebook_id, CloseReason.EVICTED)


def room_start_failed(daemon: Any, msg: msgs.RoomStartFailed, sender: Any) -> None:
    log.info("room %s failed to start: %s", msg.notebook_id, msg.message)
    entry = forget_room(daemon, msg.notebook_id)
    # An eviction asked while the room was starting waits for a RoomClosed that the
    # exit below cuts short: the room is gone, with nothing of it left to save.
    daemon._tell(evictions(msg.notebook_id, entry, saved=True))
    daemon.send(sender, ActorExitRequest())


def room_closed(daemon: Any, msg: msgs.RoomClosed, sender: Any) -> None:
    entry, nid = daemon.rooms.get(msg.notebook_id), msg.notebook_id
    if entry is not None:
        reason = entry.close_reason
        stopping = daemon.waits.stopping is not None
        if after_close(reason, msg.saved, stopping) is AfterClose.KEEP:
            keep_room(daemon, nid, kept_room(nid, reason, msg.problem))
            return
        if not msg.saved:
            log.error("room %s removed (%s) unsaved: %s", nid, reason, msg.problem)
        else:
            log.info("room %s closed (%s)", nid, reason)
    forget_room(daemon, nid)
    daemon._tell(daemon.waits.closed(nid, entry, msg.saved))
    daemon.send(sender, ActorExitRequest())
    daemon._finish_stop_if_done()


def keep_room(daemon: Any, notebook_id: str, kept: KeptRoom) -> None:
    """The barrier failed, so the room stays with its edits; admissions held for it go on."""
    entry = daemon.rooms.keep(notebook_id)
    daemon.send(entry.address, msgs.ReopenRoom(kept))
    daemon._tell(daemon.waits.settled(notebook_id, kept))
    replay_deferred(daemon, entry)


def child_actor_exited(daemon: Any, msg: ChildActorExited, sender: Any) -> None:
    notebook_id = daemon.rooms.named_by(msg.childAddress)
    if notebook_id is not None:
        log.warning("room %s exited unexpectedly", notebook_id)
        forget_room(daemon, notebook_id)
        daemon._tell(daemon.waits.exited(notebook_id))
        daemon._finish_stop_if_done()


def replay_deferred(daemon: Any, entry: RoomEntry) -> None:
    deferred, entry.deferred = entry.deferred, []
    for origin, body in deferred:
        daemon._held_or_served(origin, body)


def forget_room(daemon: Any, notebook_id: str) -> RoomEntry | None:
    entry = daemon.rooms.forget(notebook_id)
    daemon.slots.forget(notebook_id)
    if entry is None:
        return None
    daemon.send(daemon.edge, RoomGone(notebook_id))
    if not entry.starting:
        removed = RoomEventOccurred(EventKind.REMOVED, notebook_id, {"path": entry.path})
        daemon.send(daemon.edge, removed)
    replay_deferred(daemon, entry)
    return entry
