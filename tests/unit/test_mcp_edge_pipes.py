"""nbstage mcp widens the pipe it writes MCP answers to, and leaves anything else alone."""

from __future__ import annotations

import fcntl
import os
import socket

from nbstage.entrypoints.mcp.mcp_edge import PIPE_SIZE, widen_pipe


def test_a_pipe_is_widened() -> None:
    read_end, write_end = os.pipe()
    try:
        widen_pipe(write_end)
        assert fcntl.fcntl(write_end, fcntl.F_GETPIPE_SZ) == PIPE_SIZE
    finally:
        os.close(read_end)
        os.close(write_end)


def test_a_socket_is_left_as_it_is() -> None:
    ours, theirs = socket.socketpair()
    with ours, theirs:
        widen_pipe(ours.fileno())
        ours.sendall(b"still works")
        assert theirs.recv(64) == b"still works"
