"""`nbstage mcp`'s autostart when another client is launching the daemon: it launches
none (entrypoints/control/daemon_launch.py, ADR 0009)."""

from __future__ import annotations

import fcntl
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from nbstage.entrypoints.common.statedir import StatePaths, prepare, state_paths
from nbstage.entrypoints.control import daemon_launch
from nbstage.entrypoints.control.daemon_launch import Autostart, start_daemon_unless_running
from nbstage.protocol.common.safe_files import open_private


@pytest.fixture
def paths() -> Iterator[StatePaths]:
    """A fresh state dir, short enough for its sockets."""
    with tempfile.TemporaryDirectory(prefix="nbs-") as tmp:
        made = state_paths(Path(tmp) / "state")
        prepare(made)
        yield made


@contextmanager
def autostart_held(paths: StatePaths) -> Iterator[None]:
    """autostart.lock held, as by a daemon another client launched."""
    held = open_private(paths.root / "autostart.lock", os.O_RDWR | os.O_CREAT)
    fcntl.flock(held, fcntl.LOCK_EX)
    try:
        yield
    finally:
        os.close(held)


def test_a_held_autostart_lock_means_another_client_is_starting_one(
    monkeypatch: pytest.MonkeyPatch, paths: StatePaths
) -> None:
    launched: list[object] = []
    monkeypatch.setattr(daemon_launch.subprocess, "run", lambda *a, **k: launched.append(a))
    with autostart_held(paths):
        assert start_daemon_unless_running(paths) is Autostart.STARTING
        assert launched == [], "a second launch would only fail on the daemon's lock"
    assert start_daemon_unless_running(paths) is Autostart.LAUNCHED
    assert len(launched) == 1


def test_the_launched_daemon_holds_the_lock_and_its_start_lets_it_go(
    monkeypatch: pytest.MonkeyPatch, paths: StatePaths
) -> None:
    """The launcher hands autostart.lock to the daemon (the lock's descriptor passed and
    named in its environment) and keeps none; while the daemon holds it another client
    launches none; the daemon's ready (or its death) lets it go."""
    handed: list[int] = []

    def launch(*args, **kwargs) -> None:
        (fd,) = kwargs["pass_fds"]
        assert kwargs["env"][daemon_launch.AUTOSTART_LOCK_ENV] == str(fd)
        handed.append(os.dup(fd))  # what the daemon would inherit

    monkeypatch.setattr(daemon_launch.subprocess, "run", launch)
    assert start_daemon_unless_running(paths) is Autostart.LAUNCHED
    assert start_daemon_unless_running(paths) is Autostart.STARTING
    monkeypatch.setenv(daemon_launch.AUTOSTART_LOCK_ENV, str(handed[0]))
    held = daemon_launch.inherited_autostart_lock()
    assert held == handed[0]
    assert daemon_launch.AUTOSTART_LOCK_ENV not in os.environ
    assert not os.get_inheritable(held)
    daemon_launch.let_autostart_go(held)
    assert start_daemon_unless_running(paths) is Autostart.LAUNCHED
    os.close(handed[1])


def test_a_daemon_nobody_launched_has_no_lock_to_let_go(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(daemon_launch.AUTOSTART_LOCK_ENV, raising=False)
    assert daemon_launch.inherited_autostart_lock() is None
    daemon_launch.let_autostart_go(None)


def test_a_launch_came_to_nothing_once_its_lock_is_free_and_no_daemon_answers(
    paths: StatePaths,
) -> None:
    with autostart_held(paths):
        assert not daemon_launch.launch_came_to_nothing(paths), "still launching"
    assert daemon_launch.launch_came_to_nothing(paths)
