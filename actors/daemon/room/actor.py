"""The Room actor: one open notebook, the only place its document changes.

It owns the document and its peers, and dispatches every message through one table
(``handlers``). Every other concern is a part with state of its own, a plain class
that returns actions (room/actions.py) for the Room to carry out (``act``): opening,
once-only keys, the file, the journal, the kernel seat and the environment (ADR 0003).
Timer payloads and offload tokens are in protocol/daemon_actors/room_followups.py.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable
from dataclasses import replace
from datetime import timedelta
from functools import cached_property
from typing import Any

from thespian.actors import ActorAddress, ActorExitRequest, ChildActorExited

from nbstage.actors.common.base import NbActor, finished, progress, request, wakeup
from nbstage.actors.daemon.kernel.actor import Kernel
from nbstage.actors.daemon.notebook import journal
from nbstage.actors.daemon.notebook.document import Document
from nbstage.actors.daemon.room import actions, lifetime, opening, person_edits, views
from nbstage.actors.daemon.room.dependency_calls import DependencyCalls
from nbstage.actors.daemon.room.environment import (
    EnvironmentSeat,
)
from nbstage.actors.daemon.room.file_seat import FileSeat
from nbstage.actors.daemon.room.journalling import Journalling
from nbstage.actors.daemon.room.kernel_seat import KernelSeat
from nbstage.actors.daemon.room.notices import NoticeBoard
from nbstage.actors.daemon.room.once import OnceKeys
from nbstage.actors.daemon.room.opening import Opening
from nbstage.actors.daemon.room.peers import Closing, Peers, closing_error
from nbstage.actors.daemon.room.room_support import save_error, scoped_key
from nbstage.actors.daemon.room.sharing import Sharing, journalled
from nbstage.protocol.common.errors import ErrorCode, NbstageError
from nbstage.protocol.common.offload import BlockingWorkDone
from nbstage.protocol.daemon import lab, replies, requests
from nbstage.protocol.daemon.notices import Notice
from nbstage.protocol.daemon_actors import edge, kernels, rooms
from nbstage.protocol.daemon_actors import room_followups as followups
from nbstage.protocol.daemon_actors.edge import Origin
from nbstage.protocol.daemon_actors.room_followups import SavePurpose

log = logging.getLogger("nbstage.room")


class Room(NbActor):
    """One open notebook: its document, its peers, its saves and its Kernel child."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.config: rooms.StartRoom | None = None
        self.daemon: ActorAddress | None = None
        self.doc: Document | None = None
        self.path: str | None = None
        self.ephemeral = True
        self.peers = Peers()
        self.once = OnceKeys()
        self.env = EnvironmentSeat()
        self.journal = Journalling()
        self.notices = NoticeBoard()
        self.deps = DependencyCalls(self.env, self.journal, self.notices)
        self.seat = KernelSeat()
        self.file = FileSeat(self.notices)
        self.close = Closing()
        self.opening = Opening()
        self.sharing = Sharing()

    # --- opening (room/opening.py) --------------------------------------------------------

    def _on_start_room(self, msg: rooms.StartRoom, sender: ActorAddress) -> None:
        self.config, self.daemon, self.edge = msg, sender, msg.edge
        self.sharing.notebook_id, self.sharing.edge = msg.notebook_id, msg.edge
        self.path, self.ephemeral = msg.path, msg.ephemeral
        self.journal.start(msg.notebook_id, msg.state_dir)
        self.deps.start(msg)
        self.file.start(msg, sender)
        self.seat.start(msg, msg.source is not rooms.RoomSource.NEW or msg.kernelspec is not None)
        self.env.kernel_name = msg.kernelspec.name if msg.kernelspec is not None else None
        if (read := self.opening.start(msg, self.file.lane)) is not None:
            self.act(read)
            return
        try:
            self.doc = opening.load(msg)
        except NbstageError as exc:
            self._start_failed(exc)
            return
        self._loaded()

    def _notebook_file_read(self, done: BlockingWorkDone) -> None:
        if self.close.by is not None:
            self._fail_held_joins(closing_error("nobody joined it"))
        elif not done.ok:
            self._start_failed(opening.read_error(done))
        else:
            self.doc, self.file.disk_stamp, self.file.disk_base = done.result
            self._loaded()
            self._start_read_done()

    def _start_failed(self, error: NbstageError) -> None:
        self.opening.error = error
        self.send(self.daemon, rooms.RoomStartFailed(self.notebook_id, error.code, error.message))
        self._fail_held_joins(error)

    def _fail_held_joins(self, error: NbstageError) -> None:
        for join in self.opening.release():
            self.peers.saw(join.join_seq)
            self.fail(join.origin, error)

    def _loaded(self) -> None:
        self.file.saved_revision = self.doc.revision
        self.act(*self.opening.loaded(self.config, self._journalled, self.file.lane))

    def _started(self, joins: list[rooms.JoinRoom] = ()) -> None:
        self.send(self.daemon, rooms.RoomStarted(self.notebook_id, os.getpid()))
        self._report_status()
        for join in joins:
            self._on_join_room(join, self.daemon)

    def _first_flushed(self, error: BaseException | None) -> None:
        """A new persisted notebook exists once its untitled row is durable; joins wait."""
        if error is not None:
            self.doc = None
            self._start_failed(save_error(error))
        else:
            self._started(self.opening.release())

    def _read_kernelspecs(self, restart: Origin | None = None) -> None:
        self.act(opening.read_kernelspecs(self.file.registry_file, self.path, restart))

    def _kernelspecs_read(self, done: BlockingWorkDone) -> None:
        fits = opening.choose(done, self.env, self.doc.metadata)
        self.seat.life = replace(self.seat.life, has_runtime=fits)
        restart = done.token.restart
        if restart is None:
            self._start_read_done()
            return
        self._report_status()
        if fits:
            self.guarded(restart, self._restart, None)
        else:
            self.fail(restart, NbstageError(ErrorCode.UNKNOWN_RUNTIME, self.env.kernel_refused))

    def _start_read_done(self) -> None:
        joins = self.opening.read_done()
        if joins is None:
            return
        self._started(joins)
        restored = self.journal.restored
        if restored:
            where = self.path or self.notebook_id
            self.notices.post(journal.restored_notice(where, restored, self.path is not None))

    @property
    def notebook_id(self) -> str:
        return self.config.notebook_id

    # --- peers and the kernel's lifetime --------------------------------------------------

    def _on_join_room(self, msg: rooms.JoinRoom, sender: ActorAddress) -> None:
        if self.opening.held_back(msg):
            return
        self.peers.saw(msg.join_seq)
        if self.close.by is not None:
            self.fail(msg.origin, closing_error("nobody joined it"))
            return
        if self.doc is None:
            self.fail(msg.origin, self.opening.unloaded_error())
            return
        peer_id = self.peers.join(msg.peer_label, msg.origin.conn)
        self.notices.follow(msg.origin.conn)
        self._arm_file_check()
        self.act(*self.seat.decide(lifetime.peer_joined, self.seat.life))
        joined = replies.NotebookJoined(**views.facts(self), peer_id=peer_id, created=msg.created)
        self.answer(msg.origin, joined)
        self._event(edge.EventKind.PEER_JOINED, {"peer_id": peer_id, "label": msg.peer_label})
        self._report_status()

    def receiveMsg_ClientRequest(self, msg: edge.ClientRequest, sender: ActorAddress) -> None:
        """A request may name a starting room before anyone joined it (the operator's
        console lists starting rooms): there is no document to answer from yet."""
        if self.doc is None:
            self.fail(msg.origin, self.opening.unloaded_error())
            return
        super().receiveMsg_ClientRequest(msg, sender)

    def _leave(self, origin: Origin, req: requests.LeaveRoom) -> None:
        if req.peer_id not in self.peers.labels:
            raise NbstageError(ErrorCode.NOT_A_PEER, f"{req.peer_id} is not in this room.")
        label, unfollowed = self.peers.leave(req.peer_id)
        if unfollowed is not None:
            self.notices.unfollow(unfollowed)
        self.act(*self.seat.decide(lifetime.peer_left, self.seat.life))
        self.answer(origin, replies.RoomLeft())
        self._event(edge.EventKind.PEER_LEFT, {"peer_id": req.peer_id, "label": label})
        self._report_status()

    def _report_status(self) -> None:
        self.send(self.daemon, views.status(self))

    def _event(self, kind: edge.EventKind, detail: dict[str, Any]) -> None:
        self.send(self.edge, edge.RoomEventOccurred(kind, self.notebook_id, detail))

    # --- requests -------------------------------------------------------------------------

    def handlers(self):
        return {
            rooms.StartRoom: self._on_start_room,
            rooms.JoinRoom: self._on_join_room,
            rooms.CloseRoom: self._on_close_room,
            rooms.ReopenRoom: self._on_reopen_room,
            rooms.PathClaimed: lambda msg, _: self.act(self.file.claimed(msg)),
            rooms.PathRefused: lambda msg, _: self.act(self.file.refused(msg)),
            rooms.PathRecorded: self._on_path_recorded,
            followups.KeepAliveExpired: lambda msg, sender: self._keep_alive_expired(msg),
            kernels.KernelReady: self._on_kernel_ready,
            kernels.KernelFailed: self._on_kernel_failed,
            kernels.KernelDied: self._on_kernel_died,
            kernels.KernelStopped: self._on_kernel_stopped,
            ChildActorExited: self._on_child_actor_exited,
            kernels.KernelInterrupted: self._on_kernel_interrupted,
            kernels.KernelRestarted: self._on_kernel_restarted,
            kernels.ExecutionStarted: self._on_execution_started,
            kernels.OutputsArrived: self._on_outputs_arrived,
            kernels.ExecutionFinished: self._on_execution_finished,
            kernels.ExecutionsCancelled: self._on_executions_cancelled,
            request(requests.LeaveRoom): self._leave,
            request(requests.GetCell): self._get_cell,
            request(requests.GetCells): self._get_cells,
            request(requests.CreateCell): self._mutation(self._create_cell),
            request(requests.SetCell): self._mutation(self._set_cell),
            request(requests.DeleteCell): self._mutation(self._delete_cell),
            request(requests.MoveCell): self._mutation(self._move_cell),
            request(requests.ReplaceMatch): self._mutation(self._replace_match),
            request(requests.ReplaceRegex): self._mutation(self._replace_regex),
            request(requests.SaveNotebook): self._once(self._save_request),
            request(requests.ExecuteCell): self._execute,
            request(requests.GetExecution): self._get_execution,
            request(requests.InterruptKernel): self._once(self._interrupt),
            request(requests.RestartKernel): self._once(self._restart),
            request(requests.ManageDependencies): self._once(self._manage_dependencies),
            request(requests.DescribeRoom): lambda o, _: self.answer(o, views.described(self)),
            request(requests.ShutdownKernelNow): self._shutdown_kernel,
            request(lab.JoinSharedDoc): lambda o, r: self.act(
                self.sharing.join(o, r, self.doc, self.peers)
            ),
            request(lab.PassSharedDocMessage): self._person_said,
            finished(followups.SaveFinished): self._save_finished,
            finished(followups.FileLooked): self._file_looked,
            finished(followups.ExecutionRecorded): self._execution_recorded,
            finished(followups.LiveExecutionRecorded): lambda d: self.act(
                *self.seat.live_recorded(d)
            ),
            finished(followups.StoredExecutionRead): lambda d: self.act(self.seat.stored_read(d)),
            finished(followups.KernelspecsRead): self._kernelspecs_read,
            finished(followups.StaleTempsSwept): lambda done: opening.swept(done, self.path),
            finished(followups.NotebookFileRead): self._notebook_file_read,
            finished(followups.JournalAppended): self._journal_appended,
            finished(followups.JournalRead): self._journal_read,
            finished(followups.JournalTruncated): self._journal_truncated,
            finished(followups.JournalClosed): self._journal_closed,
            finished(followups.DependenciesPrepared): self._dependencies_prepared,
            finished(followups.DependenciesRecorded): self._dependencies_recorded,
            finished(followups.ProjectTrustRecorded): self._project_trust_recorded,
            progress(followups.DependenciesPrepared): self._dependencies_progressed,
            wakeup(followups.AutosaveDue): self._autosave_due,
            wakeup(followups.KeepAliveExpired): self._keep_alive_expired,
            wakeup(followups.FileCheckDue): self._file_check_due,
            wakeup(followups.WaitExpired): self._wait_expired,
        }

    def receiveMessage(self, msg: Any, sender: ActorAddress) -> None:
        """Whatever the message changed reaches the people watching, as one Y update."""
        super().receiveMessage(msg, sender)
        if self.sharing.watched:
            running = self.seat.book.live_cells()
            self.act(*self.sharing.mirror(self.doc, self.peers, running))

    def _person_said(self, origin: Origin, req: lab.PassSharedDocMessage) -> None:
        """A person's edit is journalled like an agent's; they hear back once it is."""
        self._refuse_while_closing("the edit was not taken")
        said = self.sharing.heard(req, self.doc)
        self.act(*said.pushes)
        if not said.records:
            self.answer(origin, said.answer)
            return
        self._edited()
        self.notices.post(person_edits.notice(said.records))
        if self._journalled:
            self.act(journalled(said.records, self.journal, origin, said.answer))
        else:
            self.answer(origin, said.answer)

    def _autosave_due(self, due: followups.AutosaveDue) -> None:
        if due.generation == self.file.autosave_generation:
            self._persist()

    def _wait_expired(self, expired: followups.WaitExpired) -> None:
        self.act(*self.seat.wait_expired(expired))

    def _get_cell(self, origin: Origin, req: requests.GetCell) -> None:
        self.answer(origin, replies.CellShown(self.doc.cell(req.cell_id).view()))

    def _get_cells(self, origin: Origin, req: requests.GetCells) -> None:
        total = len(self.doc.cells)
        if req.format is requests.CellsFormat.SUMMARY:
            summaries = self.doc.summaries(req.start, req.count)
            self.answer(origin, replies.CellsSummarized(summaries, total))
        else:
            cells = self.doc.cells_json(req.start, req.count, req.include_outputs)
            self.answer(origin, replies.CellsShown(cells, total))

    # --- mutations ------------------------------------------------------------------------

    def _mutation(self, apply):
        """Wrap a mutation so a repeated idempotency key returns the first result unchanged."""

        def handle(origin: Origin, req: Any) -> None:
            key = scoped_key(req)
            if self.once.known(key):
                self.answer(origin, self.once.first_answer(key))
                return
            if self.once.wait_if_under_way(key, origin):
                return
            self._refuse_while_closing("the change was not made")
            before = self.doc.revision
            result = apply(req)
            self._edited()
            changed = self._journalled and self.doc.revision != before
            record = journal.mutation_record(self.doc, result) if changed else None
            if record is None:
                self.once.remember(key, result)
                self.answer(origin, result)
                return
            if key is not None:
                self.once.begin(key, origin)
            self.act(self.journal.append(record, origin, result))

        return handle

    def _once(self, start):
        """Wrap a request answered later (a save, a restart, an interrupt) so its key is
        carried out once: a repeat gets the first answer, or waits for it while the first
        is under way. A refusal is not remembered, so a repeat after one tries again."""

        def handle(origin: Origin, req: Any) -> None:
            key = scoped_key(req)
            if self.once.known(key):
                self.answer(origin, self.once.first_answer(key))
                return
            self._refuse_while_closing("nothing was done")
            if key is None:
                start(origin, req)
            elif not self.once.wait_if_under_way(key, origin):
                self.once.begin(key, origin)
                start(origin, req)

        return handle

    def _refuse_while_closing(self, outcome: str) -> None:
        """From CloseRoom on, the room's last flush is under way or done: nothing it would
        not keep is acknowledged."""
        if self.close.by is not None:
            raise closing_error(outcome)

    def answer(self, origin: Origin, reply: object) -> None:
        super().answer(origin, reply)
        for repeat in self.once.answered(origin, reply):
            super().answer(repeat, reply)

    def fail(self, origin: Origin, error: NbstageError) -> None:
        super().fail(origin, error)
        for repeat in self.once.failed(origin):
            super().fail(repeat, error)

    # --- the journal ----------------------------------------------------------------------

    @property
    def _journalled(self) -> bool:
        """Ephemeral rooms stay in memory only; every other room journals its edits."""
        return not (self.ephemeral and self.path is None)

    def _journal_appended(self, done: BlockingWorkDone) -> None:
        self.journal.appended(done)
        self.answer(done.token.origin, done.token.reply)
        self._report_closed()

    def _journal_read(self, done: BlockingWorkDone) -> None:
        """Edits acknowledged after the last save come back; a file-backed room counts them
        as unsaved and writes them with its next save, through the checked save."""
        changed, work = self.journal.replay(done, self.doc)
        self.act(*work)
        if changed and self.path is None:
            self._edited()
        self._start_read_done()

    def _journal_truncated(self, done: BlockingWorkDone) -> None:
        self.journal.truncated(done)
        self._report_closed()

    def _journal_closed(self, done: BlockingWorkDone) -> None:
        self.journal.settled()
        self._report_closed()

    def act(self, *todo: actions.Action) -> None:
        """Carry out what a part asked for (room/actions.py), in order."""
        for action in todo:
            self._carriers[type(action)](action)

    @cached_property
    def _carriers(self) -> dict[type, Callable[[Any], None]]:
        a = actions
        return {
            a.Send: lambda x: self.send(x.to, x.message),
            a.Offload: lambda x: self.offload(x.token, x.work, x.lane, x.reports),
            a.Wake: lambda x: self.wakeupAfter(timedelta(seconds=x.seconds), payload=x.payload),
            a.Answer: lambda x: self.answer(x.origin, x.reply),
            a.Fail: lambda x: self.fail(x.origin, x.error),
            a.StartKernelChild: lambda x: self._start_kernel(),
            a.DetachKernel: lambda x: self._detach_kernel(x.reason),
            a.WantKernel: lambda x: self.act(*self.seat.want()),
            a.Persist: lambda x: self._persist(x.purpose),
            a.SaveFile: lambda x: self._save_file(x.path or self.path, x.purpose, x.origin),
            a.FinishClose: lambda x: self._finish_close(x.saved, x.error),
            a.FirstFlushed: lambda x: self._first_flushed(x.error),
            a.BindPath: lambda x: self._bind_path(x.path),
            a.TruncateJournal: lambda x: self.act(self.journal.truncate(x.seq)),
            a.ReportStatus: lambda x: self._report_status(),
            a.ReadKernelspecs: lambda x: self._read_kernelspecs(x.restart),
            a.ReadJournal: lambda x: self.act(self.journal.read()),
            a.FlushFirst: lambda x: self.act(self.file.first_flush(self.doc, self.journal.seq)),
            a.Started: lambda x: self._started(x.joins),
            a.Edited: lambda x: self._edited(),
            a.SetOutputs: self._set_outputs,
        }

    def _set_outputs(self, todo: actions.SetOutputs) -> None:
        with contextlib.suppress(NbstageError):
            self.doc.set_outputs(todo.cell_id, todo.outputs, todo.count)

    def _create_cell(self, req: requests.CreateCell) -> replies.CellCreated:
        cell, index = self.doc.create_cell(req.source, req.cell_type, req.index)
        return replies.CellCreated(cell.id, index)

    def _set_cell(self, req: requests.SetCell) -> replies.CellUpdated:
        cell = self.doc.set_cell(req.cell_id, req.source, req.cell_type)
        return replies.CellUpdated(cell.id)

    def _delete_cell(self, req: requests.DeleteCell) -> replies.CellDeleted:
        self.doc.delete_cell(req.cell_id)
        return replies.CellDeleted(req.cell_id)

    def _move_cell(self, req: requests.MoveCell) -> replies.CellMoved:
        index = self.doc.move_cell(req.cell_id, req.after_cell_id)
        return replies.CellMoved(req.cell_id, index)

    def _replace_match(self, req: requests.ReplaceMatch) -> replies.CellUpdated:
        cell = self.doc.replace_match(
            req.cell_id, req.match, req.content, req.context_before, req.context_after
        )
        return replies.CellUpdated(cell.id)

    def _replace_regex(self, req: requests.ReplaceRegex) -> replies.CellUpdated:
        cell = self.doc.replace_regex(req.cell_id, req.pattern, req.content)
        return replies.CellUpdated(cell.id)

    # --- saving (room/file_seat.py) -------------------------------------------------------

    def _edited(self) -> None:
        if self._journalled:
            self.act(self.file.edited())

    def _persist(self, purpose: SavePurpose = SavePurpose.AUTOSAVE) -> None:
        """Start saving unsaved edits; a close with nothing to save is finished at once."""
        if self._journalled and self.file.wants_save(self.doc.revision, purpose):
            if self.path is not None:
                self._save_file(self.path, purpose)
            else:
                self.act(self.file.flush_untitled(self.doc, purpose, self.journal.seq))
        elif purpose is SavePurpose.CLOSE:
            self._finish_close(saved=True)

    def _save_request(self, origin: Origin, req: requests.SaveNotebook) -> None:
        if req.path is not None:
            self.act(self.file.claim(origin, req.path, req.overwrite))
        elif self.path is None:
            raise NbstageError(
                ErrorCode.NO_PATH, "This notebook has no file yet. Call save_notebook with a path."
            )
        else:
            self._save_file(self.path, SavePurpose.REQUEST, origin)

    def _save_file(self, path: str, purpose: SavePurpose, origin: Origin | None = None) -> None:
        trusted = self.env.trusted_fingerprint(self.doc.metadata)
        seq = self.journal.seq
        self.act(*self.file.save(self.doc, path, purpose, origin, seq, self.path, trusted))

    def _save_finished(self, done: BlockingWorkDone) -> None:
        seen = self.file.finished(done)
        if seen is not None:
            self._file_changed(seen)
            self.act(*self.file.again(done.token))
        else:
            self.act(*self.file.settled(done, self.doc.revision))
        self._next_file_job()

    def _bind_path(self, path: str) -> None:
        self.path, self.ephemeral = path, False
        self._arm_file_check()
        self._report_status()

    def _on_path_recorded(self, msg: rooms.PathRecorded, sender: ActorAddress) -> None:
        """An open or a save to a new path is answered once the Daemon holds the binding on
        disk; a binding that could not be written is logged and the answer goes out."""
        if msg.problem is not None:
            log.error("%s at %s: %s", self.notebook_id, msg.path, msg.problem)
        if msg.origin is None:
            self._start_read_done()
        else:
            self.answer(msg.origin, replies.NotebookSaved(self.notebook_id, msg.path))

    # --- the file on disk -----------------------------------------------------------------

    def notices_for(self, origin: Origin) -> tuple[Notice, ...]:
        if self.doc is not None:
            self.notices.stand("dependencies", self.env.approval_line(self.doc.metadata))
        return self.notices.take(origin.conn)

    def _next_file_job(self) -> None:
        while (job := self.file.next_job()) is not None:
            self.act(job)

    def _arm_file_check(self) -> None:
        self.act(*self.file.arm_check(self.path, bool(self.peers)))

    def _file_check_due(self, due: followups.FileCheckDue) -> None:
        closing = self.close.by is not None
        self.act(*self.file.check_due(due, self.path, bool(self.peers), closing))

    def _file_looked(self, done: BlockingWorkDone) -> None:
        seen = self.file.looked(done, self.path)
        if seen is not None:
            self._file_changed(seen)
            if self.file.autosave_resumes(self.doc.revision):
                self._edited()
        self._arm_file_check()
        self._next_file_job()

    def _file_changed(self, seen: followups.FileOnDisk) -> None:
        """What the file holds now: the file part merges it; the document takes the merge."""
        merged, holds_all = self.file.changed(seen, self.path, self.doc.to_json())
        if merged is not None:
            fresh = Document.from_json(merged)
            self.doc.cells, self.doc.metadata = fresh.cells, fresh.metadata
            self.doc.revision += 1
        if holds_all:
            self.file.saved_up_to(self.doc.revision, self.doc.revision)
            self.act(*self.journal.truncate_all())

    # --- closing --------------------------------------------------------------------------

    def _on_close_room(self, msg: rooms.CloseRoom, sender: ActorAddress) -> None:
        """Stop the kernel, then save what is unsaved; RoomClosed once the save is done and
        the kernel has stopped."""
        self.close.by = sender
        # Joins held for the start are answered now: the Daemon ends this room once it is
        # closed, maybe before the start's reads come back.
        self._fail_held_joins(closing_error("nobody joined it"))
        self._fail_restarts(closing_error("the kernel was not restarted"))
        if self.seat.address is not None:
            self._detach_kernel(msg.reason)
            self.seat.release()
        if self.doc is None:
            self._finish_close(saved=True)
        else:
            self._persist(SavePurpose.CLOSE)

    def _finish_close(self, saved: bool, error: BaseException | None = None) -> None:
        self.file.close_registry()
        self.act(*self.journal.close())
        problem = None if saved else save_error(error).message
        self.close.report = rooms.RoomClosed(self.notebook_id, saved, problem)
        self._report_closed()

    def _report_closed(self) -> None:
        """The close is over once the last flush, the journal's work and any environment
        build are done and every kernel this room stopped has said so: the room then ends
        with no child left for its exit to cut short, and no call left unanswered."""
        settled = not (self.seat.stopping or self.journal.jobs or self.env.jobs)
        if self.close.report is not None and settled:
            report, self.close.report = self.close.report, None
            self.send(self.close.by, report)

    def _on_reopen_room(self, msg: rooms.ReopenRoom, sender: ActorAddress) -> None:
        self.close.by = None
        self.close.kept = msg.kept

    # --- the kernel seat (room/kernel_seat.py) --------------------------------------------

    def _keep_alive_expired(self, msg: followups.KeepAliveExpired) -> None:
        busy = bool(self.seat.book.live_ids())
        self.act(
            *self.seat.decide(lifetime.keep_alive_expired, self.seat.life, msg.generation, busy)
        )

    def _start_kernel(self) -> None:
        self.seat.seated(self.createActor(Kernel))
        self.send(
            self.seat.address, self.seat.start_message(self.path, self.doc.metadata, self.env)
        )

    def _detach_kernel(self, reason: str) -> None:
        """The latch: from here on the old kernel is never handed out."""
        self.act(*self.seat.detach(reason, self.env))

    def _on_kernel_ready(self, msg: kernels.KernelReady, sender: ActorAddress) -> None:
        if self.seat.is_current(sender):
            self.seat.up(msg.pid, msg.actor_pid)
            self.env.running = msg.environment
            self.act(*self.deps.project_reported(self.path))
            self.act(*self.seat.answer_restarts(self.env))
            self._report_status()

    def _on_kernel_failed(self, msg: kernels.KernelFailed, sender: ActorAddress) -> None:
        self.act(*self.seat.failed(sender, msg.message, self.env))

    def _on_kernel_died(self, msg: kernels.KernelDied, sender: ActorAddress) -> None:
        self.act(*self.seat.died(sender, msg.pid, self.env))

    def _kernel_gone(self, address: ActorAddress) -> None:
        self.seat.gone(address)
        self._report_closed()

    def _on_kernel_stopped(self, msg: kernels.KernelStopped, sender: ActorAddress) -> None:
        self.send(sender, ActorExitRequest())
        if msg.pid is not None:
            self.send(self.edge, edge.KernelProcessEnded(self.notebook_id, msg.pid))
        self._kernel_gone(sender)

    def _on_child_actor_exited(self, msg: ChildActorExited, sender: ActorAddress) -> None:
        self._kernel_gone(msg.childAddress)
        self.act(*self.seat.actor_exited(msg.childAddress))

    def _shutdown_kernel(self, origin: Origin, req: requests.ShutdownKernelNow) -> None:
        self.act(*self.seat.shut_down(origin, self.env))

    # --- executions -----------------------------------------------------------------------

    def _execute(self, origin: Origin, req: requests.ExecuteCell) -> None:
        key = scoped_key(req)
        if self.once.known(key):
            known = self.once.first_answer(key)["execution_id"]
            self.act(*self.seat.answer_execution(origin, known, req.wait_secs))
            return
        self._refuse_while_closing("the cell was not run")
        cell = self.doc.cell(req.cell_id)
        if cell.cell_type != "code":
            raise NbstageError(
                ErrorCode.BAD_REQUEST, f"Cell {cell.id} is {cell.cell_type}, not code."
            )
        self._require_kernel()
        execution_id, start = self.seat.run(cell.id, cell.source)
        self.once.remember(key, {"execution_id": execution_id})
        self.act(*start, *self.seat.answer_execution(origin, execution_id, req.wait_secs))

    def _require_kernel(self) -> None:
        self.env.refuse_without_kernelspec(self.seat.life.has_runtime)
        self.act(*self.seat.require())

    def _get_execution(self, origin: Origin, req: requests.GetExecution) -> None:
        self.act(*self.seat.answer_execution(origin, req.execution_id, req.wait_secs))

    def _on_execution_started(self, msg: kernels.ExecutionStarted, sender: ActorAddress) -> None:
        if self.seat.is_current(sender) and self.seat.book.started(msg.execution_id):
            self.seat.state = kernels.KernelState.BUSY

    def _on_outputs_arrived(self, msg: kernels.OutputsArrived, sender: ActorAddress) -> None:
        if self.close.by is None:
            self.act(*self.seat.outputs(msg))

    def _on_execution_finished(self, msg: kernels.ExecutionFinished, sender: ActorAddress) -> None:
        todo = self.seat.finish(msg.execution_id, msg.status, msg.execution_count, msg.error)
        if self.seat.is_current(sender):
            self.seat.state = kernels.KernelState.IDLE
        self.act(*todo)

    def _on_executions_cancelled(
        self, msg: kernels.ExecutionsCancelled, sender: ActorAddress
    ) -> None:
        for execution_id in msg.execution_ids:
            self.act(*self.seat.finish(execution_id, msg.status, error=msg.reason))

    def _execution_recorded(self, done: BlockingWorkDone) -> None:
        if not done.ok:
            log.error("could not record execution %s: %s", done.token.execution_id, done.error)

    # --- interrupt and restart ------------------------------------------------------------

    def _interrupt(self, origin: Origin, req: requests.InterruptKernel) -> None:
        self.act(self.seat.interrupt(origin))

    def _on_kernel_interrupted(self, msg: kernels.KernelInterrupted, sender: ActorAddress) -> None:
        self.answer(msg.origin, replies.InterruptSent())

    def _restart(self, origin: Origin, req: requests.RestartKernel | None) -> None:
        """A room whose notebook fits no kernelspec reads them again first: one may be new."""
        if self.env.kernel_refused is not None:
            self._read_kernelspecs(origin)
        else:
            self.act(*self.seat.restart(origin, self.env))

    def _on_kernel_restarted(self, msg: kernels.KernelRestarted, sender: ActorAddress) -> None:
        if self.seat.is_current(sender):
            self.seat.up(msg.pid)
            self.act(*self.seat.answer_restarts(self.env))
            self._report_status()

    def _fail_restarts(self, failure: NbstageError | None = None) -> None:
        self.act(*self.seat.fail_restarts(self.env, failure))

    # --- dependencies (room/dependency_calls.py) ------------------------------------------

    def _manage_dependencies(self, origin: Origin, req: requests.ManageDependencies) -> None:
        plan = self.deps.plan(req, self.doc.metadata)
        if req.apply is requests.ApplyDependencies.NONE:
            self._commit_dependencies(origin, plan, None)
        else:
            self._require_kernel()
            self.act(self.deps.prepare(origin, req, plan))

    def _dependencies_prepared(self, done: BlockingWorkDone) -> None:
        origin, plan, closing = done.token.origin, done.token.plan, self.close.by is not None
        outcome = self.deps.prepared(done, self.doc.metadata, closing)
        if not isinstance(outcome, replies.DependenciesApplied):
            self.act(*outcome)
            if closing:
                self._report_closed()
            return
        try:
            self._commit_dependencies(origin, plan, outcome)
        except NbstageError as exc:
            self.fail(origin, exc)

    def _commit_dependencies(self, origin: Origin, plan, applied) -> None:
        """The edit is one room mutation; the part trusts and records it."""
        if plan.edit.after != plan.edit.before:
            self._refuse_while_closing("the dependencies were not changed")
            self.doc.set_dependencies(plan.edit.after)
            self._edited()
        self.act(self.deps.commit(origin, plan, applied, self.path, self._journalled))

    def _dependencies_progressed(self, token: followups.DependenciesPrepared, line: str) -> None:
        self.send(self.edge, edge.RequestProgressed(token.origin, f"uv: {line}"))

    def _project_trust_recorded(self, done: BlockingWorkDone) -> None:
        self.deps.project_trust_recorded(done, self.path)
        self._report_closed()

    def _dependencies_recorded(self, done: BlockingWorkDone) -> None:
        self.act(*self.deps.recorded(done, self.close.by is not None))
        self._report_closed()
