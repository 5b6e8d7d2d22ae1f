"""A git revision of nbstage, exported and installed once, for benches that compare two.

Each revision gets a folder under ``$NBSTAGE_BENCH_CACHE`` (else
``$XDG_CACHE_HOME/nbstage-bench``, else ``~/.cache/nbstage-bench``) named after its
commit: ``src/`` holds ``git archive`` of the commit (no worktree is registered in the
repository), installed by the revision's own ``make install bytecode`` into
``src/.venv``, and ``envs/`` and ``templates/`` hold its kernels' environments. A second
run finds the folder ready and starts at once; ``rm -rf`` the cache to rebuild, and
``--prune`` (bench/revisions.py) removes every revision but the two it compares.

A revision is driven only through its ``nbstage`` command and the environment variables
it reads, never by importing it: its modules may lie elsewhere than the bench's own.
Both the older layout (the kernel template in ``NBSTAGE_ENVS_DIR``) and the newer
(``NBSTAGE_TEMPLATE_DIR``) are pointed into the revision's folder, so two revisions
never share a template and neither touches the user's own.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

CACHE_ENV = "NBSTAGE_BENCH_CACHE"
READY = ".ready"
SHORT = 12
"""Characters of the commit in the folder's name (it ends up in socket paths)."""
BUILD_TIMEOUT = 1800


def log(message: str) -> None:
    print(f"[checkouts] {message}", file=sys.stderr, flush=True)


def cache_root(environ: dict[str, str] | None = None) -> Path:
    environ = dict(os.environ) if environ is None else environ
    if chosen := environ.get(CACHE_ENV):
        return Path(chosen)
    cache = environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "nbstage-bench"


@dataclass(frozen=True)
class Checkout:
    """One installed revision: what the user named, the commit, and its folder."""

    label: str
    sha: str
    root: Path

    @property
    def src(self) -> Path:
        return self.root / "src"

    @property
    def cli(self) -> list[str]:
        """Its ``nbstage`` command, as its console script."""
        return [str(self.src / ".venv" / "bin" / "nbstage")]

    @property
    def env(self) -> dict[str, str]:
        """What its daemon, `nbstage mcp` and kernels get on top of the bench's environment."""
        return {
            "NBSTAGE_ENVS_DIR": str(self.root / "envs"),
            "NBSTAGE_TEMPLATE_DIR": str(self.root / "templates"),
        }

    @property
    def name(self) -> str:
        short = self.sha[:7]
        return short if self.label.startswith(short) else f"{self.label} ({short})"


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True, timeout=60
    )
    return done.stdout.strip()


def resolve(repo: Path, revision: str) -> str:
    """The full commit ``revision`` names in ``repo``; raises if it names none."""
    return git(repo, "rev-parse", "--verify", "--end-of-options", f"{revision}^{{commit}}")


def repository(inside: Path) -> Path:
    return Path(git(inside, "rev-parse", "--show-toplevel"))


@contextmanager
def locked(path: Path) -> Iterator[None]:
    """Held by one bench process at a time: two runs never build one revision together."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def prepare(repo: Path, revision: str, cache: Path | None = None) -> Checkout:
    """The revision, exported and installed unless its folder is ready already."""
    sha = resolve(repo, revision)
    root = (cache or cache_root()) / sha[:SHORT]
    checkout = Checkout(revision, sha, root)
    with locked(root.parent / f"{sha[:SHORT]}.lock"):
        marker = root / READY
        if marker.exists() and marker.read_text().strip() == sha:
            log(f"{checkout.name}: ready in {root}")
            return checkout
        build(repo, checkout)
        marker.write_text(sha + "\n")
    return checkout


def build(repo: Path, checkout: Checkout) -> None:
    """``git archive`` into src/, then the revision's own ``make install bytecode``."""
    start = time.monotonic()
    shutil.rmtree(checkout.root, ignore_errors=True)
    checkout.src.mkdir(parents=True)
    log(f"{checkout.name}: exporting {checkout.sha} into {checkout.src}")
    archive = subprocess.Popen(
        ["git", "-C", str(repo), "archive", "--format=tar", checkout.sha], stdout=subprocess.PIPE
    )
    try:
        subprocess.run(
            ["tar", "-x", "-C", str(checkout.src)], stdin=archive.stdout, check=True, timeout=300
        )
    finally:
        if archive.stdout is not None:
            archive.stdout.close()
        if archive.wait(timeout=60) != 0:
            raise RuntimeError(f"git archive {checkout.sha} failed")
    log(f"{checkout.name}: make install bytecode (a few minutes, once)")
    # The interpreter the bench runs on, outside its venv: both revisions on one Python.
    python = getattr(sys, "_base_executable", sys.executable)
    env = {**os.environ, **checkout.env}
    env.pop("VIRTUAL_ENV", None)
    subprocess.run(
        ["make", "-C", str(checkout.src), "install", "bytecode", f"PYTHON={python}"],
        env=env,
        check=True,
        timeout=BUILD_TIMEOUT,
        stdout=sys.stderr,
    )
    log(f"{checkout.name}: built in {time.monotonic() - start:.0f} s")


def prune(keep: set[str], cache: Path | None = None) -> list[str]:
    """Remove every cached revision but the commits ``keep`` (each is about half a GB);
    the names of those removed."""
    root = cache or cache_root()
    kept = {sha[:SHORT] for sha in keep}
    removed = []
    for folder in sorted(root.iterdir()) if root.is_dir() else []:
        name = folder.name.removesuffix(".lock")
        if name in kept or not all(ch in "0123456789abcdef" for ch in name):
            continue
        with locked(root / f"{name}.lock"):
            shutil.rmtree(root / name, ignore_errors=True)
        (root / f"{name}.lock").unlink(missing_ok=True)
        removed.append(name)
    return sorted(set(removed))
