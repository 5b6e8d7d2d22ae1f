"""What nbstage's uv reads, and how its runs end with the daemon.

uv reads ``uv.toml`` or a ``pyproject.toml`` with ``[tool.uv]`` from its working folder and
every folder above, and the user's ``~/.config/uv/uv.toml``. A daemon that started in an
agent's folder would build environments with whatever sits above that folder, someone
else's files among them. So every build, install and uninstall runs:

- with ``--no-config``, or with ``--config-file`` naming the one file the operator chose
  (the ``uv_config_file`` setting, for an index mirror, say), never with discovery;
- from a folder nbstage owns (the environments folder);
- through ``uv_guard.py``, which ends it if the daemon dies.

uv's environment variables (``UV_INDEX``, ``UV_CACHE_DIR``…) come from the daemon's
environment, the user's own, and are honoured as uv would honour them in their shell.

A project's kernel (``uv run --project DIR``) reads the project's own configuration, as
part of the project: its ``uv.toml`` (named with ``--config-file``), or the ``[tool.uv]``
of its ``pyproject.toml``, which uv's discovery finds first. Not when a folder above
declares a uv workspace, though: uv would then read that folder's configuration instead.
Such a project, and one with no configuration, gets ``--no-config`` (or the operator's
file), so no file above it applies.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from nbstage.actors.daemon.environment.projects import read_pyproject

GUARD = Path(__file__).with_name("uv_guard.py")

_config_file: Path | None = None


def use_config_file(path: str) -> None:
    """Have every uv run of this process read ``path`` as its only configuration; "" for
    none. The daemon calls it once as it starts, from its settings."""
    global _config_file
    _config_file = Path(path).expanduser().absolute() if path else None


def config_options() -> list[str]:
    """The options that decide which configuration a build's uv reads."""
    if _config_file is None:
        return ["--no-config"]
    return ["--config-file", str(_config_file)]


def _uv_table(pyproject: Path) -> dict[str, Any] | None:
    tool = (read_pyproject(pyproject) or {}).get("tool")
    uv = tool.get("uv") if isinstance(tool, dict) else None
    return uv if isinstance(uv, dict) else None


def _below_a_workspace(project: Path) -> bool:
    return any(
        "workspace" in (_uv_table(folder / "pyproject.toml") or {}) for folder in project.parents
    )


def project_config_options(project: Path) -> list[str]:
    """The options that decide which configuration a project kernel's ``uv run`` reads."""
    if (project / "uv.toml").is_file():
        return ["--config-file", str(project / "uv.toml")]
    if _uv_table(project / "pyproject.toml") is not None and not _below_a_workspace(project):
        return []
    return config_options()


def guarded(command: list[str], owner: int | None = None) -> list[str]:
    """``command`` run through the guard, which ends it once ``owner`` (this process, by
    default) is gone."""
    owner = os.getpid() if owner is None else owner
    return [sys.executable, "-I", "-S", str(GUARD), str(owner), *command]
