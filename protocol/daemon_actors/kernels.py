"""The Room ↔ Kernel conversation: start, run code, interrupt, restart, stop.

Output travels up in batches (OutputsArrived) rather than one message per
iopub message: thespian's queues are bounded, and a burst must never fill them.
"""

from __future__ import annotations

from dataclasses import field
from enum import StrEnum
from typing import Any

from nbstage.protocol.common.errors import ErrorCode
from nbstage.protocol.common.frozen import frozen
from nbstage.protocol.common.kernel_hosts import KernelHost
from nbstage.protocol.common.settings import OUTPUT_LIMIT_BYTES
from nbstage.protocol.daemon_actors.edge import Origin
from nbstage.protocol.daemon_actors.kernel_facts import (
    EnvironmentView,
    ExecutionStatus,
    OutputsDropped,
)


@frozen
class KernelspecInfo:
    """An installed kernelspec, with what a notebook's metadata records of it."""

    name: str
    display_name: str
    language: str


@frozen
class EnvironmentWanted:
    """Where a Python kernel's environment should come from
    (actors/daemon/kernel/kernel_environment.py)."""

    requirements: tuple[str, ...] = ()
    """A trusted inline set, normalised; empty: a project's environment, else the pool."""
    fingerprint: str | None = None
    search_from: str | None = None
    """Where the walk up to a project's ``pyproject.toml`` starts."""
    trusted_projects: tuple[str, ...] = ()
    """The fingerprints approved for the notebook's path: a project whose fingerprint is
    not among them runs its kernel in the pool (actors/daemon/environment/projects.py)."""


class KernelBackendKind(StrEnum):
    JUPYTER = "jupyter"
    """A real kernel process."""
    SCRIPTED = "scripted"
    """In memory, for tests of the Room (actors/daemon/kernel/scripted_backend.py)."""


@frozen
class StartKernel:
    """A Kernel actor's first message."""

    notebook_id: str
    kernel_name: str
    kernel_dir: str
    working_dir: str | None
    edge: Any
    backend: KernelBackendKind = KernelBackendKind.JUPYTER
    state_dir: str | None = None
    """Where a Python kernel's environments live (actors/daemon/environment/environments.py);
    None runs it with the kernelspec's own Python, which only in-process tests do."""
    environment: EnvironmentWanted = EnvironmentWanted()
    output_limit: int = OUTPUT_LIMIT_BYTES
    """The most output of one execution a batch holds (settings' output_limit_bytes)."""
    host: KernelHost | None = None
    """The kernel host (a Jupyter Kernel Gateway) to run on; None: this machine."""
    unplaceable: str | None = None
    """Why no host can take the kernel (actors/daemon/kernel/placement.py): it fails to start."""


@frozen
class KernelReady:
    pid: int | None
    actor_pid: int
    environment: EnvironmentView | None = None


@frozen
class KernelFailed:
    code: ErrorCode
    message: str


@frozen
class KernelDied:
    """The kernel process ended without being asked to."""

    pid: int | None
    host: str | None = None
    """The kernel host it ran on; None: this machine."""
    reason: str | None = None


@frozen
class RunCode:
    execution_id: str
    code: str


@frozen
class ExecutionStarted:
    execution_id: str


@frozen
class OutputsArrived:
    execution_id: str
    outputs: list[dict[str, Any]]
    replace: bool = False
    """True after clear_output: these outputs replace everything before."""
    dropped: OutputsDropped | None = None
    """Output the kernel's batch dropped after ``outputs``, over the cell's limit."""
    tail: list[dict[str, Any]] = field(default_factory=list)
    """What the batch kept from its end, after ``dropped``."""


@frozen
class ExecutionFinished:
    execution_id: str
    status: ExecutionStatus
    execution_count: int | None
    error: str | None = None


@frozen
class ExecutionsCancelled:
    execution_ids: tuple[str, ...]
    status: ExecutionStatus
    reason: str


@frozen
class InterruptKernelNow:
    origin: Origin


@frozen
class KernelInterrupted:
    origin: Origin


@frozen
class RestartKernelNow:
    origin: Origin


@frozen
class KernelRestarted:
    origin: Origin
    pid: int | None


@frozen
class ShutdownKernel:
    """Stop the kernel process, then answer KernelStopped."""


@frozen
class KernelStopped:
    pid: int | None


@frozen
class WatchKernelSockets:
    """Kernel → edge: tell ``owner`` KernelIoReady whenever one of ``fds`` may be readable."""

    owner: Any
    fds: tuple[int, ...]


@frozen
class UnwatchKernelSockets:
    """Kernel → edge: stop watching ``fds``; sent before the sockets close."""

    fds: tuple[int, ...]


@frozen
class KernelIoReady:
    """Edge → Kernel: its sockets may have messages."""
