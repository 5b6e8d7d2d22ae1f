"""The seam between the Kernel actor and jupyter_client.

Everything Jupyter-shaped (channels, msg dicts, msg_type strings) stays in this
module. The Kernel actor sees typed events, drained without blocking on its ticks.
Only Kernel actor processes import this module, because jupyter_client is heavy.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import zmq
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager

from nbstage.actors.daemon.environment import environments
from nbstage.actors.daemon.kernel.forking_provisioner import ForkingProvisioner
from nbstage.actors.daemon.kernel.kernel_backend_events import KernelEvent
from nbstage.actors.daemon.kernel.kernel_environment import Placement
from nbstage.actors.daemon.kernel.kernel_files import pipe_socket
from nbstage.actors.daemon.kernel.kernel_messages import iopub_event, shell_event
from nbstage.actors.daemon.kernel.kernel_wire import waiting
from nbstage.actors.daemon.kernel.process_tree import end_tree, kernel_tag, tagged_environ
from nbstage.actors.daemon.kernel.spare_kernel import KERNEL_NAME, LAUNCHER, NO_HISTORY, Spare
from nbstage.protocol.common.frozen import frozen
from nbstage.protocol.daemon_actors.kernel_facts import EnvironmentView, EnvSource
from nbstage.protocol.daemon_actors.kernels import KernelspecInfo

SPECS_FRESH_SECS = 2.0
"""How long one scan of the kernelspec dirs answers every room that asks while none of
those dirs changed. A scan reads every kernelspec and, through jupyter_client, every
installed package's entry points: 32 rooms opening at once made 32 scans on the daemon's
workers, about a tenth of the daemon's CPU in that minute. A kernelspec installed or
removed changes its kernels dir, which is seen at once; a ``kernel.json`` edited in place
is seen within this time."""


@frozen
class _Scan:
    at: float
    dirs: tuple[tuple[str, int | None], ...]
    """Each kernels dir and its mtime (None: absent) when the scan was made."""
    specs: dict[str, KernelspecInfo]


_scan_lock = threading.Lock()
_kernel_dirs: list[str] | None = None
_last_scan: _Scan | None = None


def installed_kernelspecs() -> dict[str, KernelspecInfo]:
    """Every installed kernelspec by name (blocking: it reads the kernelspec dirs, unless
    a fresh scan of the same dirs can answer; callers meanwhile wait for the one scan
    under way)."""
    global _last_scan, _kernel_dirs
    with _scan_lock:
        if _kernel_dirs is None:
            _kernel_dirs = list(KernelSpecManager().kernel_dirs)
        dirs = tuple((folder, _mtime(folder)) for folder in _kernel_dirs)
        now = time.monotonic()
        last = _last_scan
        if last is None or last.dirs != dirs or now - last.at > SPECS_FRESH_SECS:
            _last_scan = last = _Scan(now, dirs, _scan_kernelspecs())
        return dict(last.specs)


def _mtime(folder: str) -> int | None:
    try:
        return os.stat(folder).st_mtime_ns
    except OSError:
        return None


def _scan_kernelspecs() -> dict[str, KernelspecInfo]:
    found = {}
    for name, entry in KernelSpecManager().get_all_specs().items():
        spec = entry.get("spec", {})
        display_name = spec.get("display_name") or name
        found[name] = KernelspecInfo(name, display_name, spec.get("language") or "")
    return found


def _run_in(argv: list[str], launcher_at: int, placement: Placement) -> None:
    """Point the kernel's command line (``python LAUNCHER -f …``) at the placement."""
    if placement.project is not None:
        argv[: launcher_at + 1] = environments.project_argv(placement.project, LAUNCHER)
    elif placement.python is not None:
        argv[0] = str(placement.python)


def launched_as(python: Path) -> list[str]:
    """The command line of a pool kernel that the installed python3 kernelspec starts."""
    return [str(python), str(LAUNCHER), "-f", "{connection_file}", NO_HISTORY]


class JupyterBackend:
    """One real kernel through jupyter_client, over IPC sockets in a private dir.

    The kernel exits the moment the daemon is gone (kernel_launcher.py). It keeps no
    input history on disk: IPython would otherwise write every cell's source to
    ``~/.ipython/profile_default/history.sqlite``, outside the private state dir."""

    def __init__(
        self,
        kernel_name: str,
        kernel_dir: Path,
        kernel_id: str,
        place: Callable[[], Placement] | None = None,
    ) -> None:
        """``place`` chooses the environment (kernel_environment.py); it is asked only
        for a Python kernel that ipykernel runs."""
        kernel_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        self._km = KernelManager(
            kernel_name=kernel_name,
            transport="ipc",
            ip=str(kernel_dir / kernel_id),
            connection_file=str(kernel_dir / f"{kernel_id}.json"),
        )
        self._kc: Any = None
        self._kernel_dir = kernel_dir
        self._tag = kernel_tag(kernel_id)
        argv = self._km.kernel_spec.argv
        at = argv.index("ipykernel_launcher") if "ipykernel_launcher" in argv else -1
        self.placement: Placement | None = None
        if at > 0 and argv[at - 1] == "-m":
            argv[at - 1 : at + 1] = [str(LAUNCHER)]
            if place is not None:
                self.placement = place()
                _run_in(argv, at - 1, self.placement)
        argv.append(NO_HISTORY)
        self._adopted: Spare | None = None
        self._working_dir: str | None = None
        self._fork_from_zygote(kernel_id)

    def _fork_from_zygote(self, kernel_id: str) -> None:
        """Have the pool's zygote fork this kernel (ADR 0005) when a fresh launch would run
        the launcher alone in a pool environment: the installed python3 kernelspec's own
        command line, with no variables of its own."""
        placement = self.placement
        if placement is None or placement.template is None or placement.python is None:
            return
        spec = self._km.kernel_spec
        if spec.argv != launched_as(placement.python) or spec.env:
            return
        provisioner = ForkingProvisioner(kernel_id=kernel_id, kernel_spec=spec, parent=self._km)
        provisioner.zygote_python = environments.env_python(placement.template)
        self._km.provisioner = provisioner

    @classmethod
    def adopting(
        cls, spare: Spare, kernel_dir: Path, pool: EnvironmentView | None = None
    ) -> JupyterBackend | None:
        """A backend for the already running ``spare``, if the installed python3
        kernelspec would have launched it just so (the same command line, no variables of
        its own); None otherwise. ``resume`` then connects to it. ``pool`` is the view
        ``pool_view`` gave (it may name a project waiting for approval)."""
        python = environments.env_python(spare.env)
        view = replace(pool or EnvironmentView(EnvSource.POOL), path=str(spare.env))
        placement = Placement(view, python=python, owned=spare.env, template=spare.template)
        backend = cls(KERNEL_NAME, kernel_dir, spare.kernel_id, lambda: placement)
        spec = backend._km.kernel_spec
        if spec.argv != launched_as(python) or spec.env:
            return None
        backend._km.load_connection_file(str(spare.connection_file))
        backend._adopted = spare
        return backend

    @property
    def pid(self) -> int | None:
        if self._adopted is not None:
            return self._adopted.process.pid
        provisioner = self._km.provisioner
        process = getattr(provisioner, "process", None) if provisioner else None
        return process.pid if process is not None else None

    def start(self, working_dir: str | None) -> str:
        """Launch the kernel and ask for kernel_info; returns that request's msg_id."""
        self._working_dir = working_dir
        self._km.start_kernel(cwd=working_dir, env=tagged_environ(self._tag))
        self._connect()
        return self._kc.kernel_info()

    def resume(self, working_dir: str | None) -> str:
        """Connect to the adopted spare, move it to ``working_dir`` (it was launched in the
        daemon's), and ask for kernel_info; returns that request's msg_id."""
        self._working_dir = working_dir
        self._connect()
        if working_dir and working_dir != self._adopted.cwd:
            move = f"__import__('os').chdir({working_dir!r})"
            self._kc.execute(move, silent=True, store_history=False, allow_stdin=False)
        return self._kc.kernel_info()

    def _connect(self) -> None:
        self._kc = self._km.client()
        self._kc.start_channels(hb=False)

    def wake_fds(self) -> list[int]:
        """OS fds that turn readable when iopub or shell may hold messages (edge-triggered)."""
        return [
            self._kc.iopub_channel.socket.getsockopt(zmq.FD),
            self._kc.shell_channel.socket.getsockopt(zmq.FD),
        ]

    def request_info(self) -> str:
        return self._kc.kernel_info()

    def execute(self, code: str) -> str:
        return self._kc.execute(code, store_history=True, allow_stdin=False, stop_on_error=False)

    def ask(self, request_type: str, content: dict[str, Any]) -> str:
        """Send a shell request that is no run (a completion, an inspection)."""
        msg = self._kc.session.msg(request_type, content)
        self._kc.shell_channel.send(msg)
        return str(msg["header"]["msg_id"])

    def drain(self) -> Iterator[KernelEvent]:
        """Every message already waiting on iopub and shell, without blocking, read one
        at a time as the caller takes them: a burst of output is never all in memory."""
        for msg in waiting(self._kc.iopub_channel):
            event = iopub_event(msg)
            if event is not None:
                yield event
        yield from map(shell_event, waiting(self._kc.shell_channel))

    def is_alive(self) -> bool:
        """Whether the kernel process still runs, by a non-blocking ``poll`` of it.

        Not ``KernelManager.is_alive``: it is a coroutine run to completion on another
        thread, and from inside the daemon's running loop every call blocked the loop for
        about a millisecond, three times per execute."""
        if self._adopted is not None:
            return self._adopted.process.poll() is None
        process = getattr(self._km.provisioner, "process", None)
        return process is not None and process.poll() is None

    def interrupt(self) -> None:
        if self._adopted is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self._adopted.process.pid, signal.SIGINT)
        else:
            self._km.interrupt_kernel()

    def restart(self) -> str:
        """Kill, with every process it started, and relaunch in place; returns the new
        kernel_info request's msg_id. An adopted spare is relaunched by jupyter_client, on
        the same connection file."""
        end_tree(self._tag, self.pid)
        if self._adopted is not None:
            self._stop_adopted()
            self._km.start_kernel(cwd=self._working_dir, env=tagged_environ(self._tag))
        else:
            self._km.restart_kernel(now=True)
        for _ in self.drain():
            pass
        return self._kc.kernel_info()

    def _stop_adopted(self) -> None:
        spare, self._adopted = self._adopted, None
        with contextlib.suppress(ProcessLookupError):
            os.killpg(spare.process.pid, signal.SIGKILL)
        spare.process.wait()

    def shutdown(self) -> None:
        pid = self.pid
        if self._kc is not None:
            self._kc.stop_channels()
        end_tree(self._tag, pid)
        if self._adopted is not None:
            self._stop_adopted()
            Path(self._km.connection_file).unlink(missing_ok=True)
        if self._km.has_kernel:
            self._km.shutdown_kernel(now=True)
        self._km.cleanup_resources()
        if pid is not None:
            pipe_socket(self._kernel_dir, pid).unlink(missing_ok=True)
        if self.placement is not None and self.placement.owned is not None:
            environments.remove_env(self.placement.owned)
