"""nbstage's own processes start as ``python [isolation] -P -m module``."""

from __future__ import annotations

import subprocess
import sys
from types import SimpleNamespace

import pytest

from nbstage.entrypoints.common.python_command import isolation_flags, module_command


@pytest.mark.parametrize(
    ("isolated", "ignore_environment", "no_user_site", "expected"),
    [
        (0, 0, 0, []),
        (0, 1, 0, ["-E"]),
        (0, 0, 1, ["-s"]),
        (0, 1, 1, ["-E", "-s"]),
        (1, 1, 1, ["-I"]),
    ],
)
def test_isolation_flags(isolated, ignore_environment, no_user_site, expected) -> None:
    flags = SimpleNamespace(
        isolated=isolated, ignore_environment=ignore_environment, no_user_site=no_user_site
    )
    assert isolation_flags(flags) == expected


def test_the_command_keeps_the_project_folder_off_the_path() -> None:
    command = module_command("nbstage.entrypoints.cli")
    assert command[0] == sys.executable
    assert command[-3:] == ["-P", "-m", "nbstage.entrypoints.cli"]


def test_an_isolated_interpreter_starts_isolated_ones() -> None:
    """A client that ran ``python -I -m nbstage.entrypoints.cli mcp`` keeps PYTHONPATH and
    the user's site-packages out of the edge, its child and the daemon too."""
    shown = subprocess.run(
        [
            sys.executable,
            "-I",
            "-c",
            "from nbstage.entrypoints.common.python_command import module_command\n"
            "print(' '.join(module_command('m')[1:]))",
        ],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    assert shown.stdout.split() == ["-I", "-P", "-m", "m"]
