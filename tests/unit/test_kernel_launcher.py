"""The kernel launcher's hold on ipykernel internals still fits the installed ipykernel."""

from __future__ import annotations

import inspect

import pytest
from ipykernel.iostream import IOPubThread

from nbstage.actors import kernel_launcher


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
