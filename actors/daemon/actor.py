"""The Daemon actor: the registry, admission and the set of resident rooms.

It is the only place the registry's bindings change and the only place rooms are
created or removed. Room requests do not pass through here: the edge learns each
room's address (RoomResident) and talks to rooms directly.
"""

from __future__ import annotations

import logging
import os
import time
import uuid
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from thespian.actors import ActorAddress, ActorExitRequest, ChildActorExited

from nbstage.actors.common.base import NbActor, finished, request, wakeup
from nbstage.actors.daemon.admission import (
    AttachFacts,
    JoinResident,
    Refuse,
    StartNewRoom,
    admit_attach,
    admit_open,
    refuse_beyond_limits,
)
from nbstage.actors.daemon.create_keys import CreateKeys, JoinMade, WaitForFirst
from nbstage.actors.daemon.environment import environments
from nbstage.actors.daemon.kernel.kernelspecs import NoKernelspec, choose_for_runtime
from nbstage.actors.daemon.notebook.notebook_files import absolute_notebook_path
from nbstage.actors.daemon.reaper import (
    AfterClose,
    RoomFacts,
    after_close,
    choose_rooms_to_reap,
    is_reserved,
)
from nbstage.actors.daemon.registry import Registry
from nbstage.actors.daemon.room import Room
from nbstage.protocol.common.errors import ErrorCode, NbstageError
from nbstage.protocol.common.offload import BlockingWorkDone
from nbstage.protocol.daemon.replies import (
    ActorRole,
    ActorTree,
    EnvironmentsCollected,
    KeptRoom,
    KernelNode,
    PeerView,
    RoomCounts,
    RoomEvicted,
    RoomNode,
    RoomsListed,
    RoomsReaped,
    RoomView,
)
from nbstage.protocol.daemon.requests import (
    AttachNotebook,
    CollectEnvironments,
    CreateNotebook,
    EvictRoom,
    GetActorTree,
    GetStatus,
    ListRooms,
    OpenNotebook,
    RunReaper,
)
from nbstage.protocol.daemon_actors.daemon_followups import (
    BindingStored,
    EnvironmentsSwept,
    ImportsWarmed,
    KernelspecResolved,
    ReapDue,
    RegistryClosed,
)
from nbstage.protocol.daemon_actors.edge import (
    ClientRequest,
    EventKind,
    Origin,
    RoomEventOccurred,
    RoomGone,
    RoomResident,
)
from nbstage.protocol.daemon_actors.kernels import KernelspecInfo, KernelState
from nbstage.protocol.daemon_actors.rooms import (
    ClaimPath,
    CloseReason,
    CloseRoom,
    DaemonStarted,
    DaemonStopped,
    JoinRoom,
    PathBound,
    PathClaimed,
    PathRecorded,
    PathRefused,
    PathReleased,
    ReopenRoom,
    RoomClosed,
    RoomSource,
    RoomStarted,
    RoomStartFailed,
    RoomStatus,
    StartDaemon,
    StartRoom,
    StopDaemon,
)

log = logging.getLogger("nbstage.daemon")

CHILD_CHECK_TICK = timedelta(milliseconds=100)


@dataclass
class RoomEntry:
    address: ActorAddress
    path: str | None
    ephemeral: bool
    starting: bool = True
    status: RoomStatus | None = None
    closing: bool = False
    close_reason: CloseReason | None = None
    joins_sent: int = 0
    pid: int | None = None
    deferred: list[tuple[Origin, Any]] = field(default_factory=list)
    """Admissions that arrived while the room was closing; replayed once it is gone or kept."""
    evicted_by: list[Origin] = field(default_factory=list)
    """Operators waiting for this room's eviction to finish."""
    started_by: int | None = None
    """The client connection whose create, open or attach started the room."""

    @property
    def reserved(self) -> bool:
        """Being created or joined: such a room is never reaped."""
        seen = self.status.joins_seen if self.status is not None else 0
        return is_reserved(self.starting, self.joins_sent, seen)

    @property
    def fingerprint(self) -> str | None:
        """The dependency fingerprint of the environment its kernel runs in, if inline."""
        env = self.status.environment if self.status is not None else None
        return env.fingerprint if env is not None else None

    def facts(self, notebook_id: str) -> RoomFacts:
        status = self.status
        return RoomFacts(
            notebook_id,
            peers=len(status.peers) if status else 0,
            has_kernel=status is not None and status.kernel_status is not KernelState.NONE,
            idle_since=status.idle_since if status else None,
            reserved=self.reserved,
        )


@dataclass
class _ReapReport:
    """An operator's ``reap``, answered once every room it chose is gone or kept."""

    origin: Origin
    chosen: list[str]
    waiting: set[str]
    kept: dict[str, KeptRoom] = field(default_factory=dict)


@dataclass
class _Stopping:
    waiting: set[str] = field(default_factory=set)
    closed: int = 0
    done: bool = False


class Daemon(NbActor):
    """Admits opens, creates and attaches; owns the registry; creates and removes rooms."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.rooms: dict[str, RoomEntry] = {}
        self.by_path: dict[str, str] = {}
        self.registry: Registry | None = None
        self.config: StartDaemon | None = None
        self.stopping: _Stopping | None = None
        self.reap_reports: list[_ReapReport] = []
        self.create_keys: CreateKeys[tuple[Origin, CreateNotebook]] = CreateKeys()

    def _on_start_daemon(self, msg: StartDaemon, sender: ActorAddress) -> None:
        self.config = msg
        self.edge = sender
        self.registry = Registry(Path(msg.state_dir) / "registry.sqlite3")
        self.wakeupAfter(CHILD_CHECK_TICK)
        self._schedule_reaper()
        self.send(sender, DaemonStarted(os.getpid()))
        self.offload(ImportsWarmed(), _warm_imports)

    def handlers(self):
        return {
            StartDaemon: self._on_start_daemon,
            RoomStarted: self._on_room_started,
            RoomStartFailed: self._on_room_start_failed,
            RoomStatus: self._on_room_status,
            ClaimPath: self._on_claim_path,
            PathBound: self._on_path_bound,
            PathReleased: self._on_path_released,
            StopDaemon: self._on_stop_daemon,
            RoomClosed: self._on_room_closed,
            ChildActorExited: self._on_child_actor_exited,
            request(OpenNotebook): self._open,
            request(AttachNotebook): self._attach,
            request(CreateNotebook): self._create,
            request(ListRooms): self._list_rooms,
            request(GetStatus): self._status,
            request(RunReaper): self._run_reaper,
            request(CollectEnvironments): self._collect_environments,
            request(EvictRoom): self._evict,
            request(GetActorTree): self._tree,
            finished(KernelspecResolved): self._kernelspec_resolved,
            finished(BindingStored): self._binding_stored,
            finished(RegistryClosed): self._registry_closed,
            finished(ImportsWarmed): self._imports_warmed,
            finished(EnvironmentsSwept): self._environments_swept,
            wakeup(ReapDue): self._reap_due,
            # The child-check tick carries no payload.
            wakeup(type(None)): self._child_check_due,
        }

    def _reap_due(self, due: ReapDue) -> None:
        self._reap()
        self._sweep_environments(None, environments.UNUSED_FOR)
        self._schedule_reaper()

    def _child_check_due(self, due: None) -> None:
        self.wakeupAfter(CHILD_CHECK_TICK)

    def _schedule_reaper(self) -> None:
        interval = timedelta(seconds=self.config.settings.reaper_interval_secs)
        self.wakeupAfter(interval, payload=ReapDue())

    def _reap(self) -> list[str]:
        settings = self.config.settings
        chosen = choose_rooms_to_reap(
            [entry.facts(nid) for nid, entry in self.rooms.items() if not entry.closing],
            time.monotonic(),
            settings.reaper_ttl_secs,
            settings.reaper_soft_cap,
        )
        for notebook_id in chosen:
            self._close_room(notebook_id, CloseReason.REAPED)
        return chosen

    def _sweep_environments(self, origin: Origin | None, older_than: float) -> None:
        """Remove inline environments unused for ``older_than`` seconds that no open
        room's kernel runs in; the files are removed on the edge, one sweep at a time."""
        in_use = tuple(sorted({e.fingerprint for e in self.rooms.values() if e.fingerprint}))
        root = environments.envs_dir(self.config.state_dir)
        self.offload(
            EnvironmentsSwept(origin, in_use),
            lambda: environments.collect_envs(root, in_use, time.time(), older_than),
            "environments",
        )

    def _collect_environments(self, origin: Origin, req: CollectEnvironments) -> None:
        self._sweep_environments(origin, max(0.0, req.older_than_secs))

    def _environments_swept(self, done: BlockingWorkDone) -> None:
        token: EnvironmentsSwept = done.token
        if not done.ok:
            log.warning("the environment sweep failed: %s", done.error)
            if token.origin is not None:
                self.fail(token.origin, NbstageError(ErrorCode.INTERNAL, str(done.error)))
            return
        removed = [str(path) for path in done.result]
        if removed:
            log.info("removed %d unused environments: %s", len(removed), ", ".join(removed))
        if token.origin is not None:
            self.answer(token.origin, EnvironmentsCollected(removed, list(token.kept)))

    def _run_reaper(self, origin: Origin, req: RunReaper) -> None:
        chosen = self._reap()
        self.reap_reports.append(_ReapReport(origin, chosen, set(chosen)))
        self._answer_reaps()

    def _reap_settled(self, notebook_id: str, kept: KeptRoom | None = None) -> None:
        for report in self.reap_reports:
            if notebook_id in report.waiting:
                report.waiting.discard(notebook_id)
                if kept is not None:
                    report.kept[notebook_id] = kept
        self._answer_reaps()

    def _answer_reaps(self) -> None:
        done = [report for report in self.reap_reports if not report.waiting]
        self.reap_reports = [report for report in self.reap_reports if report.waiting]
        for report in done:
            reaped = [nid for nid in report.chosen if nid not in report.kept]
            kept = [report.kept[nid] for nid in report.chosen if nid in report.kept]
            self.answer(report.origin, RoomsReaped(reaped, kept))

    def _close_room(self, notebook_id: str, reason: CloseReason) -> None:
        entry = self.rooms[notebook_id]
        entry.closing = True
        entry.close_reason = reason
        self.send(entry.address, CloseRoom(reason))

    def _evict(self, origin: Origin, req: EvictRoom) -> None:
        entry = self.rooms.get(req.notebook_id)
        if entry is None:
            raise NbstageError(ErrorCode.NOT_FOUND, f"No room {req.notebook_id} is resident.")
        entry.evicted_by.append(origin)
        if not entry.closing:
            self._close_room(req.notebook_id, CloseReason.EVICTED)
        else:
            entry.close_reason = CloseReason.EVICTED

    def _tree(self, origin: Origin, req: GetActorTree) -> None:
        rooms = []
        for notebook_id, entry in self.rooms.items():
            status = entry.status
            kernel = None
            if status is not None and status.kernel_actor_pid is not None:
                kernel = KernelNode(status.kernel_actor_pid, status.kernel_pid)
            address = str(entry.address)
            rooms.append(RoomNode(ActorRole.ROOM, notebook_id, address, entry.pid, kernel))
        tree = ActorTree(ActorRole.DAEMON, str(self.myAddress), os.getpid(), rooms)
        self.answer(origin, tree)

    def receiveMsg_ClientRequest(self, msg: Any, sender: ActorAddress) -> None:
        closing = self._closing_target(msg.body)
        if closing is not None:
            closing.deferred.append((msg.origin, msg.body))
            return
        super().receiveMsg_ClientRequest(msg, sender)

    def _closing_target(self, body: Any) -> RoomEntry | None:
        """The closing room an admission would join, if any: it must wait until it is gone."""
        if isinstance(body, AttachNotebook):
            entry = self.rooms.get(body.notebook_id)
        elif isinstance(body, OpenNotebook) and Path(body.path).expanduser().is_absolute():
            entry = self.rooms.get(self.by_path.get(absolute_notebook_path(body.path), ""))
        else:
            entry = None
        return entry if entry is not None and entry.closing else None

    def _refuse_while_stopping(self) -> None:
        if self.stopping is not None:
            raise NbstageError(ErrorCode.SHUTTING_DOWN, "The daemon is shutting down.")

    def _open(self, origin: Origin, req: OpenNotebook) -> None:
        self._refuse_while_stopping()
        path = absolute_notebook_path(req.path)
        registered = self.registry.id_for(path)
        admission = admit_open(
            self.by_path, path, Path(path).is_file(), registered, str(uuid.uuid4())
        )
        self._carry_out(origin, admission, req.peer_label, ephemeral=False, kernelspec=None)

    def _attach(self, origin: Origin, req: AttachNotebook) -> None:
        self._refuse_while_stopping()
        bound = self.registry.path_for(req.notebook_id)
        untitled = (
            None if req.notebook_id in self.rooms else self.registry.load_untitled(req.notebook_id)
        )
        facts = AttachFacts(
            bound_path=bound,
            bound_file_exists=bound is not None and Path(bound).is_file(),
            has_untitled=untitled is not None,
        )
        admission = admit_attach(self.rooms, req.notebook_id, facts)
        self._carry_out(
            origin, admission, req.peer_label, ephemeral=False, kernelspec=None, content=untitled
        )

    def _create(self, origin: Origin, req: CreateNotebook) -> None:
        self._refuse_while_stopping()
        if req.key is not None:
            alive = {nid for nid, entry in self.rooms.items() if not entry.closing}
            match self.create_keys.begin(req.key, (origin, req), alive):
                case JoinMade(notebook_id):
                    self._join(self.rooms[notebook_id], origin, req.peer_label, created=True)
                    return
                case WaitForFirst():
                    return
        if req.runtime is None:
            self._create_room(origin, req, None)
            return

        def scan() -> dict[str, KernelspecInfo]:
            from nbstage.actors.daemon.kernel.kernel_backend import installed_kernelspecs

            return installed_kernelspecs()

        self.offload(KernelspecResolved(origin, req), scan)

    def _kernelspec_resolved(self, done: BlockingWorkDone) -> None:
        origin, req = done.token.origin, done.token.request
        if done.error is not None:
            error = NbstageError(ErrorCode.INTERNAL, f"kernelspec scan: {done.error}")
            self._create_failed(origin, req, error)
            return
        specs: dict[str, KernelspecInfo] = done.result
        chosen = choose_for_runtime(req.runtime, {n: s.language for n, s in specs.items()})
        if isinstance(chosen, NoKernelspec):
            self._create_failed(
                origin, req, NbstageError(ErrorCode.UNKNOWN_RUNTIME, chosen.message)
            )
        else:
            self._create_room(origin, req, specs[chosen])

    def _create_room(
        self, origin: Origin, req: CreateNotebook, kernelspec: KernelspecInfo | None
    ) -> None:
        notebook_id = str(uuid.uuid4())
        try:
            self._refuse_while_stopping()
            admission = StartNewRoom(notebook_id, RoomSource.NEW, None)
            self._carry_out(
                origin, admission, req.peer_label, req.ephemeral, kernelspec, req.working_dir
            )
        except NbstageError as exc:
            self._create_failed(origin, req, exc)
            return
        if req.key is not None:
            for waiter, repeat in self.create_keys.made(req.key, notebook_id):
                self._join(self.rooms[notebook_id], waiter, repeat.peer_label, created=True)

    def _create_failed(self, origin: Origin, req: CreateNotebook, error: NbstageError) -> None:
        """Refuse the create, and every repeat of its key waiting on it; a later repeat
        tries afresh."""
        waiting = self.create_keys.failed(req.key) if req.key is not None else []
        for refused, _ in [(origin, req), *waiting]:
            self.fail(refused, error)

    def _imports_warmed(self, done: BlockingWorkDone) -> None:
        if not done.ok:
            log.warning("warming the notebook and kernel imports failed: %s", done.error)

    def _bind(self, stored: BindingStored) -> None:
        """Record id ↔ path on the registry's lane; admission reads ``by_path`` first, so a
        binding still being written is never missed."""
        registry = self.registry
        self.offload(stored, lambda: registry.bind(stored.notebook_id, stored.path), "registry")

    def _binding_stored(self, done: BlockingWorkDone) -> None:
        stored: BindingStored = done.token
        if not done.ok:
            log.error("could not record %s at %s: %s", stored.notebook_id, stored.path, done.error)
        if stored.room is not None:
            problem = None if done.ok else f"the registry could not record the path: {done.error}"
            self.send(stored.room, PathRecorded(stored.path, stored.origin, problem))

    def _registry_closed(self, done: BlockingWorkDone) -> None:
        self.send(self.edge, DaemonStopped(self.stopping.closed))

    def _carry_out(
        self,
        origin: Origin,
        admission: JoinResident | StartNewRoom | Refuse,
        peer_label: str,
        ephemeral: bool,
        kernelspec: KernelspecInfo | None,
        working_dir: str | None = None,
        content: bytes | None = None,
    ) -> None:
        match admission:
            case Refuse(code, message):
                raise NbstageError(code, message)
            case JoinResident(notebook_id):
                self._join(self.rooms[notebook_id], origin, peer_label, created=False)
            case StartNewRoom(notebook_id, source, path, binding_pending):
                self._refuse_beyond_limits(origin)
                entry = self._start_room(
                    notebook_id,
                    source,
                    path,
                    ephemeral,
                    kernelspec,
                    working_dir,
                    content,
                    binding_pending,
                )
                entry.started_by = origin.conn
                self._join(entry, origin, peer_label, created=source is RoomSource.NEW)

    def _refuse_beyond_limits(self, origin: Origin) -> None:
        settings = self.config.settings
        mine = sum(1 for entry in self.rooms.values() if entry.started_by == origin.conn)
        refusal = refuse_beyond_limits(
            len(self.rooms), mine, settings.max_rooms, settings.max_rooms_per_connection
        )
        if refusal is not None:
            raise NbstageError(refusal.code, refusal.message)

    def _join(self, entry: RoomEntry, origin: Origin, peer_label: str, created: bool) -> None:
        log.info("%s joins %s", peer_label, entry.path or "an untitled notebook")
        entry.joins_sent += 1
        self.send(entry.address, JoinRoom(origin, peer_label, created, entry.joins_sent))

    def _start_room(
        self,
        notebook_id: str,
        source: RoomSource,
        path: str | None,
        ephemeral: bool,
        kernelspec: KernelspecInfo | None,
        working_dir: str | None,
        content: bytes | None = None,
        binding_pending: bool = False,
    ) -> RoomEntry:
        address = self.createActor(Room)
        entry = RoomEntry(address, path, ephemeral)
        self.rooms[notebook_id] = entry
        if path is not None:
            self.by_path[path] = notebook_id
        cfg = self.config
        self.send(
            address,
            StartRoom(
                notebook_id,
                source,
                path,
                ephemeral,
                kernelspec,
                working_dir,
                cfg.state_dir,
                cfg.kernel_dir,
                cfg.settings,
                self.edge,
                content=content,
                run=cfg.run,
                earlier=cfg.earlier,
                binding_pending=binding_pending,
            ),
        )
        if binding_pending:
            self._bind(BindingStored(notebook_id, path, address))
        self.send(self.edge, RoomResident(notebook_id, address))
        return entry

    def _on_room_started(self, msg: RoomStarted, sender: ActorAddress) -> None:
        entry = self.rooms.get(msg.notebook_id)
        if entry is not None:
            log.info("room %s opened: %s", msg.notebook_id, entry.path or "untitled")
            entry.starting = False
            entry.pid = msg.pid
            self.send(
                self.edge,
                RoomEventOccurred(EventKind.CREATED, msg.notebook_id, {"path": entry.path}),
            )

    def _on_room_start_failed(self, msg: RoomStartFailed, sender: ActorAddress) -> None:
        log.info("room %s failed to start: %s", msg.notebook_id, msg.message)
        entry = self.rooms.get(msg.notebook_id)
        self._forget_room(msg.notebook_id)
        # An eviction asked while the room was starting waits for a RoomClosed that the
        # exit below cuts short: the room is gone, with nothing of it left to save.
        self._answer_evictions(entry, msg.notebook_id, saved=True)
        self.send(sender, ActorExitRequest())

    def _answer_evictions(self, entry: RoomEntry | None, notebook_id: str, saved: bool) -> None:
        for origin in entry.evicted_by if entry is not None else []:
            self.answer(origin, RoomEvicted(notebook_id, saved))

    def _on_room_status(self, msg: RoomStatus, sender: ActorAddress) -> None:
        entry = self.rooms.get(msg.notebook_id)
        if entry is not None:
            entry.status = msg

    def _on_claim_path(self, msg: ClaimPath, sender: ActorAddress) -> None:
        path = msg.path
        holder = self.by_path.get(path)
        if holder is not None and holder != msg.notebook_id:
            self.send(
                sender,
                PathRefused(
                    path,
                    msg.origin,
                    ErrorCode.PATH_ALREADY_OPEN,
                    f"{path} is open in notebook {holder}; save to another path or "
                    "connect to that notebook instead.",
                ),
            )
            return
        self.by_path[path] = msg.notebook_id
        self.send(sender, PathClaimed(path, msg.origin))

    def _on_path_bound(self, msg: PathBound, sender: ActorAddress) -> None:
        entry = self.rooms.get(msg.notebook_id)
        if entry is None:
            self.send(sender, PathRecorded(msg.path, msg.origin, "the room is closing"))
            return
        if entry.path is not None and entry.path != msg.path:
            self.by_path.pop(entry.path, None)
        entry.path = msg.path
        entry.ephemeral = False
        self.by_path[msg.path] = msg.notebook_id
        self._bind(BindingStored(msg.notebook_id, msg.path, sender, msg.origin))

    def _on_path_released(self, msg: PathReleased, sender: ActorAddress) -> None:
        entry = self.rooms.get(msg.notebook_id)
        claimed_by_us = self.by_path.get(msg.path) == msg.notebook_id
        if claimed_by_us and (entry is None or entry.path != msg.path):
            del self.by_path[msg.path]

    def _room_view(self, notebook_id: str, entry: RoomEntry) -> RoomView:
        status = entry.status
        return RoomView(
            notebook_id,
            entry.path,
            entry.ephemeral,
            entry.starting,
            entry.pid,
            [PeerView(p, label) for p, label in status.peers] if status else [],
            status.kernel_status if status else KernelState.NONE,
            status.kernel_pid if status else None,
            status.kernelspec if status else None,
            status.environment if status else None,
        )

    def _list_rooms(self, origin: Origin, req: ListRooms) -> None:
        views = [self._room_view(nid, entry) for nid, entry in self.rooms.items()]
        self.answer(origin, RoomsListed(views))

    def _status(self, origin: Origin, req: GetStatus) -> None:
        ended = (KernelState.NONE, KernelState.DEAD)
        kernels = sum(
            1
            for e in self.rooms.values()
            if e.status is not None and e.status.kernel_status not in ended
        )
        self.answer(origin, RoomCounts(len(self.rooms), kernels))

    def _on_stop_daemon(self, msg: StopDaemon, sender: ActorAddress) -> None:
        self.stopping = _Stopping(waiting=set(self.rooms))
        for notebook_id, entry in self.rooms.items():
            if not entry.closing:
                self._close_room(notebook_id, CloseReason.DAEMON_STOPPING)
        self._finish_stop_if_done()

    def _on_room_closed(self, msg: RoomClosed, sender: ActorAddress) -> None:
        entry = self.rooms.get(msg.notebook_id)
        if entry is not None:
            reason = entry.close_reason
            stopping = self.stopping is not None
            if after_close(reason, msg.saved, stopping) is AfterClose.KEEP:
                self._keep_room(msg.notebook_id, entry, reason, msg.problem)
                return
            if not msg.saved:
                log.error("room %s removed (%s) unsaved: %s", msg.notebook_id, reason, msg.problem)
            else:
                log.info("room %s closed (%s)", msg.notebook_id, reason)
        self._forget_room(msg.notebook_id)
        self._reap_settled(msg.notebook_id)
        self._answer_evictions(entry, msg.notebook_id, msg.saved)
        self.send(sender, ActorExitRequest())
        if self.stopping is not None:
            self.stopping.waiting.discard(msg.notebook_id)
            self.stopping.closed += 1
            self._finish_stop_if_done()

    def _keep_room(
        self, notebook_id: str, entry: RoomEntry, reason: CloseReason, problem: str | None
    ) -> None:
        """The barrier failed, so the room stays with its edits; admissions held for it go on."""
        kept = KeptRoom(notebook_id, reason.value, problem or "the save failed", time.time())
        log.error(
            "kept room %s instead of removing it (%s): its final save failed, so its edits "
            "stay unsaved in memory; the reaper tries again at its next sweep: %s",
            notebook_id,
            reason,
            kept.problem,
        )
        entry.closing = False
        entry.close_reason = None
        self.send(entry.address, ReopenRoom(kept))
        self._reap_settled(notebook_id, kept)
        self._replay_deferred(entry)

    def _replay_deferred(self, entry: RoomEntry) -> None:
        deferred, entry.deferred = entry.deferred, []
        for origin, body in deferred:
            self.receiveMsg_ClientRequest(ClientRequest(origin, body), self.myAddress)

    def _finish_stop_if_done(self) -> None:
        if self.stopping is not None and not self.stopping.waiting and not self.stopping.done:
            self.stopping.done = True
            self.offload(RegistryClosed(), self.registry.close, "registry")

    def _forget_room(self, notebook_id: str) -> None:
        entry = self.rooms.pop(notebook_id, None)
        if entry is None:
            return
        if entry.path is not None and self.by_path.get(entry.path) == notebook_id:
            del self.by_path[entry.path]
        self.send(self.edge, RoomGone(notebook_id))
        if not entry.starting:
            removed = RoomEventOccurred(EventKind.REMOVED, notebook_id, {"path": entry.path})
            self.send(self.edge, removed)
        self._replay_deferred(entry)

    def _on_child_actor_exited(self, msg: ChildActorExited, sender: ActorAddress) -> None:
        for notebook_id, entry in list(self.rooms.items()):
            if entry.address == msg.childAddress:
                log.warning("room %s exited unexpectedly", notebook_id)
                self._forget_room(notebook_id)
                self._reap_settled(notebook_id)
                if self.stopping is not None:
                    self.stopping.waiting.discard(notebook_id)
                    self._finish_stop_if_done()


def _warm_imports() -> None:
    from nbstage.actors.daemon.kernel import kernel_backend  # noqa: F401
    from nbstage.actors.daemon.notebook.notebook_files import warm_imports

    warm_imports()
