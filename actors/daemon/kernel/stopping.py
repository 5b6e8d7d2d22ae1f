"""The Kernel's way out: a shutdown the Room asks for (held until a launch under way
ends), the backend stopped on a worker thread, and the last-resort stop when the actor
itself is ended. These are the Kernel actor's handlers for it; they act through the
Kernel, which owns the backend."""

from __future__ import annotations

import logging
from typing import Any

from nbstage.actors.daemon.kernel import run_queue
from nbstage.protocol.common.offload import BlockingWorkDone
from nbstage.protocol.daemon_actors.kernel_facts import ExecutionStatus, KernelState
from nbstage.protocol.daemon_actors.kernel_followups import StoppedForGood
from nbstage.protocol.daemon_actors.kernels import KernelStopped, ShutdownKernel

log = logging.getLogger("nbstage.kernel")


def shutdown_kernel(kernel: Any, msg: ShutdownKernel, sender: Any) -> None:
    run_queue.stop_all(kernel, "the kernel was shut down", ExecutionStatus.CANCELLED)
    kernel.stop_watching()
    launching = kernel.backend is None and kernel.state is KernelState.STARTING
    kernel.state = KernelState.DEAD
    if launching:
        kernel.stop_after_launch = sender
    elif kernel.backend is None:
        kernel.send(sender, KernelStopped(None))
    else:
        stop_backend(kernel, sender)


def stop_backend(kernel: Any, reply_to: Any) -> None:
    kernel.state = KernelState.DEAD
    kernel.backend_busy = True
    backend, kernel.backend = kernel.backend, None
    kernel.offload(StoppedForGood(backend.pid, reply_to), backend.shutdown, kernel.lane)


def stopped_for_good(kernel: Any, done: BlockingWorkDone) -> None:
    if not done.ok:
        log.error("kernel shutdown failed: %s", done.error)
    else:
        log.info("kernel pid %s of room %s stopped", done.token.pid, kernel.name)
    kernel.send(done.token.room, KernelStopped(done.token.pid))


def stop_if_asked(kernel: Any) -> None:
    if kernel.stop_after_launch is not None:
        kernel.send(kernel.stop_after_launch, KernelStopped(None))


def actor_exit(kernel: Any, msg: Any, sender: Any) -> None:
    """Last resort: the Room asks for ShutdownKernel first, so this rarely finds a kernel."""
    kernel.stop_watching()
    if kernel.backend is not None and not kernel.backend_busy:
        kernel.backend.shutdown()
