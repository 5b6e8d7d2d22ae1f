"""`nbstage mcp`'s autostart when another client is launching the daemon: it launches
none (entrypoints/control/daemon_launch.py, ADR 0009)."""

from __future__ import annotations

import fcntl
import os
import tempfile
from pathlib import Path

import pytest

from nbstage.entrypoints.common.statedir import prepare, state_paths
from nbstage.entrypoints.control import daemon_launch
from nbstage.entrypoints.control.daemon_launch import Autostart, start_daemon_unless_running
from nbstage.protocol.common.safe_files import open_private


def test_a_held_autostart_lock_means_another_client_is_starting_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    launched: list[object] = []
    monkeypatch.setattr(daemon_launch.subprocess, "run", lambda *a, **k: launched.append(a))
    with tempfile.TemporaryDirectory(prefix="nbs-") as tmp:
        paths = state_paths(Path(tmp) / "state")
        prepare(paths)
        held = open_private(paths.root / "autostart.lock", os.O_RDWR | os.O_CREAT)
        fcntl.flock(held, fcntl.LOCK_EX)
        try:
            assert start_daemon_unless_running(paths) is Autostart.STARTING
            assert launched == [], "a second launch would only fail on the daemon's lock"
        finally:
            os.close(held)
        monkeypatch.setattr(daemon_launch, "_hold_until_answering", lambda fd, paths: os.close(fd))
        assert start_daemon_unless_running(paths) is Autostart.LAUNCHED
        assert len(launched) == 1
