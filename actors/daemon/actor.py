"""The Daemon actor: the registry, admission and the set of resident rooms.

It is the only place the registry's bindings change and the only place rooms are
created or removed. Room requests do not pass through here: the edge learns each
room's address (RoomResident) and talks to rooms directly. Its parts keep the state:
the room directory (room_directory.py), who waits for closings (close_waits.py) and
admissions under way (admitting.py); admission.py and reaper.py decide. The rooms that
go (room_departures.py) are handled beside it, through the Daemon.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from datetime import timedelta
from functools import cached_property, partial
from pathlib import Path
from typing import Any

from thespian.actors import ActorAddress, ChildActorExited

from nbstage.actors.common.base import NbActor, finished, request, wakeup
from nbstage.actors.daemon import admitting, room_answers, room_departures, room_start
from nbstage.actors.daemon.admission import StartNewRoom
from nbstage.actors.daemon.close_waits import CloseWaits, Stopping
from nbstage.actors.daemon.environment import environments
from nbstage.actors.daemon.environment_sweep import LANE, sweep_outcome, sweep_work
from nbstage.actors.daemon.host_grants import HostGrants
from nbstage.actors.daemon.host_watch import HostWatch
from nbstage.actors.daemon.registry import Registry, binding_recorded
from nbstage.actors.daemon.room import Room
from nbstage.actors.daemon.room_directory import RoomDirectory, RoomEntry, claim_refused
from nbstage.protocol.common.errors import NbstageError
from nbstage.protocol.common.offload import BlockingWorkDone
from nbstage.protocol.daemon import requests as asks
from nbstage.protocol.daemon_actors import daemon_followups as due
from nbstage.protocol.daemon_actors import host_grants as slots
from nbstage.protocol.daemon_actors import rooms as msgs
from nbstage.protocol.daemon_actors.edge import (
    ClientRequest,
    EventKind,
    Origin,
    RoomEventOccurred,
    RoomResident,
)
from nbstage.protocol.daemon_actors.rooms import CloseReason

log = logging.getLogger("nbstage.daemon")

CHILD_CHECK_TICK = timedelta(milliseconds=100)


class Daemon(NbActor):
    """Admits opens, creates and attaches; owns the registry; creates and removes rooms."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.rooms = RoomDirectory()
        self.registry: Registry | None = None
        self.config: msgs.StartDaemon | None = None
        self.waits = CloseWaits()
        self.admitting: admitting.Admitting | None = None
        self.hosts = HostWatch(())
        self.slots = HostGrants()

    def handlers(self):
        rooms, tree = self.rooms, room_answers.actor_tree
        return {
            msgs.StartDaemon: self._on_start_daemon,
            msgs.StopDaemon: self._on_stop_daemon,
            msgs.RoomStarted: self._on_room_started,
            msgs.RoomStartFailed: partial(room_departures.room_start_failed, self),
            msgs.RoomStatus: self._on_room_status,
            msgs.RoomClosed: partial(room_departures.room_closed, self),
            msgs.ClaimPath: self._on_claim_path,
            msgs.PathBound: self._on_path_bound,
            msgs.PathReleased: lambda m, s: rooms.release(m.notebook_id, m.path),
            ChildActorExited: partial(room_departures.child_actor_exited, self),
            ClientRequest: lambda m, s: self._held_or_served(m.origin, m.body),
            request(asks.OpenNotebook): self._admission,
            request(asks.AttachNotebook): self._admission,
            request(asks.CreateNotebook): self._admission,
            request(asks.EvictRoom): partial(room_departures.evict, self),
            request(asks.RunReaper): self._run_reaper,
            request(asks.CollectEnvironments): lambda o, r: self._sweep_environments(
                o, max(0.0, r.older_than_secs)
            ),
            request(asks.ListRooms): lambda o, r: self.answer(o, room_answers.rooms_listed(rooms)),
            slots.PlaceKernel: lambda m, room: self._watched(
                self.slots.ask(m, room, self.hosts, self._running())
            ),
            slots.KernelHostReleased: lambda m, s: self._watched(self.slots.release(m)),
            request(asks.ListHosts): lambda o, r: self.answer(o, self.hosts.listed(self._load())),
            request(asks.GetStatus): lambda o, r: self.answer(o, room_answers.room_counts(rooms)),
            request(asks.GetActorTree): lambda o, r: self.answer(
                o, tree(rooms, str(self.myAddress), os.getpid())
            ),
            finished(due.KernelspecResolved): lambda d: self._admit(
                self.admitting.kernelspecs_read(d, stopping=self.waits.stopping is not None)
            ),
            finished(due.BindingStored): self._binding_stored,
            finished(due.EnvironmentsSwept): self._environments_swept,
            finished(due.ImportsWarmed): partial(room_start.kernel_imports_warmed, self),
            wakeup(due.NotebookImportsDue): lambda d: self.offload(
                due.NotebookImportsWarmed(), room_start.warm_notebook_imports
            ),
            finished(due.NotebookImportsWarmed): room_start.imports_warmed,
            finished(due.RegistryClosed): lambda d: self.send(
                self.edge, msgs.DaemonStopped(self.waits.stopping.closed)
            ),
            wakeup(due.ReapDue): self._reap_due,
            wakeup(due.HostsCheckDue): lambda d: self._watched(self.hosts.due(d, time.monotonic())),
            finished(due.HostProbed): self._host_probed,
            # The child-check tick carries no payload.
            wakeup(type(None)): lambda none: self.wakeupAfter(CHILD_CHECK_TICK),
        }

    # --- start and stop -------------------------------------------------------------------

    def _on_start_daemon(self, msg: msgs.StartDaemon, sender: ActorAddress) -> None:
        self.config = msg
        self.edge = sender
        self.registry = Registry(Path(msg.state_dir) / "registry.sqlite3")
        self.admitting = admitting.Admitting(self.rooms, msg.settings)
        self.wakeupAfter(CHILD_CHECK_TICK)
        self._schedule_reaper()
        self.send(sender, msgs.DaemonStarted(os.getpid()))
        self.offload(due.ImportsWarmed(), room_start.warm_kernel_imports)
        self.hosts = HostWatch(msg.settings.kernel_hosts, msg.settings.kernel_host_check_secs)
        self.slots = HostGrants(msg.settings.kernel_hosts)
        self.carry(*self.hosts.start(time.monotonic()))

    def _on_stop_daemon(self, msg: msgs.StopDaemon, sender: ActorAddress) -> None:
        self.hosts.stop()
        self.waits.stopping = Stopping(self.rooms.rooms)
        for notebook_id, entry in self.rooms.items():
            if not entry.closing:
                self._close_room(notebook_id, CloseReason.DAEMON_STOPPING)
        self._finish_stop_if_done()

    def _finish_stop_if_done(self) -> None:
        stopping = self.waits.stopping
        if stopping is not None and stopping.finish_now():
            self.offload(due.RegistryClosed(), self.registry.close, "registry")

    # --- the reaper and the environment sweep ---------------------------------------------

    def _reap_due(self, reap: due.ReapDue) -> None:
        self._reap()
        self._sweep_environments(None, environments.UNUSED_FOR)
        self._schedule_reaper()

    def _schedule_reaper(self) -> None:
        interval = timedelta(seconds=self.config.settings.reaper_interval_secs)
        self.wakeupAfter(interval, payload=due.ReapDue())

    def _reap(self) -> list[str]:
        chosen = self.rooms.to_reap(self.config.settings, time.monotonic())
        for notebook_id in chosen:
            self._close_room(notebook_id, CloseReason.REAPED)
        return chosen

    def _run_reaper(self, origin: Origin, req: asks.RunReaper) -> None:
        self._tell(self.waits.reap_begun(origin, self._reap()))

    def _tell(self, answers: list[tuple[Origin, object]]) -> None:
        """Answer each caller, or refuse it with the error its answer is."""
        for origin, reply in answers:
            if isinstance(reply, NbstageError):
                self.fail(origin, reply)
            else:
                self.answer(origin, reply)

    def _sweep_environments(self, origin: Origin | None, older_than: float) -> None:
        """Remove inline environments unused for ``older_than`` seconds that no open
        room's kernel runs in (environment_sweep.py)."""
        in_use = self.rooms.fingerprints_in_use()
        work = sweep_work(self.config.state_dir, in_use, older_than)
        self.offload(due.EnvironmentsSwept(origin, in_use), work, LANE)

    def _environments_swept(self, done: BlockingWorkDone) -> None:
        origin, outcome = done.token.origin, sweep_outcome(done, done.token.kept)
        self._tell([(origin, outcome)] if origin is not None else [])

    def _on_room_status(self, msg: msgs.RoomStatus, sender: ActorAddress) -> None:
        entry = self.rooms.get(msg.notebook_id)
        before = entry.status if entry is not None else None
        self.rooms.note_status(msg)
        self._watched(self.hosts.room_status(before, msg))

    def _watched(self, effects: list[Any]) -> None:
        self.carry(*effects)
        self._share_hosts()

    def _host_probed(self, done: BlockingWorkDone) -> None:
        effects = self.hosts.probed(done, time.monotonic())
        self._watched([*effects, *self.slots.probed(done.token.name, self.hosts, self._running())])

    def _running(self) -> dict[str, str]:
        return self.rooms.kernel_hosts()

    def _load(self) -> dict[str, int]:
        """Kernels per host: the slots granted and the kernels the rooms say run there."""
        return self.slots.load(self._running())

    def _share_hosts(self) -> None:
        """Tell every room what is known of the kernel hosts, when that changed."""
        if not self.hosts.hosts:
            return
        news = self.hosts.news()
        for _, entry in self.rooms.items() if news is not None else ():
            self.send(entry.address, news)

    # --- admission ------------------------------------------------------------------------

    def _held_or_served(self, origin: Origin, body: Any) -> None:
        """A request naming a room that is closing waits for the close to settle (the
        room kept, or gone); it is served then, in the order it came."""
        closing = self.rooms.closing_target(body)
        if closing is not None:
            closing.deferred.append((origin, body))
            return
        self.serve(origin, body)

    def _admission(self, origin: Origin, req: Any) -> None:
        """An open, attach or create; none is admitted once the daemon stops."""
        if self.waits.stopping is not None:
            raise admitting.shutting_down()
        self._admit(self.admitting.admit(origin, req, self.registry))

    def _admit(self, steps: list[admitting.Step]) -> None:
        """Carry out what admitting.py settled on, in order."""
        for step in steps:
            self._carriers[type(step)](step)

    @cached_property
    def _carriers(self) -> dict[type, Callable[[Any], None]]:
        """The effects any actor carries out, and the two steps only the Daemon can."""
        return {
            **self.effect_carriers(),
            admitting.Join: lambda x: self._join(
                self.rooms.get(x.notebook_id), x.origin, x.peer_label, x.created
            ),
            admitting.NewRoom: lambda x: self._start_room(x.start, x.wish, x.origin),
        }

    def _join(self, entry: RoomEntry, origin: Origin, peer_label: str, created: bool) -> None:
        log.info("%s joins %s", peer_label, entry.path or "an untitled notebook")
        entry.joins_sent += 1
        self.send(entry.address, msgs.JoinRoom(origin, peer_label, created, entry.joins_sent))

    def _start_room(self, start: StartNewRoom, wish: room_start.RoomWish, by: Origin) -> None:
        """A Room for ``start``, counted as started by ``by``'s connection."""
        address = self.createActor(Room)
        entry = self.rooms.add(start.notebook_id, address, start.path, wish.ephemeral)
        entry.started_by = by.conn
        seen = self.hosts.told
        self.send(address, room_start.start_message(start, wish, self.config, self.edge, seen))
        if start.binding_pending:
            self._bind(due.BindingStored(start.notebook_id, start.path, address))
        self.send(self.edge, RoomResident(start.notebook_id, address))

    # --- paths and the registry's bindings ------------------------------------------------

    def _bind(self, stored: due.BindingStored) -> None:
        """Record id ↔ path on the registry's lane; admission reads ``by_path`` first, so a
        binding still being written is never missed."""
        registry = self.registry
        self.offload(stored, lambda: registry.bind(stored.notebook_id, stored.path), "registry")

    def _binding_stored(self, done: BlockingWorkDone) -> None:
        recorded = binding_recorded(done)
        if done.token.room is not None:
            self.send(done.token.room, recorded)

    def _on_claim_path(self, msg: msgs.ClaimPath, sender: ActorAddress) -> None:
        holder = self.rooms.claim(msg.path, msg.notebook_id)
        if holder is None:
            self.send(sender, msgs.PathClaimed(msg.path, msg.origin))
        else:
            self.send(sender, claim_refused(msg, holder))

    def _on_path_bound(self, msg: msgs.PathBound, sender: ActorAddress) -> None:
        if self.rooms.bind(msg.notebook_id, msg.path) is None:
            self.send(sender, msgs.PathRecorded(msg.path, msg.origin, "the room is closing"))
        else:
            self._bind(due.BindingStored(msg.notebook_id, msg.path, sender, msg.origin))

    # --- rooms coming and going -----------------------------------------------------------

    def _on_room_started(self, msg: msgs.RoomStarted, sender: ActorAddress) -> None:
        entry = self.rooms.started(msg.notebook_id, msg.pid)
        if entry is not None:
            log.info("room %s opened: %s", msg.notebook_id, entry.path or "untitled")
            event = RoomEventOccurred(EventKind.CREATED, msg.notebook_id, {"path": entry.path})
            self.send(self.edge, event)

    def _close_room(self, notebook_id: str, reason: CloseReason) -> None:
        self.send(self.rooms.close(notebook_id, reason), msgs.CloseRoom(reason))
