"""What the Kernel actor reports of a kernel and the daemon's replies carry to clients:
the kernel's state, how an execution ended, the output it dropped, and where the
kernel's Python comes from.

They live apart from the Room ↔ Kernel messages (``kernels.py``) so that a client of the
daemon (the session child, the CLI) loads these alone, not the daemon's own messages.
"""

from __future__ import annotations

from dataclasses import field
from enum import StrEnum
from typing import Any

from nbstage.protocol.common.codec import OMIT_WHEN_NONE
from nbstage.protocol.common.frozen import frozen


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


def _optional() -> Any:
    return field(default=None, metadata=OMIT_WHEN_NONE)


class EnvSource(StrEnum):
    """Where a kernel's Python comes from (actors/daemon/kernel/kernel_environment.py decides)."""

    INLINE = "inline"
    PROJECT = "project"
    POOL = "pool"
    HOST = "host"
    """A kernel host's own (the gateway's kernelspec; docs/adr/0007-kernel-hosts.md)."""


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
class OutputsDropped:
    """How much output was dropped between what a cell keeps from its start and its end
    (actors/common/output_bounds.py)."""

    size: int = 0
    """Bytes: streams' UTF-8 text, other outputs' JSON."""
    lines: int = 0
    """Newlines in the dropped stream text."""
    outputs: int = 0
    """Whole outputs other than streams."""
