"""Which files of a kernel dir belong to kernels that no longer run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from nbstage.actors.daemon.kernel.kernel_files import files_of_dead_kernels, named_on_command_lines
from tests.support import wait_until

DIR = ["a.json", "a-1", "a-5", "b.json", "b-1", "pipe-42", "a-x", "c-2", "notes.txt"]


@pytest.mark.parametrize(
    ("alive", "dead"),
    [
        pytest.param(set(), ["a-1", "a-5", "a.json", "b-1", "b.json"], id="none alive"),
        pytest.param({"a.json"}, ["b-1", "b.json"], id="a alive"),
        pytest.param({"a.json", "b.json"}, [], id="both alive"),
    ],
)
def test_a_dead_kernels_connection_file_and_sockets_go_and_nothing_else(
    alive: set[str], dead: list[str]
) -> None:
    assert files_of_dead_kernels(DIR, alive) == dead


def test_a_connection_file_on_a_running_command_line_is_seen(tmp_path: Path) -> None:
    kernel_dir = tmp_path / "kernels"
    argv = ["-c", "import time; time.sleep(300)", "-f", f"{kernel_dir}/k1.json"]
    holders = [
        subprocess.Popen([sys.executable, *argv]),
        subprocess.Popen(
            [sys.executable, "-c", "import time; time.sleep(300)", f"--f={kernel_dir}/k2.json"]
        ),
    ]
    try:
        wait_until(
            lambda: {"k1.json", "k2.json"} <= named_on_command_lines(kernel_dir),
            10,
            "both holders to be running",
        )
        assert "k3.json" not in named_on_command_lines(kernel_dir)
    finally:
        for holder in holders:
            holder.kill()
            holder.wait()
    assert not {"k1.json", "k2.json"} & named_on_command_lines(kernel_dir)
