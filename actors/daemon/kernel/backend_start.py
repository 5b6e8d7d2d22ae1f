"""Worker-thread work for the Kernel actor: build the backend and start the kernel, or
adopt the daemon's warm spare kernel (``spare_kernel``) when it fits."""

from __future__ import annotations

import logging
import secrets
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nbstage.protocol.daemon_actors.kernels import KernelBackendKind, StartKernel

if TYPE_CHECKING:
    from nbstage.actors.daemon.kernel.kernel_environment import Found

log = logging.getLogger("nbstage.kernel")


def launch(msg: StartKernel) -> tuple[Any, str]:
    """Worker-thread work: build the backend (a kernelspec lookup) and start the kernel,
    or adopt the daemon's spare kernel (actors/daemon/kernel/spare_kernel.py) when it fits."""
    from nbstage.actors.daemon.kernel.kernel_environment import project_around

    if msg.unplaceable is not None:
        raise RuntimeError(msg.unplaceable)
    if msg.host is not None:
        from nbstage.actors.daemon.kernel.gateway_backend import GatewayBackend

        remote = GatewayBackend(msg.host, msg.kernel_name)
        return remote, remote.start(msg.working_dir)
    placed = msg.backend == KernelBackendKind.JUPYTER and msg.state_dir is not None
    found = project_around(msg.environment) if placed else None
    adopted = _adopt_spare(msg, found)
    if adopted is not None:
        try:
            return adopted, adopted.resume(msg.working_dir)
        except Exception:
            log.exception("could not adopt the spare kernel; starting one")
            adopted.shutdown()
    backend = _make_backend(msg, found)
    return backend, backend.start(msg.working_dir)


def _adopt_spare(msg: StartKernel, found: Found) -> Any:
    from nbstage.actors.daemon.kernel.kernel_environment import pool_view
    from nbstage.actors.daemon.kernel.spare_kernel import KERNEL_NAME, SPARE, stop_spare

    fits = msg.backend == KernelBackendKind.JUPYTER and msg.state_dir is not None
    if not fits or msg.kernel_name != KERNEL_NAME:
        return None
    pool = pool_view(msg.environment, found)
    if pool is None:
        return None
    spare = SPARE.take()
    if spare is None:
        return None
    from nbstage.actors.daemon.kernel.kernel_backend import JupyterBackend

    backend = JupyterBackend.adopting(spare, Path(msg.kernel_dir), pool)
    if backend is None:
        log.info("spare kernel %s does not fit the python3 kernelspec", spare.kernel_id)
        stop_spare(spare)
    return backend


def _make_backend(msg: StartKernel, found: Found) -> Any:
    if msg.backend == KernelBackendKind.SCRIPTED:
        from nbstage.actors.daemon.kernel.scripted_backend import ScriptedBackend

        return ScriptedBackend()
    from nbstage.actors.daemon.kernel.kernel_backend import JupyterBackend

    kernel_id = f"{msg.notebook_id[:8]}-{secrets.token_hex(3)}"
    if msg.state_dir is None:
        return JupyterBackend(msg.kernel_name, Path(msg.kernel_dir), kernel_id)
    from nbstage.actors.daemon.kernel.kernel_environment import place_kernel

    state_dir = msg.state_dir
    return JupyterBackend(
        msg.kernel_name,
        Path(msg.kernel_dir),
        kernel_id,
        lambda: place_kernel(msg.environment, state_dir, kernel_id, found),
    )
