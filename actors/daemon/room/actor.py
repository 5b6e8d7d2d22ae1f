"""The Room actor: one open notebook, the only place its document changes.

It owns the document and its peers, and dispatches every message through one table
(``handlers``). Every other concern is a part with state of its own, a plain class
that returns actions (room/actions.py) for the Room to carry out (``act``): opening,
once-only keys, the file, the journal, the kernel seat, the environment and closing
(ADR 0003). Longer handlers live beside it, acting through the Room: its start, the
joins and the close (arrivals.py), the once-only wrappers of keyed requests
(keyed_requests.py), the people watching in JupyterLab (lab_people.py). Timer payloads
and offload tokens are in protocol/daemon_actors/room_followups.py.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import cached_property, partial
from typing import Any

from thespian.actors import ActorAddress, ActorExitRequest, ChildActorExited

from nbstage.actors.common.base import NbActor, finished, progress, request, wakeup
from nbstage.actors.daemon.kernel.actor import Kernel
from nbstage.actors.daemon.notebook.document import Document
from nbstage.actors.daemon.room import (
    actions,
    arrivals,
    edits,
    freed_pages,
    lab_people,
    opening,
    views,
)
from nbstage.actors.daemon.room.closing import Closing
from nbstage.actors.daemon.room.code_questions import CodeQuestions
from nbstage.actors.daemon.room.dependency_calls import DependencyCalls
from nbstage.actors.daemon.room.environment import EnvironmentSeat
from nbstage.actors.daemon.room.execution_calls import code_cell
from nbstage.actors.daemon.room.file_seat import FileSeat
from nbstage.actors.daemon.room.journalling import Journalling
from nbstage.actors.daemon.room.kernel_seat import KernelSeat
from nbstage.actors.daemon.room.keyed_requests import mutation, once
from nbstage.actors.daemon.room.notices import NoticeBoard
from nbstage.actors.daemon.room.once import OnceKeys
from nbstage.actors.daemon.room.opening import Opening
from nbstage.actors.daemon.room.peers import Peers
from nbstage.actors.daemon.room.room_support import scoped_key
from nbstage.actors.daemon.room.sharing import Sharing
from nbstage.protocol.common.errors import NbstageError
from nbstage.protocol.daemon import lab, replies, requests
from nbstage.protocol.daemon.code_questions import AskKernel
from nbstage.protocol.daemon.notices import Notice, NoticeKind
from nbstage.protocol.daemon_actors import edge, kernels, rooms
from nbstage.protocol.daemon_actors import host_grants as slots
from nbstage.protocol.daemon_actors import room_followups as followups
from nbstage.protocol.daemon_actors.edge import Origin
from nbstage.protocol.daemon_actors.kernel_questions import KernelQuestionAnswered
from nbstage.protocol.daemon_actors.room_followups import SavePurpose

log = logging.getLogger("nbstage.room")


class Room(NbActor):
    """One open notebook: its document, its peers, its saves and its Kernel child."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.config: rooms.StartRoom | None = None
        self.daemon: ActorAddress | None = None
        self.doc: Document | None = None
        self.notices = NoticeBoard()
        self.peers = Peers(self.notices)
        self.once = OnceKeys()
        self.env = EnvironmentSeat()
        self.journal = Journalling()
        self.deps = DependencyCalls(self.env, self.journal, self.notices)
        self.seat = KernelSeat(self.env)
        self.file = FileSeat(self.notices)
        self.close = Closing(self.seat, self.journal, self.env, self.file)
        self.opening, self.sharing = Opening(), Sharing()
        self.questions = CodeQuestions(self.seat)

    def handlers(self):
        k, f, r, seat, runs = kernels, followups, requests, self.seat, self.seat.runs
        return {
            rooms.StartRoom: partial(arrivals.start_room, self),
            rooms.JoinRoom: partial(arrivals.join_room, self),
            rooms.CloseRoom: partial(arrivals.close_room, self),
            rooms.ReopenRoom: self._to(self.close.reopen),
            rooms.PathClaimed: self._to(self.file.new_paths.claimed),
            rooms.PathRefused: self._to(self.file.new_paths.refused),
            rooms.PathRecorded: self._to(self.file.new_paths.recorded),
            rooms.HostsSeen: self._to(seat.hosts_told),
            slots.KernelPlaced: self._on_kernel_placed,
            edge.ClientRequest: self._on_client_request,
            f.KeepAliveExpired: self._to(seat.keep_alive_expired),
            k.KernelReady: self._to(seat.ready),
            k.KernelFailed: self._to(seat.failed),
            k.KernelDied: lambda m, s: self.act(
                *self.questions.kernel_gone(s, "the kernel died"), *seat.died(m, s)
            ),
            k.KernelStopped: self._to(seat.stopped),
            ChildActorExited: lambda m, s: self.act(
                *self.questions.kernel_gone(m.childAddress, "the kernel's actor exited"),
                *seat.exited(m, s),
            ),
            k.KernelInterrupted: lambda m, _: self.answer(m.origin, replies.InterruptSent()),
            k.KernelRestarted: self._to(seat.restarted),
            k.ExecutionStarted: self._to(seat.execution_started),
            k.OutputsArrived: lambda m, _: self.act(*runs.outputs(m, self.close.asked)),
            k.ExecutionFinished: self._to(seat.execution_finished),
            k.ExecutionsCancelled: self._to(runs.cancelled),
            **{request(kind): mutation(self, edit) for kind, edit in edits.EDITS.items()},
            request(r.LeaveRoom): lambda o, req: self.act(*self.peers.leave(o, req, seat)),
            request(r.GetCell): lambda o, req: self.answer(o, views.cell(self, req)),
            request(r.GetCells): lambda o, req: self.answer(o, views.cells(self, req)),
            request(r.SaveNotebook): once(self, self._to(self.file.save_request)),
            request(r.ExecuteCell): self._execute,
            request(r.GetExecution): self._to(runs.get),
            request(r.InterruptKernel): once(self, self._to(seat.interrupt)),
            request(r.RestartKernel): once(self, self._to(seat.restart)),
            request(r.ManageDependencies): once(
                self, lambda o, req: self.act(*self.deps.manage(o, req, self.doc.metadata, seat))
            ),
            request(r.DescribeRoom): lambda o, _: self.answer(o, views.described(self)),
            request(r.ShutdownKernelNow): self._to(seat.shut_down),
            request(AskKernel): self._to(self.questions.ask),
            KernelQuestionAnswered: self._to(self.questions.answered),
            request(lab.JoinSharedDoc): partial(lab_people.joined, self),
            request(lab.PassSharedDocMessage): partial(lab_people.person_said, self),
            finished(f.SharedDocBuilt): partial(lab_people.shared_doc_built, self),
            wakeup(f.SharedDocIdle): partial(lab_people.shared_doc_idle, self),
            finished(f.SharedDocFrozen): partial(lab_people.shared_doc_frozen, self),
            finished(f.FreedPagesReleased): freed_pages.released,
            f.SharedDocMirrorDue: lambda due, sender: lab_people.mirror(self, due),
            finished(f.SaveFinished): lambda d: self.act(*self.file.save_returned(d, self.doc)),
            finished(f.FileLooked): lambda d: self.act(
                *self.file.look_returned(d, self.doc, bool(self.peers))
            ),
            finished(f.ExecutionRecorded): self._to(runs.recorded),
            finished(f.LiveExecutionRecorded): self._to(runs.live_recorded),
            finished(f.StoredExecutionRead): self._to(runs.stored_read),
            finished(f.KernelspecsRead): lambda d: self.act(
                *self.opening.kernelspecs_read(d, seat, self.doc.metadata)
            ),
            finished(f.StaleTempsSwept): lambda done: opening.swept(done, self.file.path),
            finished(f.NotebookFileRead): lambda d: self.act(
                *self.opening.file_read(d, self.close.asked)
            ),
            finished(f.JournalAppended): self._to(self.journal.appended),
            finished(f.JournalRead): lambda d: self.act(
                *self.journal.replayed(d, self.doc, self.file.path is None)
            ),
            finished(f.JournalTruncated): self._to(self.journal.truncated),
            finished(f.JournalClosed): self._to(self.journal.closed),
            finished(f.DependenciesPrepared): lambda d: self.act(
                *self.deps.prepared(d, self.doc.metadata, self.close.asked)
            ),
            finished(f.DependenciesRecorded): lambda d: self.act(
                *self.deps.recorded(d, self.close.asked)
            ),
            finished(f.ProjectTrustRecorded): lambda d: self.act(
                *self.deps.project_trust_recorded(d, self.file.path)
            ),
            progress(f.DependenciesPrepared): self._to(self.deps.progressed),
            wakeup(f.AutosaveDue): self._to(self.file.autosave_due),
            wakeup(f.KeepAliveExpired): self._to(seat.keep_alive_expired),
            wakeup(f.FileCheckDue): lambda due: self.act(
                *self.file.check_due(due, bool(self.peers), self.close.asked)
            ),
            wakeup(f.WaitExpired): self._to(runs.wait_expired),
            wakeup(f.ChangeSayDue): lambda due: self.act(*self.sharing.beacon.pause_over(self)),
        }

    def _to(self, decide: Callable[..., list[actions.Action]]) -> Callable[..., None]:
        """A handler that hands what it gets (a message and its sender, a request, finished
        work, a timer's payload) to a part, and carries out what the part returns."""
        return lambda *args: self.act(*decide(*args))

    def act(self, *todo: actions.Action) -> None:
        """Carry out what a part asked for (room/actions.py), in order."""
        for action in todo:
            self._carriers[type(action)](action)

    @cached_property
    def _carriers(self) -> dict[type, Callable[[Any], None]]:
        a = actions
        return {
            **self.effect_carriers(),
            a.StartKernelChild: lambda x: self._start_kernel(),
            a.DetachKernel: lambda x: self.act(*self.seat.detach(x.reason)),
            a.EndChild: lambda x: self.send(x.child, ActorExitRequest()),
            a.Restart: lambda x: self.guarded(x.origin, self._to(self.seat.restart), None),
            a.ProjectReported: lambda x: self.act(*self.deps.project_reported(self.file.path)),
            a.CommitDependencies: self._commit_dependencies,
            a.WantKernel: lambda x: self.act(*self.seat.want()),
            a.Persist: lambda x: self.act(
                *self.file.persist(self.doc, x.purpose, self.journal.seq)
            ),
            a.SaveFile: lambda x: self._save_file(x.path or self.file.path, x.purpose, x.origin),
            a.FinishClose: lambda x: self.act(*self.close.finish(x.saved, x.error)),
            a.SettleClose: lambda x: self.act(*self.close.settle()),
            a.FirstFlushed: lambda x: self.act(*self.opening.first_flushed(x.error)),
            a.BindPath: lambda x: self.act(*self.file.bind(x.path, bool(self.peers))),
            a.TruncateJournal: lambda x: self.act(self.journal.truncate(x.seq)),
            a.ReportStatus: lambda x: self.send(self.daemon, views.status(self)),
            a.ReadKernelspecs: lambda x: self.act(opening.read_kernelspecs(self.file, x.restart)),
            a.ReadJournal: lambda x: self.act(self.journal.read()),
            a.FlushFirst: lambda x: self.act(self.file.first_flush(self.doc, self.journal.seq)),
            a.Loaded: partial(arrivals.loaded, self),
            a.StartFailed: lambda x: arrivals.start_failed(self, x.error),
            a.RefuseHeld: lambda x: arrivals.fail_held_joins(self, x.error),
            a.ReadDone: lambda x: self.act(*self.opening.read_done()),
            a.Started: lambda x: arrivals.started(self, x.joins),
            a.Edited: lambda x: self.act(*self.file.edited()),
            a.SetOutputs: lambda x: edits.set_outputs(self.doc, x),
            a.Merged: self._take_merge,
            a.ResumeAutosave: lambda x: self.act(*self.file.resumed(self.doc.revision)),
            a.NextFileJob: lambda x: self._next_file_job(),
        }

    # --- requests ------------------------------------------------------------------------

    def _on_client_request(self, msg: edge.ClientRequest, sender: ActorAddress) -> None:
        """A request may name a starting room before anyone joined it (the operator's
        console lists starting rooms): there is no document to answer from yet."""
        if self.doc is None:
            self.fail(msg.origin, self.opening.unloaded_error())
        else:
            self.serve(msg.origin, msg.body)

    def receiveMessage(self, msg: Any, sender: ActorAddress) -> None:
        super().receiveMessage(msg, sender)
        lab_people.after_message(self)

    def answer(self, origin: Origin, reply: object) -> None:
        super().answer(origin, reply)
        for repeat in self.once.answered(origin, reply):
            super().answer(repeat, reply)

    def fail(self, origin: Origin, error: NbstageError) -> None:
        super().fail(origin, error)
        for repeat in self.once.failed(origin):
            super().fail(repeat, error)

    def notices_for(self, origin: Origin) -> tuple[Notice, ...]:
        if self.doc is not None:
            self.notices.stand("dependencies", self.env.approval_line(self.doc.metadata))
        return self.notices.take(origin.conn)

    # --- the file (room/file_seat.py) -----------------------------------------------------

    def _save_file(self, path: str, purpose: SavePurpose, origin: Origin | None = None) -> None:
        trusted = self.env.trusted_fingerprint(self.doc.metadata)
        own, seq = self.file.path, self.journal.seq
        self.act(*self.file.save(self.doc, path, purpose, origin, seq, own, trusted))

    def _next_file_job(self) -> None:
        while (job := self.file.next_job()) is not None:
            self.act(job)

    def _take_merge(self, merged: actions.Merged) -> None:
        """The file part merged what the file holds now; the document takes the merge."""
        if merged.notebook is not None:
            edits.take_notebook(self.doc, merged.notebook)
        if merged.holds_all:
            self.file.saved_up_to(self.doc.revision, self.doc.revision)
            self.act(*self.journal.truncate_all())

    # --- the kernel seat and executions (room/kernel_seat.py) -----------------------------

    def _start_kernel(self) -> None:
        self.seat.seated(self.createActor(Kernel))
        self.act(*self.seat.place(self.file.path, self.doc.metadata))

    def _on_kernel_placed(self, msg: slots.KernelPlaced, sender: ActorAddress) -> None:
        """The Daemon's grant starts the waiting kernel; the agents hear why it runs on
        another host than the notebook asks for, if it does."""
        self.act(*self.seat.placed(msg, self.file.path, self.doc.metadata))
        if msg.note is not None and self.seat.slots.held == msg.ticket:
            self.notices.post(Notice(NoticeKind.NOTE, f"{msg.note}."))

    def _execute(self, origin: Origin, req: requests.ExecuteCell) -> None:
        """A repeated key answers for the first run; a new run may start the kernel first."""
        if not self.once.known(scoped_key(req)):
            self.close.refuse("the cell was not run")
            code_cell(self.doc, req.cell_id)
            self.sharing.worked_on(origin.conn, req.cell_id, self.peers)
            self.act(*self.seat.require())
        self.act(*self.seat.runs.execute(origin, req, self.doc, self.once, self.seat.address))

    # --- dependencies (room/dependency_calls.py) ------------------------------------------

    def _commit_dependencies(self, commit: actions.CommitDependencies) -> None:
        """The edit is one room mutation, refused while closing; the part trusts and
        records it."""
        self.guarded(commit.origin, self._dependencies_committed, commit)

    def _dependencies_committed(self, origin: Origin, commit: actions.CommitDependencies) -> None:
        edit = commit.plan.edit
        if edit.after != edit.before:
            self.close.refuse("the dependencies were not changed")
            self.doc.set_dependencies(edit.after)
            self.act(*self.file.edited())
        path, journalled = self.file.path, self.file.journalled
        self.act(self.deps.commit(origin, commit.plan, commit.applied, path, journalled))
