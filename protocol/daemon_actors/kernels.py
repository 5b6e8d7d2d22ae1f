"""The Room ↔ Kernel conversation: start, run code, interrupt, restart, stop.

Output travels up in batches (OutputsArrived) rather than one message per
iopub message: thespian's queues are bounded, and a burst must never fill them.
"""

from __future__ import annotations

from dataclasses import field
from enum import StrEnum
from typing import Any

from nbstage.protocol.common.codec import OMIT_WHEN_NONE
from nbstage.protocol.common.errors import ErrorCode
from nbstage.protocol.common.frozen import frozen
from nbstage.protocol.common.kernel_hosts import KernelHost
from nbstage.protocol.common.settings import OUTPUT_LIMIT_BYTES
from nbstage.protocol.daemon_actors.edge import Origin


class KernelState(StrEnum):
    NONE = "none"
    STARTING = "starting"
    IDLE = "idle"
    BUSY = "busy"
    RESTARTING = "restarting"
    DEAD = "dead"
    UNKNOWN = "unknown"
    """Only a session whose daemon is unreachable says this, of its own notebooks."""


class ExecutionStatus(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    ERROR = "error"
    CANCELLED = "cancelled"

    @property
    def finished(self) -> bool:
        return self in (ExecutionStatus.DONE, ExecutionStatus.ERROR, ExecutionStatus.CANCELLED)


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


def _optional() -> Any:
    return field(default=None, metadata=OMIT_WHEN_NONE)


class EnvSource(StrEnum):
    """Where a kernel's Python comes from (actors/daemon/kernel/kernel_environment.py decides)."""

    INLINE = "inline"
    PROJECT = "project"
    POOL = "pool"
    HOST = "host"
    """A kernel host's own (the gateway's kernelspec; docs/adr/0007-kernel-hosts.md)."""


class KernelBackendKind(StrEnum):
    JUPYTER = "jupyter"
    """A real kernel process."""
    SCRIPTED = "scripted"
    """In memory, for tests of the Room (actors/daemon/kernel/scripted_backend.py)."""


@frozen
class EnvironmentView:
    """Where a kernel's Python comes from, as tools and the admin console show it."""

    source: EnvSource
    fingerprint: str | None = _optional()
    """The inline environment's dependency fingerprint, or the project's."""
    project: str | None = _optional()
    """The project's folder. With source "pool": a project that was found but not used,
    waiting for approval (with its fingerprint) or refused (``problem`` says why)."""
    path: str | None = _optional()
    """The environment's folder, when nbstage made it."""
    problem: str | None = _optional()
    """Why the kernel runs somewhere other than where it was asked to (a failed build)."""
    host: str | None = _optional()
    """The kernel host the kernel runs on (source "host"); none: the daemon's machine."""


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
class OutputsDropped:
    """How much output was dropped between what a cell keeps from its start and its end
    (actors/common/output_bounds.py)."""

    size: int = 0
    """Bytes: streams' UTF-8 text, other outputs' JSON."""
    lines: int = 0
    """Newlines in the dropped stream text."""
    outputs: int = 0
    """Whole outputs other than streams."""


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
