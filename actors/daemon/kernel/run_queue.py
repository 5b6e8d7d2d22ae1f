"""The Kernel's run queue: code runs one cell at a time, in request order, and an error
cancels the queue behind it. The running cell's outputs go to the Room in batches. These
are the Kernel actor's handlers for it; they act through the Kernel, which owns the
queue (``waiting``) and the current run (current_run.py)."""

from __future__ import annotations

from typing import Any

from nbstage.actors.common.output_bounds import KeptOutputs
from nbstage.actors.daemon.kernel.current_run import Run
from nbstage.protocol.daemon_actors.kernel_facts import ExecutionStatus, KernelState
from nbstage.protocol.daemon_actors.kernels import (
    ExecutionFinished,
    ExecutionsCancelled,
    ExecutionStarted,
    RunCode,
)


def run_code(kernel: Any, msg: RunCode, sender: Any) -> None:
    if kernel.state is KernelState.DEAD:
        kernel.send(
            sender,
            ExecutionsCancelled((msg.execution_id,), ExecutionStatus.ERROR, "the kernel died"),
        )
        return
    kernel.waiting.append((msg.execution_id, msg.code))
    next_run(kernel)


def next_run(kernel: Any) -> None:
    if kernel.run is not None or kernel.state is not KernelState.IDLE or not kernel.waiting:
        return
    execution_id, code = kernel.waiting.popleft()
    kernel.run = Run(
        execution_id, kernel.backend.execute(code), batch=KeptOutputs(kernel.output_limit)
    )
    kernel.state = KernelState.BUSY
    kernel.send(kernel.room, ExecutionStarted(execution_id))
    kernel.tick_soon()


def finish_or_flush(kernel: Any) -> None:
    run = kernel.run
    if run.finished():
        flush(kernel, run)
        ok = run.reply.ok
        status = ExecutionStatus.DONE if ok else ExecutionStatus.ERROR
        count = run.execution_count or run.reply.execution_count
        kernel.send(
            kernel.room, ExecutionFinished(run.execution_id, status, count, run.reply.error)
        )
        kernel.run = None
        kernel.state = KernelState.IDLE
        if not ok:
            cancel_waiting(kernel, ExecutionStatus.CANCELLED, "an earlier cell failed")
        next_run(kernel)
    elif run.flush_due():
        flush(kernel, run)


def flush(kernel: Any, run: Run) -> None:
    arrived = run.flushed(kernel.output_limit)
    if arrived is not None:
        kernel.send(kernel.room, arrived)


def cancel_waiting(kernel: Any, status: ExecutionStatus, reason: str) -> None:
    if kernel.waiting:
        ids = tuple(execution_id for execution_id, _ in kernel.waiting)
        kernel.waiting.clear()
        kernel.send(kernel.room, ExecutionsCancelled(ids, status, reason))


def abandon_run(kernel: Any, reason: str) -> None:
    """The running cell will never finish normally: report it as an error."""
    if kernel.run is not None:
        flush(kernel, kernel.run)
        kernel.send(
            kernel.room,
            ExecutionsCancelled((kernel.run.execution_id,), ExecutionStatus.ERROR, reason),
        )
        kernel.run = None


def stop_all(kernel: Any, reason: str, status: ExecutionStatus) -> None:
    """The kernel goes away: its questions are dropped, the running cell abandoned and
    the queue cancelled, in that order."""
    kernel.drop_questions(reason)
    abandon_run(kernel, reason)
    cancel_waiting(kernel, status, reason)
