"""The execution a Kernel actor is working on now: what the kernel has said about it so
far, and the outputs gathered since they were last sent to the Room."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from nbstage.actors.common.output_bounds import KeptOutputs
from nbstage.actors.daemon.kernel.kernel_backend_events import (
    ExecutionCounted,
    KernelWentIdle,
    OutputCleared,
    OutputEmitted,
    ReplyReceived,
)
from nbstage.protocol.daemon_actors.kernels import OutputsArrived

FLUSH_EVERY_SECS = 0.05


@dataclass
class Run:
    """The execution the kernel is working on now."""

    execution_id: str
    msg_id: str
    execution_count: int | None = None
    reply: Any = None
    idle: bool = False
    batch: KeptOutputs = field(default_factory=lambda: KeptOutputs(0))
    replace_batch: bool = False
    last_flush: float = field(default_factory=time.monotonic)

    def take(self, event: Any, output_limit: int) -> None:
        """Note one event the kernel sent about this run."""
        match event:
            case OutputEmitted(_, output):
                self.batch.add(output)
            case OutputCleared():
                self.batch = KeptOutputs(output_limit)
                self.replace_batch = True
            case ExecutionCounted(_, count):
                self.execution_count = count
            case KernelWentIdle():
                self.idle = True
            case ReplyReceived():
                self.reply = event

    def finished(self) -> bool:
        """The kernel has replied and gone idle: no more output will come."""
        return self.reply is not None and self.idle

    def flush_due(self) -> bool:
        return time.monotonic() - self.last_flush >= FLUSH_EVERY_SECS

    def flushed(self, output_limit: int) -> OutputsArrived | None:
        """The outputs gathered since the last flush, for the Room (None if there are
        none), and a fresh batch started."""
        head, dropped, tail = self.batch.parts()
        arrived = None
        if head or dropped or tail or self.replace_batch:
            arrived = OutputsArrived(self.execution_id, head, self.replace_batch, dropped, tail)
            self.batch = KeptOutputs(output_limit)
            self.replace_batch = False
        self.last_flush = time.monotonic()
        return arrived
