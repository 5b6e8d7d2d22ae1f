"""What a kernel backend reports, decoded once at the seam from Jupyter's messages."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class OutputEmitted:
    parent_id: str
    output: dict[str, Any]


@dataclass(frozen=True, slots=True)
class OutputCleared:
    parent_id: str


@dataclass(frozen=True, slots=True)
class KernelWentIdle:
    parent_id: str


@dataclass(frozen=True, slots=True)
class ExecutionCounted:
    parent_id: str
    execution_count: int


@dataclass(frozen=True, slots=True)
class ReplyReceived:
    parent_id: str
    ok: bool
    execution_count: int | None
    error: str | None


KernelEvent = OutputEmitted | OutputCleared | KernelWentIdle | ExecutionCounted | ReplyReceived
