"""The harness's last clean-up runs to its end whatever signal comes meanwhile."""

from __future__ import annotations

import os
import signal
from types import SimpleNamespace

import pytest

from nbstage.entrypoints.harness import main as harness


@pytest.fixture
def handlers_restored():
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    yield
    for sig, handler in saved.items():
        signal.signal(sig, handler)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["sigterm", "ctrl-c"])
def test_a_signal_during_the_last_clean_up_does_not_cut_it_short(
    monkeypatch: pytest.MonkeyPatch, handlers_restored: None, sig: int
) -> None:
    """A CI job's second SIGTERM (or a second Ctrl-C) arrives while the daemon is being
    stopped: the leftovers are still killed and the workspace still removed."""
    done: list[str] = []

    def stop_the_daemon(*args: object) -> None:
        os.kill(os.getpid(), sig)
        done.append("daemon stopped")

    monkeypatch.setattr(harness, "stop_any_daemon", stop_the_daemon)
    owned = SimpleNamespace(kill_leftovers=lambda grace: done.append("leftovers") or [])
    workspace = SimpleNamespace(remove=lambda: done.append("removed"))
    signal.signal(signal.SIGTERM, harness._interrupt_instead)
    signal.signal(signal.SIGINT, signal.default_int_handler)

    left = harness.last_resort(SimpleNamespace(paths=None, owned=owned), workspace)

    assert left == []
    assert done == ["daemon stopped", "leftovers", "removed"]
    assert signal.getsignal(signal.SIGTERM) is harness._interrupt_instead
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
