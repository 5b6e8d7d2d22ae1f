"""manage_dependencies in the Room, as plain functions: the reply, the refusals after
the environment work, and the work that records the edit and the trust
(actors/dependencies.py has the rules; room/environment.py the state)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from nbstage.actors import dependencies
from nbstage.actors.journal_store import JournalStore
from nbstage.actors.room.environment import record_trust
from nbstage.protocol.errors import ErrorCode, NbstageError
from nbstage.protocol.kernels import EnvironmentView
from nbstage.protocol.offload import BlockingWorkDone
from nbstage.protocol.replies import (
    DependenciesApplied,
    DependenciesManaged,
    DependencyRemoval,
    DependencySide,
    DependencyTrust,
)


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
