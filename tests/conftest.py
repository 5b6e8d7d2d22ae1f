from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import RunningDaemon, daemon_running

FAST_SETTINGS = {
    "NBSTAGE_HEARTBEAT_SECS": "0.2",
    "NBSTAGE_AUTOSAVE_DELAY_SECS": "0.3",
    "NBSTAGE_AUTOSAVE_MAX_DELAY_SECS": "1.0",
}


@pytest.fixture
def state_dir() -> Iterator[Path]:
    """A fresh, short state dir (so sockets fit in it) that is removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="nbs-") as tmp:
        yield Path(tmp) / "state"


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
