"""What a new room starts with: the wish of the call that admitted it, the Daemon's own
settings, and, for a create that names a runtime, the kernelspec chosen for it."""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from nbstage.actors.daemon.admission import StartNewRoom
from nbstage.actors.daemon.kernel.kernelspecs import NoKernelspec, choose_for_runtime
from nbstage.protocol.common.errors import ErrorCode, NbstageError
from nbstage.protocol.common.frozen import frozen
from nbstage.protocol.common.offload import BlockingWorkDone
from nbstage.protocol.daemon_actors.daemon_followups import NotebookImportsDue
from nbstage.protocol.daemon_actors.kernels import KernelspecInfo
from nbstage.protocol.daemon_actors.rooms import HostsSeen, StartDaemon, StartRoom

if TYPE_CHECKING:
    from nbstage.actors.common.base import NbActor

log = logging.getLogger("nbstage.daemon")


@frozen
class RoomWish:
    """What the open, attach or create asked of the room it joins or starts."""

    peer_label: str
    ephemeral: bool = False
    kernelspec: KernelspecInfo | None = None
    working_dir: str | None = None
    kernel_host: str | None = None
    """A new room's wished kernel host, written into its metadata."""
    content: bytes | None = None
    """An untitled notebook's document, read from the registry as the attach was admitted."""


def start_message(
    start: StartNewRoom, wish: RoomWish, config: StartDaemon, edge: Any, hosts: HostsSeen
) -> StartRoom:
    return StartRoom(
        start.notebook_id,
        start.source,
        start.path,
        wish.ephemeral,
        wish.kernelspec,
        wish.working_dir,
        config.state_dir,
        config.kernel_dir,
        config.settings,
        edge,
        content=wish.content,
        run=config.run,
        earlier=config.earlier,
        binding_pending=start.binding_pending,
        kernel_host=wish.kernel_host,
        hosts_seen=hosts,
    )


def installed_kernelspecs() -> dict[str, KernelspecInfo]:
    """Blocking: read the installed kernelspecs (jupyter_client is imported only here)."""
    from nbstage.actors.daemon.kernel import kernel_backend

    return kernel_backend.installed_kernelspecs()


def kernelspec_for(runtime: str, scan: BlockingWorkDone) -> KernelspecInfo | NbstageError:
    """The kernelspec a create's ``runtime`` names, of those the scan found."""
    if scan.error is not None:
        return NbstageError(ErrorCode.INTERNAL, f"kernelspec scan: {scan.error}")
    specs: dict[str, KernelspecInfo] = scan.result
    chosen = choose_for_runtime(runtime, {n: s.language for n, s in specs.items()})
    if isinstance(chosen, NoKernelspec):
        return NbstageError(ErrorCode.UNKNOWN_RUNTIME, chosen.message)
    return specs[chosen]


def imports_warmed(done: BlockingWorkDone) -> None:
    if not done.ok:
        log.warning("warming the notebook or kernel imports failed: %s", done.error)


NOTEBOOK_IMPORTS_AFTER = timedelta(seconds=2)
"""How long after the kernel libraries the notebook-file ones are warmed (the first join
needs only the former)."""


def kernel_imports_warmed(daemon: NbActor, done: BlockingWorkDone) -> None:
    imports_warmed(done)
    daemon.wakeupAfter(NOTEBOOK_IMPORTS_AFTER, payload=NotebookImportsDue())


def warm_kernel_imports() -> None:
    """Blocking: import what the first kernel needs, before anyone asks."""
    from nbstage.actors.daemon.kernel import kernel_backend  # noqa: F401


def warm_notebook_imports() -> None:
    """Blocking: import what reading and writing a notebook file needs."""
    from nbstage.actors.daemon.notebook.notebook_files import warm_imports

    warm_imports()
