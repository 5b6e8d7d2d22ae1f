from __future__ import annotations

import os
import shutil
import signal
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from nbstage.actors.daemon.environment.environments import ENVS_DIR_ENV
from tests import daemon_logs
from tests.support import RunningDaemon, daemon_running

if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    # A suite started in the background of a non-interactive shell (`make test &`) has
    # SIGINT ignored, and every process it starts would inherit that: the tests of Ctrl-C
    # in the harness and the admin console need it delivered, as in a terminal.
    signal.signal(signal.SIGINT, signal.default_int_handler)

FAST_SETTINGS = {
    "NBSTAGE_HEARTBEAT_SECS": "0.2",
    "NBSTAGE_AUTOSAVE_DELAY_SECS": "0.3",
    "NBSTAGE_AUTOSAVE_MAX_DELAY_SECS": "1.0",
}


@contextmanager
def daemon_of_a_module() -> Iterator[RunningDaemon]:
    """A daemon a whole module shares, with Jupyter dirs of its own: the per-test
    isolation (``_isolated_jupyter``) does not reach a module-scoped fixture."""
    with tempfile.TemporaryDirectory(prefix="nbs-") as tmp:
        env = {
            **FAST_SETTINGS,
            "JUPYTER_RUNTIME_DIR": f"{tmp}/jupyter-runtime",
            "IPYTHONDIR": f"{tmp}/ipython",
            "JUPYTER_PLATFORM_DIRS": "1",
        }
        with daemon_running(Path(tmp) / "state", env) as daemon:
            yield daemon


@pytest.fixture(scope="session", autouse=True)
def _runtime_dir_of_the_run() -> Iterator[None]:
    """The short socket dirs of the run's daemons go in one runtime dir of its own,
    removed at the end with whatever a killed daemon left there, so the suite leaves
    nothing in /tmp and never touches another run's dirs."""
    base = tempfile.mkdtemp(prefix="nbr-")
    before = os.environ.get("XDG_RUNTIME_DIR")
    os.environ["XDG_RUNTIME_DIR"] = base
    yield
    if before is None:
        del os.environ["XDG_RUNTIME_DIR"]
    else:
        os.environ["XDG_RUNTIME_DIR"] = before
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="session", autouse=True)
def _no_uv_locks_left() -> Iterator[None]:
    """uv leaves a lock file in the temp dir when it runs a project (``uv-<hash>.lock``);
    the ones the run's uv made go with the run."""
    base = Path(tempfile.gettempdir())
    before = set(base.glob("uv-*.lock"))
    yield
    for left in set(base.glob("uv-*.lock")) - before:
        left.unlink(missing_ok=True)


@pytest.fixture(scope="session", autouse=True)
def _one_set_of_environments(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Every daemon of the run shares one folder of inline environments, so a set that
    several tests ask for is built once. The kernels' template is the user's own
    (``~/.cache/nbstage``, which ``make`` builds), as for any daemon."""
    os.environ[ENVS_DIR_ENV] = str(tmp_path_factory.mktemp("envs"))
    yield
    del os.environ[ENVS_DIR_ENV]


@pytest.fixture(scope="session")
def lab() -> Iterator[Any]:
    """One real `nbstage lab` (and its daemon) for every test of the session that needs one
    (a tests.lab_support.RunningLab)."""
    from tests.lab_support import lab_running

    with lab_running() as running:
        yield running


def pytest_runtest_logstart(nodeid: str) -> None:
    daemon_logs.test_begins(nodeid)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport() -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        daemon_logs.test_failed(report)


@pytest.fixture
def state_dir() -> Iterator[Path]:
    """A fresh, short state dir (so sockets fit in it) that is removed afterwards; a
    failing test keeps its daemons' logs (tests/daemon_logs.py)."""
    with tempfile.TemporaryDirectory(prefix="nbs-") as tmp:
        path = Path(tmp) / "state"
        daemon_logs.started(path)
        yield path
        daemon_logs.stopped(path, cleanly=True)


@pytest.fixture
def daemon(state_dir: Path) -> Iterator[RunningDaemon]:
    """A real daemon process in a temp state dir; teardown proves nothing was left running."""
    with daemon_running(state_dir, FAST_SETTINGS) as running:
        yield running


@pytest.fixture(autouse=True)
def _isolated_jupyter(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    """Keep Jupyter's runtime and config files out of the user's home."""
    base = tmp_path_factory.mktemp("jupyter")
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(base / "runtime"))
    monkeypatch.setenv("IPYTHONDIR", str(base / "ipython"))
    monkeypatch.setenv("JUPYTER_PLATFORM_DIRS", "1")
    monkeypatch.delenv("NBSTAGE_DAEMON_VERSION", raising=False)
    # No test opens the person's browser; the tests of show_notebook's browser turn it on.
    monkeypatch.setenv("NBSTAGE_LAB_OPEN_BROWSER", "0")
