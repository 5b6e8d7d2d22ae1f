"""Start an ipykernel whose IOPub pipe uses an IPC socket instead of TCP.

ipykernel forwards output from forked child processes through a PULL socket it
binds on ``tcp://127.0.0.1`` (``IOPubThread._setup_pipe_in``), whatever transport
the kernel itself uses. nbstage promises that nothing listens on TCP, so kernels
start through this file (``python …/kernel_launcher.py -f FILE``), which binds that
pipe in the kernel's private directory instead.

It is run by its path, not as a module of nbstage, and imports nothing of nbstage: a
kernel may run in an environment that has ipykernel and not nbstage.

It replaces two private ipykernel methods; ``tests/unit/test_kernel_launcher.py``
fails loudly if their names or roles change.

It also ties the kernel's life to the daemon's: a thread waits on a pidfd of the
process named in ``NBSTAGE_EDGE_PID`` and ends the kernel the moment that process
is gone, however it died (ipykernel's own parent poller takes a second or more,
and misses a parent whose orphans are adopted by a subreaper).
"""

from __future__ import annotations

import os
import select
import sys
import threading
from pathlib import Path

import zmq
from ipykernel.iostream import IOPubThread
from zmq.eventloop.zmqstream import ZMQStream


def _pipe_address(connection_file: str) -> str:
    return f"ipc://{Path(connection_file).parent}/pipe-{os.getpid()}"


def _setup_pipe_in(self: IOPubThread) -> None:
    self._pipe_uuid = os.urandom(16)
    pipe_in = self.socket.context.socket(zmq.PULL)
    pipe_in.linger = 0
    self._pipe_address = _pipe_address(_CONNECTION_FILE)
    pipe_in.bind(self._pipe_address)
    self._pipe_in = ZMQStream(pipe_in, self.io_loop)
    self._pipe_in.on_recv(self._handle_pipe_msg)


def _setup_pipe_out(self: IOPubThread) -> tuple[zmq.Context, zmq.Socket]:
    context = zmq.Context()
    pipe_out = context.socket(zmq.PUSH)
    pipe_out.linger = 3000
    pipe_out.connect(self._pipe_address)
    return context, pipe_out


def _connection_file(argv: list[str]) -> str:
    for flag in ("-f", "--f"):
        if flag in argv:
            return argv[argv.index(flag) + 1]
    for arg in argv:
        if arg.startswith("--f="):
            return arg.removeprefix("--f=")
    raise SystemExit("nbstage kernel launcher: -f CONNECTION_FILE is required")


_CONNECTION_FILE = ""
OWNER_PID_ENV = "NBSTAGE_EDGE_PID"


def _exit_with(owner_pid: int) -> None:
    """End this process as soon as ``owner_pid`` is gone."""
    try:
        pidfd = os.pidfd_open(owner_pid)
    except ProcessLookupError:
        os._exit(1)
    select.select([pidfd], [], [])
    os._exit(1)


def without_dir(paths: list[str], folder: str) -> list[str]:
    """``paths`` less ``folder``. Run as a file, this file's folder comes first on
    sys.path, where nbstage's actor modules would shadow the user's (``import journal``)."""
    return [path for path in paths if os.path.abspath(path or os.curdir) != folder]


def without_debugger() -> None:
    """Have ipykernel load its debugger support as if debugpy were not installed.

    The Jupyter debugger listens on TCP (``debugpy.listen``), which no nbstage kernel may
    do, and no MCP tool drives it; loading debugpy cost each kernel about 8 MB and 60 ms
    of its start. A cell may still ``import debugpy``."""
    blocked = "debugpy" not in sys.modules
    if blocked:
        sys.modules["debugpy"] = None
    try:
        import ipykernel.debugger  # noqa: F401
    finally:
        if blocked:
            del sys.modules["debugpy"]


def main() -> None:
    global _CONNECTION_FILE
    sys.path[:] = without_dir(sys.path, os.path.dirname(os.path.abspath(__file__)))
    owner = os.environ.get(OWNER_PID_ENV)
    if owner:
        threading.Thread(target=_exit_with, args=(int(owner),), daemon=True).start()
    _CONNECTION_FILE = _connection_file(sys.argv)
    IOPubThread._setup_pipe_in = _setup_pipe_in
    IOPubThread._setup_pipe_out = _setup_pipe_out
    without_debugger()
    from ipykernel import kernelapp

    kernelapp.launch_new_instance()


if __name__ == "__main__":
    main()
