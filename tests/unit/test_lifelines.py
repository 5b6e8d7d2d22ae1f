"""A session child ends with the edge that started it, even when the edge died first."""

from __future__ import annotations

import os
import subprocess
import sys

SURVIVOR = (
    "import sys\n"
    "from nbstage.entrypoints.common.lifelines import die_with_parent\n"
    "die_with_parent(int(sys.argv[1]))\n"
    "print('still running')\n"
)


def run_child_told_parent(parent: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", SURVIVOR, str(parent)],
        capture_output=True,
        text=True,
        timeout=30,
    )


def test_a_child_whose_parent_is_still_there_carries_on() -> None:
    child = run_child_told_parent(os.getpid())
    assert child.returncode == 0, child.stderr
    assert child.stdout == "still running\n"


def test_a_child_adopted_before_it_looked_exits_at_once() -> None:
    """The edge died between fork and the child's check: the child was adopted, so its
    getppid() is not the edge named in its environment. It must not run on."""
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    child = run_child_told_parent(gone.pid)
    assert child.returncode == 1, child.stderr
    assert child.stdout == ""
