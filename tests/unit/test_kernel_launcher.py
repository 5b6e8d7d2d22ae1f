"""The kernel launcher's hold on ipykernel internals still fits the installed ipykernel."""

from __future__ import annotations

import ast
import inspect
import subprocess
import sys
from pathlib import Path

import pytest
from ipykernel.iostream import IOPubThread

from nbstage.actors.daemon.kernel import kernel_launcher


@pytest.mark.parametrize("name", ["_setup_pipe_in", "_setup_pipe_out", "_handle_pipe_msg"])
def test_the_pipe_methods_the_launcher_replaces_still_exist(name: str) -> None:
    assert callable(getattr(IOPubThread, name, None)), f"ipykernel no longer has {name}"


def test_ipykernel_still_binds_its_pipe_on_tcp_so_the_launcher_is_still_needed() -> None:
    assert "tcp://127.0.0.1" in inspect.getsource(IOPubThread._setup_pipe_in)


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        pytest.param(["x", "-f", "/k/c.json"], "/k/c.json", id="short flag"),
        pytest.param(["x", "--f=/k/c.json"], "/k/c.json", id="long flag with equals"),
    ],
)
def test_the_connection_file_is_read_from_the_kernelspec_argv(argv, expected) -> None:
    assert kernel_launcher._connection_file(argv) == expected


def test_the_pipe_lives_beside_the_connection_file() -> None:
    assert kernel_launcher._pipe_address("/k/dir/c.json").startswith("ipc:///k/dir/pipe-")


def test_the_launcher_imports_nothing_of_nbstage_so_any_environment_with_ipykernel_runs_it():
    tree = ast.parse(Path(kernel_launcher.__file__).read_text())
    imported = [
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    ]
    imported += [node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]
    assert imported, "the scan found the launcher's imports"
    assert not [name for name in imported if name.split(".")[0] == "nbstage"]


@pytest.mark.parametrize(
    ("paths", "kept"),
    [
        pytest.param(["/n/actors", "/lib", ""], ["/lib", ""], id="the launcher's folder goes"),
        pytest.param(["/n/actors/", "/lib"], ["/lib"], id="spelled with a slash"),
        pytest.param(["/lib", "/n/actors/x"], ["/lib", "/n/actors/x"], id="others stay"),
        pytest.param([], [], id="empty"),
    ],
)
def test_the_launcher_takes_its_own_folder_off_the_kernels_path(paths, kept) -> None:
    assert kernel_launcher.without_dir(paths, "/n/actors") == kept


def test_a_kernel_starts_without_the_debugger_and_a_cell_may_still_import_debugpy() -> None:
    code = (
        "import sys\n"
        f"sys.path.insert(0, {str(Path(kernel_launcher.__file__).parent)!r})\n"
        "import kernel_launcher\n"
        "kernel_launcher.without_debugger()\n"
        "import ipykernel.debugger\n"
        "assert ipykernel.debugger._is_debugpy_available is False\n"
        "import debugpy\n"
        "print(debugpy.__name__)\n"
    )
    ran = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.split() == ["debugpy"]
