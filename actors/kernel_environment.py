"""Where one kernel's Python runs: an inline environment, a project's, or the pool.

``place_kernel`` is a Kernel's launch work (it blocks: it may build with uv). The order is
issue 12's: a trusted inline dependency set, then a ``pyproject.toml`` found by walking up
from the notebook, then a fresh pool environment. A build that fails leaves the kernel in
the pool, and the placement says why.
"""

from __future__ import annotations

import logging
from pathlib import Path

from nbstage.actors import environments
from nbstage.actors.dependencies import EnvSource, find_project
from nbstage.protocol.frozen import frozen
from nbstage.protocol.kernels import EnvironmentView, EnvironmentWanted

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


def place_kernel(
    wanted: EnvironmentWanted, state_dir: str, kernel_id: str, home: Path | None = None
) -> Placement:
    problem = None
    if wanted.requirements and wanted.fingerprint:
        try:
            return _inline(wanted, state_dir)
        except environments.EnvironmentUnavailable as exc:
            problem = f"the inline environment could not be built: {exc}"
            log.warning("kernel %s starts in the pool: %s", kernel_id, problem)
    elif wanted.search_from:
        project = find_project(Path(wanted.search_from), home or Path.home())
        if project is not None:
            view = EnvironmentView(EnvSource.PROJECT.value, project=str(project))
            return Placement(view, project=project)
    return _pool(state_dir, kernel_id, problem)


def runs_in_pool(wanted: EnvironmentWanted, home: Path | None = None) -> bool:
    """Whether ``place_kernel`` would choose the pool: no inline set to build, no project."""
    if wanted.requirements and wanted.fingerprint:
        return False
    return (
        not wanted.search_from
        or find_project(Path(wanted.search_from), home or Path.home()) is None
    )


def _inline(wanted: EnvironmentWanted, state_dir: str) -> Placement:
    root = environments.envs_dir(state_dir)
    env, _ = environments.ensure_inline_env(root, wanted.fingerprint, wanted.requirements)
    environments.mark_used(env)
    view = EnvironmentView(EnvSource.INLINE.value, wanted.fingerprint, path=str(env))
    return Placement(view, python=environments.env_python(env))


def _pool(state_dir: str, kernel_id: str, problem: str | None) -> Placement:
    try:
        template = environments.ensure_template(environments.template_root())
    except environments.EnvironmentUnavailable as exc:
        said = f"no pool environment, so nbstage's own runs the kernel: {exc}"
        log.warning("kernel %s: %s", kernel_id, said)
        return Placement(EnvironmentView(EnvSource.POOL.value, problem=said))
    env = environments.take_pool_env(template, state_dir, kernel_id)
    view = EnvironmentView(EnvSource.POOL.value, path=str(env), problem=problem)
    return Placement(view, python=environments.env_python(env), owned=env)
