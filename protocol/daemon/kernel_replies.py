"""A Room's answers about running code: executions, interrupts, restarts, the kernel's
shutdown and the notebook's inline dependencies."""

from __future__ import annotations

from dataclasses import field
from typing import Any

from nbstage.protocol.common.codec import OMIT_WHEN_NONE
from nbstage.protocol.common.frozen import frozen
from nbstage.protocol.daemon.dependency_modes import ApplyDependencies
from nbstage.protocol.daemon_actors.kernel_facts import EnvironmentView, ExecutionStatus


@frozen
class ExecutionView:
    execution_id: str
    cell_id: str
    status: ExecutionStatus
    execution_count: int | None
    outputs: list[dict[str, Any]]
    """nbformat outputs, in the order they arrived."""
    error: str | None = field(default=None, metadata=OMIT_WHEN_NONE)
    """Why an execution ended in error or was cancelled, when the kernel did not say; on the
    wire only when there is one."""


@frozen
class ExecutionReported:
    """The answer to execute and get_execution: finished, or as far as it got in the wait."""

    execution: ExecutionView


@frozen
class InterruptSent:
    interrupted: bool = True


@frozen
class RestartCompleted:
    kernel_pid: int | None
    restarted: bool = True
    moved_from: str | None = field(default=None, metadata=OMIT_WHEN_NONE)
    """The kernel host the old kernel ran on, when the new one runs on another
    (docs/adr/0007-kernel-hosts.md); on the wire only then."""
    moved_to: str | None = field(default=None, metadata=OMIT_WHEN_NONE)


@frozen
class DependencyRemoval:
    requested: list[str]
    removed: list[str]
    not_found: list[str]


@frozen
class DependencyTrust:
    status: str
    """"none" (no dependencies), "trusted" or "untrusted"."""
    needs_approval: bool


@frozen
class DependenciesApplied:
    mode: ApplyDependencies
    ok: bool
    seconds: float
    error: str | None = None
    """uv's words when the build or install failed; the kernel was left as it was."""


@frozen
class DependencySide:
    dependencies: list[str]
    fingerprint: str


@frozen
class DependenciesManaged:
    """manage_dependencies' answer. ``before`` and ``after`` are equal for a plain read."""

    before: DependencySide
    after: DependencySide
    added: list[str]
    removed: DependencyRemoval
    trust: DependencyTrust
    environment: EnvironmentView | None = None
    apply: DependenciesApplied | None = None


@frozen
class KernelShutDown:
    kernel_pid: int | None
    """The pid of the kernel that was stopped."""
    shutdown: bool = True
