"""The session fork server: a session child's modules imported once, a child forked per edge.

A session child spends most of its start importing nbstage's session actors and the
protocol, the same modules in every child (ADR 0009). The daemon starts this process
(``python -m nbstage.entrypoints.session.session_zygote``) once it serves; it imports
those modules, and then waits on a Unix socket beside the daemon's
(``StatePaths.session_zygote``, 0600 in the private socket dir) for edges that want a
child. An edge sends one JSON packet, the command line, environment and folder that a
plain start of its child would have had, with three fds: its end of the child's
socketpair, its stderr, and the write end of a pipe on which the child reports its exit
status. The reply is ``{"pid": N}`` with the child's pidfd, or ``{"refused": why}``; the
edge then starts its child the plain way.

It refuses an edge of another interpreter, nbstage checkout, isolation options or
``PYTHONPATH``, and a request that arrives after a module it imported has changed on disk
(an upgrade in place): it answers that one, and ends. A request that makes it fail in any
other way is refused, and it serves on. It ends too when the daemon that started it is gone, or on
SIGTERM. A child it forked does not end with it: the child leads its own session, and
ends with its edge (the socketpair closes, or the edge's pidfd fires).

It creates no thread and no event loop before it forks: a fork copies one thread.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import select
import signal
import socket
import sys
import time
from pathlib import Path
from typing import Any

from nbstage.protocol.common.frozen import frozen

SOCKET_ENV = "NBSTAGE_SESSION_ZYGOTE_SOCKET"
OWNER_ENV = "NBSTAGE_SESSION_ZYGOTE_OWNER"
PAD_ENV = "NBSTAGE_SESSION_ZYGOTE_ROOM"
ROOM = 16384
"""Bytes of padding in this process's command line and environment, which a forked
child writes its own over: an edge's environment is the user's, often several kB."""
REAP_SECS = 1.0
REQUEST_SECS = 0.5
"""How long an accepted edge may take to send its request (it sends it at once)."""
MOST_BYTES = 1 << 20
FDS = 3
PRELOADED_PACKAGES = ("nbstage.actors.session",)
PRELOADED = (
    "nbstage.entrypoints.session.session_child",
    "nbstage.entrypoints.common.logs",
    "tempfile",
)
PACKAGE = Path(__file__).resolve().parents[2]
"""The nbstage package this process runs (the folder that holds ``entrypoints/``)."""


# --- pure parts ---------------------------------------------------------------------------


@frozen
class Interpreter:
    """What decides the code a child runs: the interpreter, the nbstage folder, the
    options that say where imports come from, and ``PYTHONPATH``."""

    python: str
    package: str
    flags: tuple[str, ...]
    pythonpath: str | None


def refusal(request: dict[str, Any], own: Interpreter) -> str | None:
    """Why a request cannot be served by this process, or None."""
    if not isinstance(request.get("argv"), list) or not isinstance(request.get("env"), dict):
        return "the request needs argv (a list) and env (an object)"
    if not all(isinstance(arg, str) for arg in request["argv"]):
        return "every argument must be a string"
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in request["env"].items()):
        return "every environment variable and value must be a string"
    if request.get("python") != own.python:
        return f"this fork server runs {own.python}, not {request.get('python')}"
    if request.get("package") != own.package:
        return f"this fork server runs nbstage from {own.package}, not {request.get('package')}"
    if request.get("flags") != list(own.flags):
        return f"this fork server runs with the options {own.flags}, not {request.get('flags')}"
    if request["env"].get("PYTHONPATH") != own.pythonpath:
        return "this fork server runs with another PYTHONPATH"
    return None


def this_interpreter(pythonpath: str | None) -> Interpreter:
    from nbstage.entrypoints.common.python_command import isolation_flags

    flags = tuple(isolation_flags(sys.flags))
    return Interpreter(sys.executable, str(PACKAGE), flags, pythonpath)


def changed_files(seen: dict[str, int], mtime_of: Any) -> list[str]:
    """The files of ``seen`` (path → mtime_ns) whose mtime differs now or that are gone."""
    changed = []
    for path, mtime in seen.items():
        try:
            if mtime_of(path) != mtime:
                changed.append(path)
        except OSError:
            changed.append(path)
    return changed


def unseen_after(sources: dict[str, int], began_ns: int) -> dict[str, int]:
    """``sources`` with each file changed after ``began_ns`` (while it was imported, so
    which version came in is not known) marked as never seen, so that it counts as
    changed at the first check."""
    return {path: -1 if mtime > began_ns else mtime for path, mtime in sources.items()}


def loaded_sources(modules: dict[str, Any], package: Path) -> dict[str, int]:
    """path → mtime_ns of the source of every loaded module inside ``package``."""
    found = {}
    for module in list(modules.values()):
        path = getattr(module, "__file__", None)
        if path and path.startswith(str(package) + os.sep):
            with contextlib.suppress(OSError):
                found[path] = os.stat(path).st_mtime_ns
    return found


def library_dirs(modules: dict[str, Any], search_path: list[str], package: Path) -> dict[str, int]:
    """path → mtime_ns of each import path entry that a loaded module outside ``package``
    came from. Installing, upgrading or removing a distribution there (thespian, orjson,
    the MCP types, the standard library itself) adds or removes entries in that folder,
    which moves its mtime: nbstage's own sources alone would not show it."""
    entries = sorted((os.path.join(entry, "") for entry in search_path if entry), key=len)
    found: dict[str, int] = {}
    for module in list(modules.values()):
        path = getattr(module, "__file__", None)
        if not path or path.startswith(str(package) + os.sep):
            continue
        entry = next((e for e in reversed(entries) if path.startswith(e)), None)
        if entry is not None and entry not in found:
            with contextlib.suppress(OSError):
                found[entry] = os.stat(entry).st_mtime_ns
    return found


# --- the child ----------------------------------------------------------------------------


def become(request: dict[str, Any], fds: list[int], ready: int) -> None:
    """In the forked child: lead a session of its own, take the edge's environment and
    folder, show its command line in ``/proc``, say so on ``ready``, and serve as its
    session child; never returns."""
    code = 1
    session, stderr, exits = fds
    try:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, set())
        code = _serve_as_child(request, session, stderr, exits, ready)
    except SystemExit as exc:
        code = exit_status(exc.code)
    except BaseException as exc:
        print(f"nbstage session zygote: child {os.getpid()} failed: {exc!r}", file=sys.stderr)
    finally:
        with contextlib.suppress(OSError):
            os.write(exits, str(code).encode())
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


def _serve_as_child(
    request: dict[str, Any], session: int, stderr: int, exits: int, ready: int
) -> int:
    # here, not at the top: `nbstage mcp` imports this module and keeps tempfile out
    import tempfile

    from nbstage.actors.daemon.kernel.kernel_zygote import rewrite_proc_image
    from nbstage.entrypoints.common.lifelines import EDGE_PID_ENV
    from nbstage.entrypoints.session.session_child import serve

    os.setsid()
    os.dup2(stderr, 2)
    os.dup2(stderr, 1)
    os.close(stderr)
    os.set_inheritable(exits, False)
    env = request["env"]
    os.environ.clear()
    os.environ.update(env)
    tempfile.tempdir = None
    os.chdir(request.get("cwd") or "/")
    rewrite_proc_image(request["argv"], env)
    sys.argv = [str(PACKAGE / "entrypoints" / "session" / "session_main.py")]
    edge = os.pidfd_open(int(env[EDGE_PID_ENV]))
    os.close(ready)
    return serve(socket.socket(fileno=session), edge)


def exit_status(code: object) -> int:
    """The status ``sys.exit(code)`` gives a process."""
    if code is None:
        return 0
    return code if isinstance(code, int) else 1


# --- the server ---------------------------------------------------------------------------


class SessionZygote:
    def __init__(
        self, listener: socket.socket, owner: int | None, own: Interpreter, began_ns: int = 0
    ) -> None:
        """``began_ns``: when the imports began (``time.time_ns``); a source changed since
        makes this server refuse its first request and end."""
        self.listener = listener
        self.owner = owner
        self.own = own
        self.sources = loaded_sources(sys.modules, PACKAGE)
        self.sources.update(library_dirs(sys.modules, sys.path, PACKAGE))
        if began_ns:
            self.sources = unseen_after(self.sources, began_ns)
        self.stale = False

    def serve(self) -> None:
        watched = [self.listener] + ([self.owner] if self.owner is not None else [])
        while not self.stale:
            readable, _, _ = select.select(watched, [], [], REAP_SECS)
            self.reap()
            if self.owner is not None and self.owner in readable:
                return
            if self.listener in readable:
                self.take_one()

    def take_one(self) -> None:
        """One edge's request, answered; whatever goes wrong with it is that edge's alone."""
        from nbstage.entrypoints.common.ownership import check_peer  # preloaded

        try:
            connection, _ = self.listener.accept()
        except OSError:
            return
        with connection:
            try:
                check_peer(connection, "an edge")
                self.answer(connection)
            except Exception as exc:
                with contextlib.suppress(OSError):
                    connection.send(json.dumps({"refused": repr(exc)[:500]}).encode())

    def answer(self, connection: socket.socket) -> None:
        connection.settimeout(REQUEST_SECS)
        data, fds, _, _ = socket.recv_fds(connection, MOST_BYTES, FDS)
        try:
            why = self.why_not(data, fds)
            if why is not None:
                connection.send(json.dumps({"refused": why}).encode())
                return
            pid = self.fork(json.loads(data), fds, connection)
            pidfd = os.pidfd_open(pid)
            try:
                socket.send_fds(connection, [json.dumps({"pid": pid}).encode()], [pidfd])
            finally:
                os.close(pidfd)
        finally:
            for fd in fds:
                os.close(fd)

    def why_not(self, data: bytes, fds: list[int]) -> str | None:
        if len(fds) != FDS:
            return f"expected {FDS} fds, got {len(fds)}"
        try:
            request = json.loads(data)
        except ValueError as exc:
            return f"the request is not JSON: {exc}"
        if not isinstance(request, dict):
            return "the request is not a JSON object"
        why = refusal(request, self.own)
        if why is None and (changed := changed_files(self.sources, os_mtime)):
            self.stale = True
            why = f"{changed[0]} changed on disk since this fork server started"
        return why

    def fork(self, request: dict[str, Any], fds: list[int], connection: socket.socket) -> int:
        """Fork the child; return once it leads its own session and shows its edge's
        command line and environment in ``/proc``, where sweeps and tests look. SIGTERM
        waits meanwhile: the child must not run this server's handler."""
        ready, signalled = os.pipe()
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
        try:
            pid = os.fork()
            if pid == 0:
                try:
                    os.close(ready)
                    connection.close()
                    self.listener.close()
                    if self.owner is not None:
                        os.close(self.owner)
                finally:
                    become(request, fds, signalled)
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
        os.close(signalled)
        try:
            os.read(ready, 1)
        finally:
            os.close(ready)
        return pid

    def reap(self) -> None:
        with contextlib.suppress(ChildProcessError):
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass


def os_mtime(path: str) -> int:
    return os.stat(path).st_mtime_ns


def preload() -> None:
    """Import what a session child imports as it serves, then leave it out of garbage
    collection, so a child's collections do not write to (and so copy) shared pages."""
    import importlib
    import pkgutil

    from nbstage.entrypoints.common.lean import thespian_without_extras, without_tls

    without_tls()
    thespian_without_extras()
    for package in PRELOADED_PACKAGES:
        root = importlib.import_module(package)
        for module in pkgutil.walk_packages(root.__path__, f"{package}."):
            importlib.import_module(module.name)
    for name in PRELOADED:
        importlib.import_module(name)
    from nbstage.protocol.common import method_cache

    method_cache.forget()
    gc.collect()
    gc.freeze()


def listen(path: str) -> socket.socket:
    """A SEQPACKET listener at ``path``, 0600 from the moment it exists."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    mask = os.umask(0o177)
    try:
        listener.bind(path)
    finally:
        os.umask(mask)
    listener.listen(64)
    return listener


def main() -> None:
    path = os.environ.pop(SOCKET_ENV)
    os.environ.pop(PAD_ENV, None)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    from nbstage.actors.daemon.kernel.kernel_zygote import owner_pidfd

    owner = owner_pidfd(OWNER_ENV)
    os.environ.pop(OWNER_ENV, None)
    own = this_interpreter(os.environ.get("PYTHONPATH"))
    began_ns = time.time_ns()
    preload()
    listener = listen(path)
    identity = os.stat(path).st_ino
    try:
        SessionZygote(listener, owner, own, began_ns).serve()
    finally:
        listener.close()
        with contextlib.suppress(OSError):
            if os.stat(path).st_ino == identity:
                os.unlink(path)


if __name__ == "__main__":
    main()
