"""Requests a notebook's Room answers about running code: executions, interrupts,
restarts, stopping the kernel and the notebook's inline dependencies."""

from __future__ import annotations

from dataclasses import field

from nbstage.protocol.common.frozen import frozen
from nbstage.protocol.daemon.dependency_modes import ApplyDependencies
from nbstage.protocol.daemon.request_wire import wire_request


@wire_request("execute")
@frozen
class ExecuteCell:
    """Queue a cell; answer when it finishes or after ``wait_secs``, whichever comes first."""

    notebook_id: str
    cell_id: str
    wait_secs: float = 0.0
    key: str | None = None
    preview: int | None = None
    """Cut each output text in the answer to about this many bytes (an agent's preview,
    applied before the reply is encoded); None: outputs whole."""


@wire_request("get_execution")
@frozen
class GetExecution:
    notebook_id: str
    execution_id: str
    wait_secs: float = 0.0
    preview: int | None = None
    """Cut each output text in the answer to about this many bytes (an agent's preview,
    applied before the reply is encoded); None: outputs whole."""


@wire_request("shutdown_kernel")
@frozen
class ShutdownKernelNow:
    """Stop the room's kernel now; the room stays, and a later execute starts a fresh one."""

    notebook_id: str


@wire_request("interrupt")
@frozen
class InterruptKernel:
    notebook_id: str
    key: str | None = None


@wire_request("manage_dependencies")
@frozen
class ManageDependencies:
    """Read, or edit and apply, the notebook's inline dependencies
    (actors/daemon/environment/dependencies.py)."""

    notebook_id: str
    add: list[str] = field(default_factory=list)
    remove: list[str] = field(default_factory=list)
    trust: bool = False
    dependency_fingerprint: str | None = None
    """Refuse the call unless the dependencies still have this fingerprint."""
    apply: ApplyDependencies = ApplyDependencies.NONE
    key: str | None = None


@wire_request("restart_kernel")
@frozen
class RestartKernel:
    notebook_id: str
    key: str | None = None
    """Idempotency key: a repeat answers the first restart's result and restarts nothing."""
