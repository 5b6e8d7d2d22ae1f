"""manage_dependencies in the Room: the part that plans a call, prepares the environment,
records the edit and the trust and decides whom to answer (``DependencyCalls``), and the
plain functions it uses (actors/daemon/environment/dependencies.py has the rules;
room/environment.py the
state). The edit itself is the Room's: the part never touches the document."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from nbstage.actors.daemon.environment import dependencies
from nbstage.actors.daemon.notebook import journal
from nbstage.actors.daemon.notebook.journal_store import JournalStore
from nbstage.actors.daemon.room.actions import (
    Action,
    Answer,
    CommitDependencies,
    DetachKernel,
    Fail,
    Offload,
    Send,
    SettleClose,
    WantKernel,
)
from nbstage.actors.daemon.room.closing import closing_error
from nbstage.actors.daemon.room.environment import EnvironmentSeat, record_trust
from nbstage.actors.daemon.room.journalling import Journalling
from nbstage.actors.daemon.room.notices import NoticeBoard
from nbstage.protocol.common.errors import ErrorCode, NbstageError
from nbstage.protocol.common.offload import BlockingWorkDone
from nbstage.protocol.daemon.replies import (
    DependenciesApplied,
    DependenciesManaged,
    DependencyRemoval,
    DependencySide,
    DependencyTrust,
)
from nbstage.protocol.daemon.requests import ApplyDependencies, ManageDependencies
from nbstage.protocol.daemon_actors.edge import Origin, RequestProgressed
from nbstage.protocol.daemon_actors.kernel_facts import EnvironmentView
from nbstage.protocol.daemon_actors.room_followups import (
    DependenciesPrepared,
    DependenciesRecorded,
    ProjectTrustRecorded,
)
from nbstage.protocol.daemon_actors.rooms import StartRoom

log = logging.getLogger("nbstage.room")


class DependencyCalls:
    """Shares the environment's state, the journal and the notices with the Room."""

    def __init__(self, env: EnvironmentSeat, journal: Journalling, notices: NoticeBoard) -> None:
        self.env, self.journal, self.notices = env, journal, notices
        self.config: StartRoom | None = None

    def start(self, config: StartRoom) -> None:
        self.config = config

    @property
    def registry_file(self) -> Path:
        return Path(self.config.state_dir) / "registry.sqlite3"

    def plan(self, req: ManageDependencies, metadata: dict) -> dependencies.DependencyPlan:
        current = dependencies.read_dependencies(metadata)
        return dependencies.plan_change(
            current, self.env.trusted, req.add, req.remove, req.trust, req.dependency_fingerprint
        )

    def manage(
        self, origin: Origin, req: ManageDependencies, metadata: dict, seat: Any
    ) -> list[Action]:
        """manage_dependencies: the edit alone, or first the environment work, which needs
        the kernel (``seat``) to be possible."""
        plan = self.plan(req, metadata)
        if req.apply is ApplyDependencies.NONE:
            return [CommitDependencies(origin, plan)]
        return [*seat.require(), self.prepare(origin, req, plan)]

    def prepare(
        self, origin: Origin, req: ManageDependencies, plan: dependencies.DependencyPlan
    ) -> Offload:
        """apply=restart or sync does the environment work first: a build that fails
        changes nothing. Progress lines go to the caller."""
        started = time.monotonic()
        if req.apply is ApplyDependencies.RESTART:
            work = self.env.build_work(plan, self.config.state_dir)
        else:
            work = self.env.sync_work(plan)
        token = DependenciesPrepared(origin, plan, req.apply, started)
        self.env.jobs += 1
        return Offload(token, work, reports=True)

    def prepared(self, done: BlockingWorkDone, metadata: dict, closing: bool) -> list[Action]:
        """The environment work came back: the edit to commit, or whom to refuse."""
        token: DependenciesPrepared = done.token
        self.env.jobs -= 1
        seconds = round(time.monotonic() - token.started, 3)
        if closing:
            refused = closing_error("the dependencies were not changed")
            return [Fail(token.origin, refused), SettleClose()]
        refusal = refusal_after_work(done, metadata)
        if refusal is not None:
            return [Fail(token.origin, refusal)]
        applied = DependenciesApplied(token.mode, True, seconds)
        return [CommitDependencies(token.origin, token.plan, applied)]

    def commit(
        self,
        origin: Origin,
        plan: dependencies.DependencyPlan,
        applied: DependenciesApplied | None,
        path: str | None,
        journalled: bool,
    ) -> Offload:
        """The edit is made (by the Room): trust what the plan trusts, and record both; the
        answer goes once they are durable."""
        edit = plan.edit
        trusts = []
        if plan.trusted_after and plan.after_fingerprint not in self.env.trusted:
            trusts.append(plan.after_fingerprint)
        if plan.trusted_after:
            self.env.trusted.add(plan.after_fingerprint)
        approved = self.env.approve_project(plan)
        if approved is not None:
            trusts.append(approved[0])
            self.notices.post(approved[1])
        reply = managed(plan, self.env.running, applied)
        changed = edit.after != edit.before
        work = self._record(edit.after if changed and journalled else None, path, trusts)
        restart = applied is not None and applied.mode == ApplyDependencies.RESTART
        return self.journal.work(DependenciesRecorded(origin, reply, restart), work)

    def recorded(self, done: BlockingWorkDone, closing: bool) -> list[Action]:
        """Answer now, or (for a restart) once the kernel is up in its new environment."""
        self.journal.settled()
        token: DependenciesRecorded = done.token
        if not done.ok:
            log.error(
                "could not record the dependencies of %s: %s", self.config.notebook_id, done.error
            )
        if not token.restart:
            return [Answer(token.origin, token.reply), SettleClose()]
        if closing:
            refused = closing_error("the kernel was not restarted")
            return [Fail(token.origin, refused), SettleClose()]
        self.env.pending.append((token.origin, token.reply))
        return [DetachKernel("restarted into its new environment"), WantKernel(), SettleClose()]

    def progressed(self, token: DependenciesPrepared, line: str) -> list[Action]:
        """A line of the environment work, for the caller."""
        return [Send(self.config.edge, RequestProgressed(token.origin, f"uv: {line}"))]

    def project_reported(self, path: str | None) -> list[Action]:
        """A kernel up in a project: say a refusal once; record a lock newly trusted."""
        refused, locked = self.env.project_reported()
        if refused is not None:
            self.notices.post(refused)
        if locked is None or path is None:
            return []
        return [self.journal.work(ProjectTrustRecorded(), self._record(None, path, [locked]))]

    def project_trust_recorded(self, done: BlockingWorkDone, path: str | None) -> list[Action]:
        self.journal.settled()
        if not done.ok:
            log.error("could not record the project trust of %s: %s", path, done.error)
        return [SettleClose()]

    def _record(
        self, journalled: tuple[str, ...] | None, path: str | None, trusts: list[str]
    ) -> Callable[[], Any]:
        record = None
        if journalled is not None:
            seq, data = self.journal.next_record(journal.dependencies(list(journalled)))
            record = (self.journal.store, self.config.notebook_id, seq, data)
        return record_work(record, self.registry_file, path, tuple(trusts) if path else ())


def managed(
    plan: dependencies.DependencyPlan,
    running: EnvironmentView | None,
    applied: DependenciesApplied | None,
) -> DependenciesManaged:
    edit, removal = plan.edit, plan.edit.removed
    return DependenciesManaged(
        DependencySide(list(edit.before), plan.before_fingerprint),
        DependencySide(list(edit.after), plan.after_fingerprint),
        list(edit.added),
        DependencyRemoval(list(removal.requested), list(removal.removed), list(removal.not_found)),
        DependencyTrust(**dependencies.trust_state(edit.after, plan.trusted_after)),
        running,
        applied,
    )


def refusal_after_work(done: BlockingWorkDone, metadata: dict) -> NbstageError | None:
    """Why a build or sync that came back changes nothing: it failed, or the notebook's
    dependencies changed while it ran."""
    if not done.ok:
        return NbstageError(
            ErrorCode.BUILD_FAILED,
            f"Nothing was changed, and the kernel runs as before: {done.error}",
        )
    current = dependencies.read_dependencies(metadata)
    if dependencies.fingerprint(current) != done.token.plan.before_fingerprint:
        return NbstageError(
            ErrorCode.DEPENDENCIES_CHANGED,
            "Dependencies changed since review, while the environment was being "
            "built; nothing was changed. Read them again and retry.",
        )
    return None


def record_work(
    journal: tuple[JournalStore, str, int, bytes] | None,
    registry: Path,
    path: str | None,
    trusts: tuple[str, ...],
) -> Callable[[], Any]:
    """Worker-thread work: append the journal record (store, notebook id, seq, data), if
    any, then record each trusted fingerprint for ``path``."""

    def record() -> None:
        if journal is not None:
            store, notebook_id, seq, data = journal
            store.append(notebook_id, seq, data)
        for trust in trusts:
            record_trust(registry, path, trust)

    return record
