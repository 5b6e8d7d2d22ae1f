"""The logs of a failing test's daemons are kept, and their tails reach its report, with
the lines the daemon wrote up to its stop (tests/daemon_logs.py)."""

from __future__ import annotations

import shutil
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tests import daemon_logs

RECORD = '{"ts":1.0,"level":"info","logger":"nbstage.edge","pid":7,"msg":"%s"}'


@pytest.fixture
def kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The kept logs go under this test's tmp dir; the module's own record of daemons is
    this test's, and is put back afterwards."""
    monkeypatch.setattr(daemon_logs, "KEPT", tmp_path / "kept")
    for name in ("_running", "_stopped_in_test"):
        monkeypatch.setattr(daemon_logs, name, {})
    monkeypatch.setattr(daemon_logs, "_failed", [])
    monkeypatch.setattr(daemon_logs, "_test", "")
    daemon_logs.test_begins("tests/e2e/test_x.py::test_y")
    return tmp_path / "kept"


def a_state_dir(root: Path, *records: str) -> Path:
    logs = root / "state" / "logs"
    logs.mkdir(parents=True)
    (logs / "daemon.log").write_text("".join(RECORD % r + "\n" for r in records))
    (logs / "daemon.out").write_text("".join(RECORD % r + "\n" for r in records))
    return root / "state"


def report() -> Any:
    return SimpleNamespace(sections=[])


def section_of(failed: Any) -> str:
    ((title, text),) = failed.sections
    assert title.startswith("daemon logs of ")
    return text


def test_a_failure_keeps_the_logs_and_a_later_stop_adds_its_lines(
    kept: Path, tmp_path: Path
) -> None:
    state = a_state_dir(tmp_path, "daemon ready")
    daemon_logs.started(state)
    failed = report()
    daemon_logs.test_failed(failed)
    copy = daemon_logs.kept_dir("tests/e2e/test_x.py::test_y", state)
    assert copy.parent.parent == kept
    assert (copy / "daemon.log").read_text() == RECORD % "daemon ready" + "\n"
    assert "daemon ready" in section_of(failed)
    assert "daemon stopping" not in section_of(failed)

    with (state / "logs" / "daemon.log").open("a") as log:
        log.write(RECORD % "daemon stopping" + "\n")
    with (state / "logs" / "daemon.out").open("a") as out:
        out.write("Fatal Python error: Bus error\n")
    daemon_logs.stopped(state, cleanly=True)
    assert "daemon stopping" in (copy / "daemon.log").read_text()
    text = section_of(failed)
    assert "daemon stopping" in text
    out_part = text.split("--- daemon.out", 1)[1]
    assert out_part.strip().splitlines() == ["Fatal Python error: Bus error"]


def test_a_passing_test_keeps_nothing(kept: Path, tmp_path: Path) -> None:
    state = a_state_dir(tmp_path, "daemon ready")
    daemon_logs.started(state)
    daemon_logs.stopped(state, cleanly=True)
    assert not kept.exists()


def test_a_stop_that_failed_keeps_the_logs_before_its_dir_goes(kept: Path, tmp_path: Path) -> None:
    state = a_state_dir(tmp_path, "daemon stopping")
    daemon_logs.started(state)
    daemon_logs.stopped(state, cleanly=False)
    shutil.rmtree(state)
    failed = report()
    daemon_logs.test_failed(failed)
    assert "daemon stopping" in section_of(failed)
