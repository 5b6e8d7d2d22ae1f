"""The Room's environment part: which kernelspec the notebook runs, which dependency
sets are trusted for it, where its kernel's Python comes from, and the work that builds
or syncs an environment (actors/daemon/environment/dependencies.py, environments.py, projects.py).

Plain state and plain functions: the work it makes runs on the edge's workers, through
the Room; the registry is read and written there, on connections of its own.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from nbstage.actors.daemon.environment import dependencies, environments, projects
from nbstage.actors.daemon.registry import Registry
from nbstage.protocol.common.errors import ErrorCode, NbstageError
from nbstage.protocol.daemon.notices import Notice
from nbstage.protocol.daemon.replies import DependenciesManaged
from nbstage.protocol.daemon_actors.edge import Origin
from nbstage.protocol.daemon_actors.kernel_facts import EnvironmentView

log = logging.getLogger("nbstage.room")


class EnvironmentSeat:
    def __init__(self) -> None:
        self.kernel_name: str | None = None
        """The kernelspec the kernel runs; None until chosen, or when none fits."""
        self.kernel_refused: str | None = None
        """Why no installed kernelspec fits the notebook; calls that need a kernel answer it."""
        self.trusted: set[str] = set()
        """Fingerprints of the dependency sets approved or written for this notebook: only
        those are built (actors/daemon/environment/dependencies.py)."""
        self.running: EnvironmentView | None = None
        """Where the running kernel's Python comes from; None while no kernel is ready."""
        self.pending: list[tuple[Origin, DependenciesManaged]] = []
        """manage_dependencies calls answered once the kernel is up in its new environment."""
        self.jobs = 0
        """Builds and syncs under way: a close waits for them, to answer their calls."""

    def refuse_without_kernelspec(self, has_runtime: bool) -> None:
        if self.kernel_refused is not None:
            raise NbstageError(ErrorCode.UNKNOWN_RUNTIME, self.kernel_refused)
        if has_runtime and self.kernel_name is None:
            raise NbstageError(
                ErrorCode.NO_KERNEL, "The notebook's kernel is still being chosen; try again."
            )

    def dependency_set(self, metadata: dict) -> tuple[tuple[str, ...], str | None, bool]:
        """The notebook's inline dependencies, their fingerprint (None for none) and
        whether that set is trusted here."""
        deps = dependencies.read_dependencies(metadata)
        fp = dependencies.fingerprint(deps) if deps else None
        return deps, fp, fp in self.trusted

    def approval_line(self, metadata: dict) -> Notice | None:
        deps, fp, trusted = self.dependency_set(metadata)
        if fp is not None:
            return None if trusted else dependencies.approval_line(deps)
        return projects.approval_line(self.running, self.trusted)

    def shown(self, metadata: dict) -> EnvironmentView | None:
        """The running kernel's environment, or before it is up, where its dependencies
        put it, if they decide."""
        if self.running is not None:
            return self.running
        _, fp, trusted = self.dependency_set(metadata)
        if fp is None:
            return None
        if trusted:
            return EnvironmentView(dependencies.EnvSource.INLINE, fp)
        waiting = f"its dependencies wait for approval ({dependencies.TRUST_CALL})"
        return EnvironmentView(dependencies.EnvSource.POOL, problem=waiting)

    def trusted_fingerprint(self, metadata: dict) -> str | None:
        """The notebook's dependency set, when it has one that is trusted: a save to a new
        path carries the trust there."""
        _, fp, trusted = self.dependency_set(metadata)
        return fp if trusted else None

    def project_reported(self) -> tuple[Notice | None, str | None]:
        """A kernel up in an approved project reports the fingerprint after uv's lock,
        which is approved with it (``place_kernel``): (the refusal to say once, the lock's
        fingerprint newly trusted)."""
        refused = projects.refusal_line(self.running)
        locked = projects.locked_fingerprint(self.running)
        if locked is None or locked in self.trusted:
            return refused, None
        self.trusted.add(locked)
        return refused, locked

    def approve_project(self, plan: dependencies.DependencyPlan) -> tuple[str, Notice] | None:
        """trust=true with no inline set approves the project the kernel waits for:
        (its fingerprint, the line that says so)."""
        if not plan.approve or plan.edit.after:
            return None
        waiting = projects.waiting_project(self.running)
        if waiting is None or waiting in self.trusted:
            return None
        self.trusted.add(waiting)
        return waiting, projects.approved_line(self.running)

    def build_work(self, plan: dependencies.DependencyPlan, state_dir: str) -> Callable:
        """Work that takes ``report(line)``: uv's lines go to the caller as progress."""
        if not plan.edit.after or not plan.trusted_after:
            return lambda report: None
        root = environments.envs_dir(state_dir)
        fp, reqs = plan.after_fingerprint, dependencies.normalised_set(plan.edit.after)
        return lambda report: environments.ensure_inline_env(root, fp, reqs, report)

    def sync_work(self, plan: dependencies.DependencyPlan) -> Callable:
        """Install the whole set into the running pool kernel's own venv, then uninstall
        what the call removed (so a failed install leaves the kernel as it was); refused
        where that would touch what is not the kernel's."""
        problem = sync_refusal(plan, self.running)
        if problem is not None:
            raise NbstageError(
                ErrorCode.BAD_REQUEST, f"apply='sync' was refused, so nothing changed: {problem}."
            )
        path = Path(self.running.path)
        wanted, removed = plan.edit.after, plan.edit.removed.removed
        kept = {dependencies.requirement_name(r) for r in wanted}
        gone = [n for n in map(dependencies.requirement_name, removed) if n not in kept]

        def sync(report: Callable[[str], None]) -> None:
            if wanted:
                environments.install_into(path, wanted, report)
            if gone:
                environments.uninstall_from(path, gone)

        return sync


def sync_refusal(plan: dependencies.DependencyPlan, env: EnvironmentView | None) -> str | None:
    if not plan.trusted_after:
        return (
            "its dependencies are not approved; approve them with "
            'manage_dependencies(trust=true, apply="sync")'
        )
    if env is None:
        return "the kernel is still starting; try again in a moment"
    if env.source != dependencies.EnvSource.POOL or env.path is None:
        return (
            f"the kernel runs in a shared {env.source} environment; use "
            'manage_dependencies(apply="restart")'
        )
    return None


def trusted_for(registry: Path, path: str | None) -> set[str]:
    """The dependency sets trusted for ``path``; none when the registry cannot say, so a
    notebook's packages are never installed on a read that failed."""
    if path is None:
        return set()
    try:
        reader = Registry(registry)
        try:
            return reader.trusted_fingerprints(path)
        finally:
            reader.close()
    except (sqlite3.Error, OSError) as exc:
        log.warning("could not read the trusted dependencies of %s: %s", path, exc)
        return set()


def record_trust(registry: Path, path: str, fingerprint: str) -> None:
    """Worker-thread work, on a connection of its own: the room's may close meanwhile."""
    writer = Registry(registry)
    try:
        writer.trust(path, fingerprint)
    finally:
        writer.close()


def record_trust_after_save(registry: Path, path: str, fingerprint: str | None) -> Any:
    """A save to a new path carries the trust there; a failure is logged, the save stands."""
    if fingerprint is None:
        return
    try:
        record_trust(registry, path, fingerprint)
    except (sqlite3.Error, OSError) as exc:
        log.error("saved to %s, but its dependencies' trust was not: %s", path, exc)
