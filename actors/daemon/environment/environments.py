"""Where a kernel's Python comes from: a pool environment, never nbstage's own venv.

Issue 12's first part (docs/notes/environments.md has the plan and its numbers).

- **The template.** One venv per Python interpreter, holding ipykernel and pip with their
  bytecode compiled, is built once with uv in ``template_root`` and shared by every
  state dir of the user, as uv shares its own cache: ``NBSTAGE_TEMPLATE_DIR``, else
  ``$XDG_CACHE_HOME/nbstage``, else ``~/.cache/nbstage``. ``make install`` builds it, so
  a new user's first kernel does not wait for it; a daemon that finds none builds it
  as it starts. Builds are serialised across processes by a lock file, so concurrent
  kernel starts build it once.
- **A pool environment** is a bare venv made for one kernel under
  ``<state dir>/envs/pool/<kernel id>`` (17 files, about 15 ms) and removed with the
  kernel. A ``.pth`` file puts the template's site-packages after its own, so it
  imports ipykernel from the template's compiled files. Its ``sys.prefix`` is its own:
  ``%pip install`` writes there, and a package installed there shadows the template's.
  pip never uninstalls a package outside the running environment ("Not uninstalling
  … outside environment"), so an upgrade in a kernel leaves the template as it was.
- **An inline environment** is a full venv for one set of inline dependencies, cached in
  ``envs_dir`` under the set's fingerprint and built like the template (one build at a
  time per fingerprint, ready only once its marker is written). Each use touches
  ``.nbstage-used``; the daemon removes those unused for ``UNUSED_FOR`` as it starts.
- **A project** runs its kernel through ``uv run --project``, which keeps the project's
  own ``.venv`` and ``uv.lock`` in the project directory (``lock_project``, then
  ``project_argv``), once the project is approved (actors/daemon/environment/projects.py).

uv runs with no configuration but the operator's (``uv_commands.py``), from a folder of
nbstage's, and ends with the process that started it (``uv_guard.py``).

Everything here blocks (uv, file copies). It runs on a Kernel actor's blocking lane,
never in a mailbox.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import time
import venv
from collections.abc import Callable, Collection, Iterator, Sequence
from pathlib import Path

from nbstage.actors.daemon.environment import uv_commands
from nbstage.protocol.common.safe_files import open_private

ENVS_DIR_ENV = "NBSTAGE_ENVS_DIR"
TEMPLATE_DIR_ENV = "NBSTAGE_TEMPLATE_DIR"
POOL = "pool"
READY = ".nbstage-ready"
USED = ".nbstage-used"
BASE_PACKAGES = ("ipykernel", "pip")
TEMPLATE_LINK = "_nbstage_template.pth"
TEMPLATE_PREFIX = "template-py"
UNUSED_FOR = 30 * 24 * 3600.0
ERROR_TAIL = 2000

OnLine = Callable[[str], None]


class EnvironmentUnavailable(Exception):
    """An environment could not be built (no uv, no network, a failed install): uv's words."""


def envs_dir(state_dir: str | Path, environ: dict[str, str] | None = None) -> Path:
    environ = os.environ if environ is None else environ
    chosen = environ.get(ENVS_DIR_ENV)
    return Path(chosen) if chosen else Path(state_dir) / "envs"


def pool_dir(state_dir: str | Path) -> Path:
    return Path(state_dir) / "envs" / POOL


def template_root(environ: dict[str, str] | None = None) -> Path:
    """Where this user's kernel templates live, shared by all of the user's state dirs."""
    environ = os.environ if environ is None else environ
    if chosen := environ.get(TEMPLATE_DIR_ENV):
        return Path(chosen)
    cache = environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "nbstage"


def template_name(
    version: tuple[int, int] = sys.version_info[:2], interpreter: str = sys.executable
) -> str:
    """The template of one interpreter: its version, and which installation it is (two
    Pythons of one version are two templates)."""
    installation = hashlib.sha256(os.path.realpath(interpreter).encode()).hexdigest()[:8]
    return f"{TEMPLATE_PREFIX}{version[0]}.{version[1]}-{installation}"


def template_path(environ: dict[str, str] | None = None) -> Path:
    return template_root(environ) / template_name()


def env_python(env: Path) -> Path:
    return env / "bin" / "python"


def _uv() -> str:
    try:
        from uv import find_uv_bin
    except ImportError as exc:
        raise EnvironmentUnavailable("the uv package is not installed") from exc
    return find_uv_bin()


def _run(command: Sequence[str], on_line: OnLine | None = None, *, cwd: Path) -> None:
    """Run ``command`` (uv) in ``cwd``, a folder of nbstage's, through the guard that ends it
    with this process (``uv_commands.py``), handing each non-empty line it prints to
    ``on_line`` as it comes. On failure, raise with the tail of what it printed."""
    tail = ""
    try:
        process = subprocess.Popen(
            uv_commands.guarded(list(command)),
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            bufsize=1,
        )
    except OSError as exc:
        raise EnvironmentUnavailable(f"{' '.join(command[:3])} failed: {exc}") from exc
    with process:
        assert process.stdout is not None
        try:
            for raw in process.stdout:
                line = raw.rstrip("\r\n")
                if not line:
                    continue
                tail = f"{tail}{line}\n"[-ERROR_TAIL:]
                if on_line is not None:
                    on_line(line)
        except BaseException:
            process.terminate()
            raise
    if process.returncode != 0:
        raise EnvironmentUnavailable(f"{' '.join(command[:3])} failed: {tail.strip()}")


@contextlib.contextmanager
def _locked(root: Path, name: str) -> Iterator[None]:
    """Hold the exclusive lock that serialises building and removing ``root / name``."""
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    with os.fdopen(open_private(root / f".{name}.lock", os.O_WRONLY | os.O_CREAT), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _build_once(env: Path, packages: Sequence[str], on_line: OnLine | None) -> bool:
    """Make ``env`` a ready venv holding ``BASE_PACKAGES`` and ``packages``, compiled, unless
    it is one already; True if this call built it. A build that fails leaves nothing."""
    if (env / READY).exists():
        return False
    with _locked(env.parent, env.name):
        if (env / READY).exists():
            return False
        remove_env(env)
        uv = _uv()
        try:
            options = uv_commands.config_options()
            venv_command = [uv, "venv", *options, "--python", sys.executable, str(env)]
            _run(venv_command, on_line, cwd=env.parent)
            python = str(env_python(env))
            install = [uv, "pip", "install", *options, "--compile-bytecode", "--python", python]
            _run([*install, "--", *BASE_PACKAGES, *packages], on_line, cwd=env.parent)
        except BaseException:
            remove_env(env)
            raise
        (env / READY).touch()
    return True


def ensure_template(root: Path) -> Path:
    """The compiled template venv in ``root``, built first if it is not there yet. Every
    pool kernel imports from it, so ``root`` must be this user's alone."""
    _check_private(root)
    template = root / template_name()
    _build_once(template, (), None)
    return template


def _check_private(root: Path) -> None:
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    facts = root.lstat()
    if not root.is_dir() or root.is_symlink():
        raise EnvironmentUnavailable(f"the template folder {root} is not a plain folder")
    if facts.st_uid != os.getuid() or facts.st_mode & 0o022:
        raise EnvironmentUnavailable(
            f"the template folder {root} is not private to this user (owner uid "
            f"{facts.st_uid}, mode {facts.st_mode & 0o777:o}), so no kernel is layered on it"
        )


def _check_fingerprint(fingerprint: str) -> None:
    if (
        not fingerprint
        or fingerprint.startswith((".", TEMPLATE_PREFIX))
        or fingerprint == POOL
        or Path(fingerprint).name != fingerprint
    ):
        raise ValueError(f"not an inline environment's fingerprint: {fingerprint!r}")


def ensure_inline_env(
    root: Path,
    fingerprint: str,
    requirements: Sequence[str],
    on_line: Callable[[str], None] | None = None,
) -> tuple[Path, bool]:
    """The environment of one inline dependency set, ``root / fingerprint``, built first
    (with uv's progress lines handed to ``on_line``) if it is not ready yet. Returns it and
    whether this call built it; concurrent callers, in any process, share one build."""
    _check_fingerprint(fingerprint)
    env = root / fingerprint
    if (env / READY).exists():
        with contextlib.suppress(FileNotFoundError):
            mark_used(env)
            return env, False
    built = _build_once(env, requirements, on_line)
    mark_used(env)
    return env, built


def mark_used(env: Path) -> None:
    (env / USED).touch()


def last_used(env: Path) -> float:
    """When ``env`` was last used: its use stamp, else when it was made ready, else its
    directory's change."""
    for marker in (env / USED, env / READY):
        with contextlib.suppress(FileNotFoundError):
            return marker.stat().st_mtime
    return env.stat().st_mtime


def install_into(
    env: Path, requirements: Sequence[str], on_line: Callable[[str], None] | None = None
) -> None:
    command = [_uv(), "pip", "install", *uv_commands.config_options()]
    _run([*command, "--python", str(env_python(env)), "--", *requirements], on_line, cwd=env)


def uninstall_from(env: Path, names: Sequence[str]) -> None:
    """Uninstall ``names`` from ``env``; uv skips, with a warning, those not installed."""
    command = [_uv(), "pip", "uninstall", *uv_commands.config_options()]
    _run([*command, "--python", str(env_python(env)), "--", *names], cwd=env)


def lock_project(project: Path) -> None:
    """Write or update ``project/uv.lock``, as ``uv run`` would (an approved project only:
    locking may run its build backend)."""
    options = uv_commands.project_config_options(project)
    _run([_uv(), "lock", *options, "--project", str(project)], cwd=project)


def project_argv(project: Path, launcher: Path) -> list[str]:
    """The start of the command that runs ``launcher`` in ``project``'s own environment
    (uv makes ``project/.venv``), with ipykernel layered on. ``--frozen``: the lock is the
    one ``lock_project`` left, which the project's approval covers. uv reads the project's
    own configuration, and none from above it."""
    options = uv_commands.project_config_options(project)
    return [
        *[_uv(), "run", "--frozen", *options, "--project", str(project)],
        *["--with", "ipykernel", "python", str(launcher)],
    ]


def inline_envs(root: Path) -> list[Path]:
    """Every ready inline environment in ``root``."""
    with contextlib.suppress(FileNotFoundError):
        return sorted(
            env
            for env in root.iterdir()
            if env.name != POOL
            and not env.name.startswith(TEMPLATE_PREFIX)
            and (env / READY).exists()
        )
    return []


def envs_to_collect(
    envs: Sequence[tuple[str, float]], in_use: Collection[str], now: float, max_age: float
) -> list[str]:
    """The fingerprints, of ``(fingerprint, last used)`` pairs, whose environments should
    go: not in use, and unused for ``max_age`` or longer."""
    return [
        fingerprint
        for fingerprint, used in envs
        if fingerprint not in in_use and now - used >= max_age
    ]


def collect_envs(root: Path, in_use: Collection[str], now: float, max_age: float) -> list[Path]:
    """Remove the inline environments of ``root`` that ``envs_to_collect`` picks, each under
    its build lock and only if it still qualifies then. Returns those removed."""
    found = [(env.name, last_used(env)) for env in inline_envs(root)]
    removed = []
    for fingerprint in envs_to_collect(found, in_use, now, max_age):
        env = root / fingerprint
        with _locked(root, fingerprint):
            try:
                still = envs_to_collect([(fingerprint, last_used(env))], in_use, now, max_age)
            except FileNotFoundError:
                continue
            if still:
                (env / READY).unlink(missing_ok=True)
                remove_env(env)
                removed.append(env)
    return removed


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
    """The daemon's start-up work, off its loop: remove ``stale``, build the template so
    that the first kernel does not wait for it, and remove the inline environments unused
    for ``UNUSED_FOR`` (no room is open yet, so none is in use)."""
    for env in stale:
        remove_env(env)
    try:
        ensure_template(template_root())
    finally:
        collect_envs(envs_dir(state_dir), set(), time.time(), UNUSED_FOR)


def _size(env: Path) -> int:
    total = 0
    for folder, _, files in os.walk(env):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(folder, name)).st_size
    return total


def describe_envs(state_dir: str | Path, root: Path | None = None) -> list[dict[str, object]]:
    """The template, and every pool and inline venv of this state dir (the inline ones
    under ``root``, by default this process's ``envs_dir``): kind, path, bytes on
    disk, the time it was last changed (a pool venv's is its kernel's start) and last
    used (an inline venv's use stamp, the others' change); an inline venv's row also has
    its fingerprint. Blocking: it walks the files, which is why only the admin console
    asks."""
    root = envs_dir(state_dir) if root is None else root
    found = [("template", template_path())]
    found += [("pool", env) for env in pool_envs(state_dir)]
    found += [("inline", env) for env in inline_envs(root)]
    rows: list[dict[str, object]] = []
    for kind, env in found:
        if not env.is_dir():
            continue
        changed = env.stat().st_mtime
        row: dict[str, object] = {
            "kind": kind,
            "path": str(env),
            "bytes": _size(env),
            "changed": changed,
            "last_used": changed,
        }
        if kind == "inline":
            row |= {"fingerprint": env.name, "last_used": last_used(env)}
        rows.append(row)
    return rows
