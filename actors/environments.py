"""Where a kernel's Python comes from: a pool environment, never nbstage's own venv.

Issue 12's first part (docs/notes/environments.md has the plan and its numbers).

- **The template.** One venv per Python version, holding ipykernel and pip with their
  bytecode compiled, is built once with uv in ``envs_dir`` (``NBSTAGE_ENVS_DIR``, by
  default ``<state dir>/envs``). Builds are serialised across processes by a lock file,
  so concurrent kernel starts build it once.
- **A pool environment** is a bare venv made for one kernel under
  ``<state dir>/envs/pool/<kernel id>`` (17 files, about 15 ms) and removed with the
  kernel. A ``.pth`` file puts the template's site-packages after its own, so it
  imports ipykernel from the template's compiled files. Its ``sys.prefix`` is its own:
  ``%pip install`` writes there, and a package installed there shadows the template's.
  pip never uninstalls a package outside the running environment ("Not uninstalling
  … outside environment"), so an upgrade in a kernel leaves the template as it was.

Everything here blocks (uv, file copies). It runs on a Kernel actor's blocking lane,
never in a mailbox.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

ENVS_DIR_ENV = "NBSTAGE_ENVS_DIR"
POOL = "pool"
READY = ".nbstage-ready"
BASE_PACKAGES = ("ipykernel", "pip")
TEMPLATE_LINK = "_nbstage_template.pth"


class EnvironmentUnavailable(Exception):
    """The template could not be built (no uv, no network, a failed install): uv's words."""


def envs_dir(state_dir: str | Path, environ: dict[str, str] | None = None) -> Path:
    environ = os.environ if environ is None else environ
    chosen = environ.get(ENVS_DIR_ENV)
    return Path(chosen) if chosen else Path(state_dir) / "envs"


def pool_dir(state_dir: str | Path) -> Path:
    return Path(state_dir) / "envs" / POOL


def template_name(version: tuple[int, int] = sys.version_info[:2]) -> str:
    return f"template-py{version[0]}.{version[1]}"


def env_python(env: Path) -> Path:
    return env / "bin" / "python"


def _uv() -> str:
    try:
        from uv import find_uv_bin
    except ImportError as exc:
        raise EnvironmentUnavailable("the uv package is not installed") from exc
    return find_uv_bin()


def _run(command: list[str]) -> None:
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip()
        raise EnvironmentUnavailable(f"{' '.join(command[:3])} failed: {said[-2000:]}")


def ensure_template(root: Path) -> Path:
    """The compiled template venv in ``root``, built first if it is not there yet."""
    template = root / template_name()
    if (template / READY).exists():
        return template
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    with open(root / f".{template.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (template / READY).exists():
            return template
        shutil.rmtree(template, ignore_errors=True)
        uv = _uv()
        _run([uv, "venv", "--quiet", "--python", sys.executable, str(template)])
        python = str(env_python(template))
        _run(
            [
                uv,
                "pip",
                "install",
                "--quiet",
                "--compile-bytecode",
                "--python",
                python,
                *BASE_PACKAGES,
            ]
        )
        (template / READY).touch()
    return template


def site_packages(env: Path) -> Path:
    return env / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"


def take_pool_env(template: Path, state_dir: str | Path, kernel_id: str) -> Path:
    """A fresh environment for one kernel, layered on the template."""
    target = pool_dir(state_dir) / kernel_id
    target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    venv.create(target, symlinks=True, with_pip=False)
    (site_packages(target) / TEMPLATE_LINK).write_text(f"{site_packages(template)}\n")
    return target


def remove_env(env: Path) -> None:
    shutil.rmtree(env, ignore_errors=True)


def pool_envs(state_dir: str | Path) -> list[Path]:
    """Every pool environment of this state dir. Listed as the daemon starts (it holds the
    state dir's lock, and kernels die with their daemon), these are a dead daemon's."""
    with contextlib.suppress(FileNotFoundError):
        return sorted(pool_dir(state_dir).iterdir())
    return []


def prepare_envs(state_dir: str | Path, stale: list[Path]) -> None:
    """The daemon's start-up work, off its loop: remove ``stale``, then build the template
    so that the first kernel does not wait for it."""
    for env in stale:
        remove_env(env)
    ensure_template(envs_dir(state_dir))


def _size(env: Path) -> int:
    total = 0
    for folder, _, files in os.walk(env):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(folder, name)).st_size
    return total


def describe_envs(state_dir: str | Path) -> list[dict[str, object]]:
    """Every template and pool venv of this state dir: kind, path, bytes on disk and the
    time it was last changed (a pool venv's is its kernel's start). Blocking: it walks
    the files, which is why only the admin console asks."""
    root = envs_dir(state_dir)
    found = [("template", root / template_name())]
    found += [("pool", env) for env in pool_envs(state_dir)]
    return [
        {"kind": kind, "path": str(env), "bytes": _size(env), "changed": env.stat().st_mtime}
        for kind, env in found
        if env.is_dir()
    ]
