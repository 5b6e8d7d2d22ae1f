"""The kernel fork server ("zygote"): ipykernel imported once, a kernel forked per request.

Most of a kernel's start is importing ipykernel, IPython, zmq and tornado (about 0.2 s of
CPU of its 0.3 s). This process, run by its path with the pool's Python, does those
imports once, and then forks a kernel for each request the daemon sends; the child runs
what ``kernel_launcher.py`` runs. It creates no zmq context, no thread and no event loop
before it forks: a fork copies one thread, and any of those would be broken in the child.

It imports nothing of nbstage (the pool's Python has none), only its sibling
``kernel_launcher.py``, and takes the daemon's requests on the socket it was given as fd
``ZYGOTE_FD_ENV`` (SOCK_SEQPACKET: one JSON packet each way per kernel, the reply carrying
the kernel's pidfd). It ends when the daemon closes that socket, when the process named
in ``NBSTAGE_EDGE_PID`` is gone, or after ``IDLE_SECS`` with no request and no kernel.

A forked child becomes its kernel as a fresh launch would make it (``become``): its own
session, working folder, environment and pool environment (``sys.prefix``, the
interpreter, the site-packages in front of the template's), and in ``/proc`` the command
line and environment that launch would have had. The daemon finds its kernels by those
(``kernel_files.py``, ``process_tree.py``), so the zygote is started with room for them:
one argument and one variable of padding that the child writes over.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import select
import socket
import sys
import time
from typing import Any

FD_ENV = "NBSTAGE_ZYGOTE_FD"
PAD_ENV = "NBSTAGE_ZYGOTE_ROOM"
OWNER_PID_ENV = "NBSTAGE_EDGE_PID"
ROOM = 4096
"""Bytes of padding in the zygote's own command line and environment."""
IDLE_SECS = 120.0
REAP_SECS = 1.0
MOST_BYTES = 1 << 20
PRELOADED = (
    "ipykernel.kernelapp",
    "ipykernel.ipkernel",
    "ipykernel.zmqshell",
    "IPython.core.interactiveshell",
    "IPython.extensions",
    "IPython.extensions.storemagic",
    "IPython.core.oinspect",
    "IPython.core.completerlib",
    "IPython.core.debugger",
    "tornado.platform.asyncio",
    "importlib.resources.readers",
    "sqlite3",
    "pdb",
    "pydoc",
    "runpy",
    "faulthandler",
    "unicodedata",
    "encodings.idna",
)
"""What a kernel imports before it answers its first request, besides the launcher's own."""
STAT_ARG_START = 45
"""``arg_start`` in the fields of ``/proc/self/stat`` after the command name; then
``arg_end``, ``env_start``, ``env_end`` (proc(5): fields 48 to 51)."""


# --- pure parts ---------------------------------------------------------------------------


def memory_areas(stat: str) -> tuple[tuple[int, int], tuple[int, int]]:
    """The (start, end) of the command line and of the environment in this process's
    memory, from the text of ``/proc/self/stat``."""
    fields = [int(f) for f in stat.rpartition(")")[2].split()[STAT_ARG_START : STAT_ARG_START + 4]]
    return (fields[0], fields[1]), (fields[2], fields[3])


def packed(strings: list[str], size: int) -> bytes | None:
    """``strings`` NUL-terminated one after another, padded with NULs to ``size``; None when
    they do not fit."""
    data = b"".join(os.fsencode(s) + b"\0" for s in strings)
    return data.ljust(size, b"\0") if len(data) <= size else None


def environ_lines(env: dict[str, str]) -> list[str]:
    return [f"{key}={value}" for key, value in env.items()]


def venv_of(python: str) -> str | None:
    """The virtual environment whose interpreter ``python`` is (not resolving the link,
    which leads to the base interpreter), or None."""
    folder = os.path.dirname(os.path.dirname(os.path.abspath(python)))
    return folder if os.path.isfile(os.path.join(folder, "pyvenv.cfg")) else None


def site_packages(prefix: str, version: tuple[int, int]) -> str:
    return os.path.join(prefix, "lib", f"python{version[0]}.{version[1]}", "site-packages")


def path_for(paths: list[str], ours: str, theirs: str) -> list[str]:
    """``paths`` with ``theirs`` (the zygote's site-packages) preceded by ``ours`` (the
    kernel's own), as a fresh start of the kernel's interpreter would order them."""
    kept = [path for path in paths if path != ours]
    at = kept.index(theirs) if theirs in kept else len(kept)
    return [*kept[:at], ours, *kept[at:]]


def retarget(path: str, old: str, new: str) -> str:
    """``path`` moved from under the prefix ``old`` to under ``new``."""
    inside = os.path.relpath(path, old)
    return path if inside.startswith(os.pardir) else os.path.normpath(os.path.join(new, inside))


def launcher_args(argv: list[str]) -> list[str]:
    """A kernel's command line less the interpreter: ``sys.argv`` of the launcher."""
    if len(argv) < 2 or not argv[1].endswith("kernel_launcher.py"):
        raise ValueError(f"not a launcher command line: {argv[:2]}")
    return argv[1:]


# --- the child ----------------------------------------------------------------------------


def rewrite_proc_image(argv: list[str], env: dict[str, str]) -> None:
    """Write ``argv`` and ``env`` over this process's original command line and environment,
    where ``/proc/<pid>/cmdline`` and ``environ`` read them. Left as they are if either
    does not fit or cannot be written: the kernel runs all the same."""
    try:
        with open("/proc/self/stat") as file:
            args, environ = memory_areas(file.read())
        images = [
            (args, packed(argv, args[1] - args[0])),
            (environ, packed(environ_lines(env), environ[1] - environ[0])),
        ]
        if any(image is None for _, image in images):
            raise ValueError("no room for them")
        with open("/proc/self/mem", "r+b", buffering=0) as memory:
            for (start, _), image in images:
                memory.seek(start)
                memory.write(image or b"")
    except (OSError, ValueError) as exc:
        print(f"nbstage zygote: kernel {os.getpid()} shows the zygote's: {exc}", file=sys.stderr)


def become_environment(python: str) -> None:
    """Take the pool environment of ``python`` as this process's own, as its interpreter
    would at start: ``%pip install`` then writes there, and what it installs is imported
    before the template's copy."""
    prefix = venv_of(python)
    if prefix is None:
        return
    theirs = site_packages(sys.prefix, sys.version_info[:2])
    sys.path[:] = path_for(sys.path, site_packages(prefix, sys.version_info[:2]), theirs)
    jupyter_paths = sys.modules.get("jupyter_core.paths")
    for name in ("ENV_JUPYTER_PATH", "ENV_CONFIG_PATH"):
        found = getattr(jupyter_paths, name, None)
        if isinstance(found, list):
            found[:] = [retarget(path, sys.prefix, prefix) for path in found]
    sys.prefix = sys.exec_prefix = prefix
    sys.executable = python


def become(request: dict[str, Any], launcher: object) -> None:
    """In the forked child: turn into the kernel ``request`` describes and run it; never
    returns."""
    code = 1
    try:
        argv, env = request["argv"], request["env"]
        os.environ.clear()
        os.environ.update(env)
        os.chdir(request.get("cwd") or os.getcwd())
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        rewrite_proc_image(argv, env)
        become_environment(argv[0])
        sys.argv = launcher_args(argv)
        launcher.main()  # type: ignore[attr-defined]
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException as exc:
        print(f"nbstage zygote: kernel {os.getpid()} failed: {exc!r}", file=sys.stderr)
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


# --- the server ---------------------------------------------------------------------------


class Zygote:
    def __init__(self, channel: socket.socket, owner: int | None, launcher: object) -> None:
        self.channel = channel
        self.owner = owner
        self.launcher = launcher
        self.children: set[int] = set()
        self.last_request = time.monotonic()

    def fork(self, request: dict[str, Any]) -> None:
        """Fork the kernel; reply once it leads a session of its own, so that a signal to
        its process group reaches it from the first moment."""
        ready, signalled = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(ready)
            os.setsid()
            os.close(signalled)
            self.channel.close()
            if self.owner is not None:
                os.close(self.owner)
            become(request, self.launcher)
        os.close(signalled)
        os.read(ready, 1)
        os.close(ready)
        self.children.add(pid)
        pidfd = os.pidfd_open(pid)
        try:
            socket.send_fds(self.channel, [json.dumps({"pid": pid}).encode()], [pidfd])
        finally:
            os.close(pidfd)

    def reap(self) -> None:
        for pid in list(self.children):
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                done = pid
            if done:
                self.children.discard(pid)

    def idle(self) -> bool:
        return not self.children and time.monotonic() - self.last_request > IDLE_SECS

    def serve(self) -> None:
        watched = [self.channel] + ([self.owner] if self.owner is not None else [])
        while True:
            readable, _, _ = select.select(watched, [], [], REAP_SECS)
            self.reap()
            if self.owner is not None and self.owner in readable:
                return
            if self.channel in readable:
                data = self.channel.recv(MOST_BYTES)
                if not data:
                    return
                self.last_request = time.monotonic()
                try:
                    self.fork(json.loads(data))
                except (OSError, ValueError, KeyError) as exc:
                    self.channel.send(json.dumps({"error": repr(exc)}).encode())
            elif self.idle():
                return


def preload() -> object:
    """Import what every kernel imports, and the launcher; returns the launcher module.
    What is imported is then left out of garbage collection, so that a kernel's collections
    do not write to (and so copy) the pages it shares with the zygote."""
    import importlib

    here = os.path.dirname(os.path.abspath(__file__))
    launcher = importlib.import_module("kernel_launcher")
    sys.path[:] = launcher.without_dir(sys.path, here)
    launcher.without_debugger()
    for name in PRELOADED:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    gc.freeze()
    return launcher


def owner_pidfd(name: str = OWNER_PID_ENV) -> int | None:
    """A pidfd of the process whose pid the variable ``name`` holds, the owner whose end
    ends this server; None without one. Exits at once if the owner is already gone."""
    owner = os.environ.get(name)
    if not owner:
        return None
    try:
        return os.pidfd_open(int(owner))
    except ProcessLookupError:
        os._exit(1)


def main() -> None:
    channel = socket.socket(fileno=int(os.environ.pop(FD_ENV)))
    os.environ.pop(PAD_ENV, None)
    owner = owner_pidfd()
    launcher = preload()
    channel.send(json.dumps({"ready": os.getpid()}).encode())
    Zygote(channel, owner, launcher).serve()


if __name__ == "__main__":
    main()
