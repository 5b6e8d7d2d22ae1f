"""The logs of the daemons a failing test ran, kept where a person can read them.

A test's state dir is a temp dir that goes with the test, and its daemon's logs with it.
When a test fails, the ``logs/`` folder of every daemon it ran (or shared with its module)
is copied to ``build/test-artifacts/daemon-logs/<test>/`` and the tail of each log is
added to the failure's report. A daemon still running at the failure is copied again once
it has stopped, so the copy and the report end with its stop.
"""

from __future__ import annotations

import contextlib
import re
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pytest

KEPT = Path(__file__).resolve().parents[1] / "build" / "test-artifacts" / "daemon-logs"
TAIL_LINES = 60
SECTION = "daemon logs"

_running: dict[Path, None] = {}
"""The state dirs of the daemons that run now, in the order they started."""
_stopped_in_test: dict[Path, None] = {}
"""The state dirs of the daemons that stopped during the current test."""
_failed: list[pytest.TestReport] = []
"""The failed reports of the current test."""
_test = ""


def started(state_dir: Path) -> None:
    """A daemon runs, or may run, on ``state_dir`` from now on."""
    _running[state_dir] = None


def stopped(state_dir: Path, cleanly: bool) -> None:
    """A daemon of ``state_dir`` has stopped (``cleanly``: and left nothing running); its
    logs are final now."""
    _running.pop(state_dir, None)
    _stopped_in_test[state_dir] = None
    if _failed or not cleanly:
        _keep(state_dir)
        for report in _failed:
            _attach(report)


def test_begins(nodeid: str) -> None:
    global _test
    _test = nodeid
    _stopped_in_test.clear()
    _failed.clear()


def test_failed(report: pytest.TestReport) -> None:
    """Keep the logs of this test's daemons and add their tails to ``report``."""
    for state_dir in _dirs_of_test():
        if (state_dir / "logs").is_dir():
            _keep(state_dir)
    _failed.append(report)
    _attach(report)


def kept_dir(nodeid: str, state_dir: Path) -> Path:
    """Where the logs of the daemon on ``state_dir`` are kept for the test ``nodeid``."""
    test = re.sub(r"[^A-Za-z0-9_.-]+", "_", nodeid)[-150:]
    return KEPT / test / re.sub(r"[^A-Za-z0-9_.-]+", "_", str(state_dir)).strip("_")


def tail(path: Path, lines: int = TAIL_LINES) -> list[str]:
    """The last ``lines`` lines of a log; of a process's output (``*.out``), which repeats
    its log's records, the last lines that are not records (tracebacks, a fatal signal's
    stacks, what its launcher noted)."""
    try:
        text = path.read_bytes().decode(errors="replace")
    except OSError:
        return []
    kept = text.splitlines()
    if path.suffix == ".out":
        kept = [line for line in kept if not line.startswith('{"ts":')]
    return kept[-lines:]


def _dirs_of_test() -> list[Path]:
    return list({**_stopped_in_test, **_running})


def _keep(state_dir: Path) -> None:
    target = kept_dir(_test, state_dir)
    shutil.rmtree(target, ignore_errors=True)
    with contextlib.suppress(OSError, shutil.Error):
        shutil.copytree(state_dir / "logs", target)


def _attach(report: pytest.TestReport) -> None:
    report.sections = [s for s in report.sections if not s[0].startswith(SECTION)]
    for state_dir in _dirs_of_test():
        kept = kept_dir(_test, state_dir)
        if not kept.is_dir():
            continue
        text = [f"copied to {kept}"]
        for log in sorted(kept.iterdir()):
            text += [f"--- {log.name}", *tail(log)]
        report.sections.append((f"{SECTION} of {state_dir}", "\n".join(text)))
