"""Where one kernel's Python runs: an inline environment, a project's, or the pool.

``place_kernel`` is a Kernel's launch work (it blocks: it may build with uv). The order is
issue 12's: a trusted inline dependency set, then an approved project found by walking up
from the notebook (actors/daemon/environment/projects.py), then a fresh pool environment. A build
that fails
leaves the kernel in the pool, and the placement says why; so does a project that waits
for approval or was refused.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path
from typing import TypeGuard

from nbstage.actors.daemon.environment import environments
from nbstage.actors.daemon.environment.projects import (
    ProjectFound,
    ProjectRefused,
    find_project,
    project_fingerprint,
)
from nbstage.protocol.common.frozen import frozen
from nbstage.protocol.daemon_actors.kernel_facts import EnvironmentView, EnvSource
from nbstage.protocol.daemon_actors.kernels import EnvironmentWanted

log = logging.getLogger("nbstage.kernel")


@frozen
class Placement:
    view: EnvironmentView
    python: Path | None = None
    """The interpreter that runs the launcher; None keeps the kernelspec's."""
    project: Path | None = None
    """Run the launcher through ``uv run --project`` in this folder."""
    owned: Path | None = None
    """An environment that is this kernel's alone, removed when it shuts down."""
    template: Path | None = None
    """The template a pool environment is layered on: its zygote forks the kernel."""


Found = ProjectFound | ProjectRefused | None


def project_around(wanted: EnvironmentWanted, home: Path | None = None) -> Found:
    """The project a kernel of ``wanted`` may run in, by one walk up from its notebook;
    None, without a walk, when its inline set decides or it has no folder to search."""
    if _inline_wanted(wanted) or not wanted.search_from:
        return None
    return find_project(Path(wanted.search_from), home or Path.home())


def place_kernel(
    wanted: EnvironmentWanted, state_dir: str, kernel_id: str, found: Found
) -> Placement:
    """``found`` is what ``project_around`` found for ``wanted``."""
    if _inline_wanted(wanted):
        try:
            return _inline(wanted, state_dir, kernel_id)
        except environments.EnvironmentUnavailable as exc:
            problem = f"the inline environment could not be built: {exc}"
            log.warning("kernel %s starts in the pool: %s", kernel_id, problem)
            return _pool(state_dir, kernel_id, EnvironmentView(EnvSource.POOL, problem=problem))
    if _approved(found, wanted):
        try:
            return _project(found.folder)
        except (environments.EnvironmentUnavailable, OSError) as exc:
            problem = f"the project at {found.folder} could not be locked: {exc}"
            log.warning("kernel %s starts in the pool: %s", kernel_id, problem)
            return _pool(state_dir, kernel_id, EnvironmentView(EnvSource.POOL, problem=problem))
    return _pool(state_dir, kernel_id, _unused_project(found))


def pool_view(wanted: EnvironmentWanted, found: Found) -> EnvironmentView | None:
    """What ``place_kernel`` would report of the pool (naming any project found but not
    used), or None when it would not choose the pool: an inline set, an approved project."""
    if _inline_wanted(wanted) or _approved(found, wanted):
        return None
    return _unused_project(found)


def runs_in_pool(wanted: EnvironmentWanted, home: Path | None = None) -> bool:
    return pool_view(wanted, project_around(wanted, home)) is not None


def _inline_wanted(wanted: EnvironmentWanted) -> bool:
    return bool(wanted.requirements and wanted.fingerprint)


def _approved(found: object, wanted: EnvironmentWanted) -> TypeGuard[ProjectFound]:
    return isinstance(found, ProjectFound) and found.fingerprint in wanted.trusted_projects


def _unused_project(found: Found) -> EnvironmentView:
    """The pool's view, naming a project that waits for approval or was refused."""
    if isinstance(found, ProjectFound):
        problem = f"the project at {found.folder} is not approved"
        return EnvironmentView(EnvSource.POOL, found.fingerprint, str(found.folder), None, problem)
    if isinstance(found, ProjectRefused):
        log.warning("the project at %s was refused: %s", found.folder, found.reason)
        return EnvironmentView(EnvSource.POOL, project=str(found.folder), problem=found.reason)
    return EnvironmentView(EnvSource.POOL)


def _project(folder: Path) -> Placement:
    """Lock first (uv writes or updates ``uv.lock`` as ``uv run`` would), then run frozen,
    so the lock the kernel runs from is the one its fingerprint covers; the Room takes that
    fingerprint as approved, since it comes from an approved one."""
    environments.lock_project(folder)
    fingerprint = project_fingerprint(folder)
    view = EnvironmentView(EnvSource.PROJECT, fingerprint, project=str(folder))
    return Placement(view, project=folder)


def _inline(wanted: EnvironmentWanted, state_dir: str, kernel_id: str) -> Placement:
    """The shared environment of the set, under a bare venv of the kernel's own, as the
    pool is layered on the template: a ``%pip install`` in the kernel lands in its own
    venv, never in the environment that every notebook with this set shares."""
    root = environments.envs_dir(state_dir)
    env, _ = environments.ensure_inline_env(root, wanted.fingerprint, wanted.requirements)
    environments.mark_used(env)
    own = environments.take_pool_env(env, state_dir, kernel_id)
    view = EnvironmentView(EnvSource.INLINE, wanted.fingerprint, path=str(env))
    return Placement(view, python=environments.env_python(own), owned=own)


def _pool(state_dir: str, kernel_id: str, view: EnvironmentView) -> Placement:
    try:
        template = environments.ensure_template(environments.template_root())
    except environments.EnvironmentUnavailable as exc:
        said = f"no pool environment, so nbstage's own runs the kernel: {exc}"
        log.warning("kernel %s: %s", kernel_id, said)
        return Placement(replace(view, problem=said))
    env = environments.take_pool_env(template, state_dir, kernel_id)
    python = environments.env_python(env)
    return Placement(replace(view, path=str(env)), python=python, owned=env, template=template)
