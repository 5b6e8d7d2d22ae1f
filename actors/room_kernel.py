"""The half of the Room actor that drives its kernel (the Room is in room.py).

It starts the Kernel child when lifetime.py says so, tears it down when keep-alive
runs out (the latch), queues executions on it and settles them into the document
and executions/, and carries interrupt and restart.
"""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import orjson
from thespian.actors import ActorAddress, ActorExitRequest, ChildActorExited

from nbstage.actors import lifetime, persistence
from nbstage.actors.executions import Execution
from nbstage.actors.kernel import Kernel
from nbstage.protocol.codec import from_wire
from nbstage.protocol.edge import EventKind, Origin, ProcessEnded
from nbstage.protocol.errors import ErrorCode, NbstageError
from nbstage.protocol.kernels import (
    ExecutionFinished,
    ExecutionsCancelled,
    ExecutionStarted,
    ExecutionStatus,
    InterruptKernelNow,
    KernelDied,
    KernelFailed,
    KernelInterrupted,
    KernelReady,
    KernelRestarted,
    KernelState,
    KernelStopped,
    OutputsArrived,
    RestartKernelNow,
    RunCode,
    ShutdownKernel,
    StartKernel,
)
from nbstage.protocol.offload import BlockingWorkDone
from nbstage.protocol.replies import (
    ExecutionReported,
    ExecutionView,
    InterruptSent,
    KernelShutDown,
    RestartCompleted,
)
from nbstage.protocol.requests import (
    ExecuteCell,
    GetExecution,
    InterruptKernel,
    RestartKernel,
    ShutdownKernelNow,
)

log = logging.getLogger("nbstage.room")

MAX_WAIT_SECS = 24 * 3600.0


@dataclass(frozen=True, slots=True)
class KeepAliveExpired:
    """Keep-alive timer payload; also accepted as a message so tests can fire it in order."""

    generation: int


@dataclass(frozen=True, slots=True)
class ExecutionRecorded:
    """Offload token: an execution's record was written to executions/."""

    execution_id: str


@dataclass(frozen=True, slots=True)
class WaitExpired:
    execution_id: str
    origin: Origin


def scoped_key(req: Any) -> str | None:
    """Idempotency keys are per request kind, so one key cannot answer another kind."""
    return None if req.key is None else f"{type(req).__name__}:{req.key}"


class KernelSide:
    """The Room's kernel side: its Kernel child's lifetime, executions, interrupt, restart.

    A mixin of the Room actor (room.py), not an actor of its own: the methods run in
    the Room's mailbox and use the Room's state (``life``, ``kernel``, ``book``, ``doc``).
    """

    def receiveMsg_KeepAliveExpired(self, msg: KeepAliveExpired, sender: ActorAddress) -> None:
        busy = bool(self.book.live_ids())
        self._carry_out(lifetime.keep_alive_expired, self.life, msg.generation, busy)

    def _carry_out(self, decide: Any, *args: Any) -> None:
        self.life, actions = decide(*args)
        for action in actions:
            match action:
                case lifetime.StartFreshKernel():
                    self._start_kernel()
                case lifetime.ScheduleTeardown(generation):
                    self.teardown_armed = generation
                    delay = timedelta(seconds=self.config.settings.keep_alive_secs)
                    self.wakeupAfter(delay, payload=KeepAliveExpired(generation))
                case lifetime.BeginTeardown():
                    self._detach_kernel("keep-alive expired")

    def _start_kernel(self) -> None:
        self.kernel = self.createActor(Kernel)
        self.kernel_state = KernelState.STARTING
        self.kernel_problem = None
        cfg = self.config
        self.send(
            self.kernel,
            StartKernel(
                cfg.notebook_id,
                cfg.runtime,
                cfg.kernel_dir,
                cfg.working_dir,
                self.edge,
                cfg.kernel_backend,
            ),
        )

    def _detach_kernel(self, reason: str) -> None:
        """The latch: from here on the old kernel is never handed out."""
        if self.kernel is not None:
            self.send(self.kernel, ShutdownKernel())
        self.kernel = None
        self.kernel_state = KernelState.NONE
        self.kernel_pid = None
        self.kernel_actor_pid = None
        self._fail_live_executions(ExecutionStatus.ERROR, f"kernel stopped: {reason}")
        self._report_status()

    def _from_current_kernel(self, sender: ActorAddress) -> bool:
        return self.kernel is not None and sender == self.kernel

    def receiveMsg_KernelReady(self, msg: KernelReady, sender: ActorAddress) -> None:
        if self._from_current_kernel(sender):
            self.kernel_state = KernelState.IDLE
            self.kernel_pid = msg.pid
            self.kernel_actor_pid = msg.actor_pid
            self._answer_restarts()
            self._report_status()

    def receiveMsg_KernelFailed(self, msg: KernelFailed, sender: ActorAddress) -> None:
        if self._from_current_kernel(sender):
            self.kernel_state = KernelState.DEAD
            self.kernel_problem = msg.message
            self._fail_restarts()
            self._fail_live_executions(ExecutionStatus.ERROR, msg.message)
            self._report_status()

    def receiveMsg_KernelDied(self, msg: KernelDied, sender: ActorAddress) -> None:
        if self._from_current_kernel(sender):
            self.kernel_state = KernelState.DEAD
            self.kernel_problem = f"The kernel (pid {msg.pid}) died."
            self._fail_restarts()
            self._event(EventKind.KERNEL_DIED, {"pid": msg.pid})
            self._report_status()

    def receiveMsg_KernelStopped(self, msg: KernelStopped, sender: ActorAddress) -> None:
        self.send(sender, ActorExitRequest())
        if msg.pid is not None:
            self.send(self.edge, ProcessEnded("kernel", self.notebook_id, msg.pid))

    def receiveMsg_ChildActorExited(self, msg: ChildActorExited, sender: ActorAddress) -> None:
        if self.kernel is not None and msg.childAddress == self.kernel:
            self.kernel = None
            self.kernel_state = KernelState.DEAD
            self.kernel_problem = "The kernel's actor exited."
            self.life = lifetime.kernel_released(self.life)
            self._fail_live_executions(ExecutionStatus.ERROR, self.kernel_problem)
            self._report_status()

    def _shutdown_kernel(self, origin: Origin, req: ShutdownKernelNow) -> None:
        pid = self.kernel_pid
        if self.kernel is None:
            raise NbstageError(ErrorCode.NO_KERNEL, "This notebook has no running kernel.")
        self._detach_kernel("shut down by the operator")
        self.life = lifetime.kernel_released(self.life)
        self.answer(origin, KernelShutDown(pid))

    # --- execution ------------------------------------------------------------------------

    def _execute(self, origin: Origin, req: ExecuteCell) -> None:
        key = scoped_key(req)
        if key is not None and key in self.applied:
            self._answer_execution(origin, self.applied[key]["execution_id"], req.wait_secs)
            return
        cell = self.doc.cell(req.cell_id)
        if cell.cell_type != "code":
            raise NbstageError(
                ErrorCode.BAD_REQUEST, f"Cell {cell.id} is {cell.cell_type}, not code."
            )
        self._require_kernel()
        record, is_new = self.book.queue(cell.id)
        self._remember(key, {"execution_id": record.execution_id})
        if is_new:
            self.doc.clear_outputs(cell.id)
            self.send(self.kernel, RunCode(record.execution_id, cell.source))
        self._answer_execution(origin, record.execution_id, req.wait_secs)

    def _require_kernel(self) -> None:
        if not self.life.has_runtime:
            raise NbstageError(ErrorCode.NO_KERNEL, "This notebook has no kernel runtime.")
        if self.kernel_state is KernelState.DEAD:
            raise NbstageError(
                ErrorCode.KERNEL_DIED,
                f"{self.kernel_problem or 'The kernel died.'} Call restart_kernel to start a "
                "fresh kernel (its variables are lost), then run the cells you need again.",
            )
        if self.kernel is None:
            self._carry_out(lifetime.kernel_wanted, lifetime.kernel_released(self.life))

    def _answer_execution(self, origin: Origin, execution_id: str, wait_secs: float) -> None:
        record = self.book.get(execution_id)
        if record is None:
            stored = persistence.read_execution(self.executions_dir, execution_id)
            if stored is None:
                raise NbstageError(
                    ErrorCode.EXECUTION_NOT_FOUND, f"No execution {execution_id} in this notebook."
                )
            self.answer(origin, ExecutionReported(from_wire(ExecutionView, stored)))
        elif record.status.finished or wait_secs <= 0:
            self.answer(origin, ExecutionReported(record.report()))
        else:
            self.book.wait(execution_id, origin)
            wait = timedelta(seconds=min(wait_secs, MAX_WAIT_SECS))
            self.wakeupAfter(wait, payload=WaitExpired(execution_id, origin))

    def _get_execution(self, origin: Origin, req: GetExecution) -> None:
        self._answer_execution(origin, req.execution_id, req.wait_secs)

    def receiveMsg_ExecutionStarted(self, msg: ExecutionStarted, sender: ActorAddress) -> None:
        if self._from_current_kernel(sender) and self.book.started(msg.execution_id):
            self.kernel_state = KernelState.BUSY

    def receiveMsg_OutputsArrived(self, msg: OutputsArrived, sender: ActorAddress) -> None:
        record = self.book.add_outputs(msg.execution_id, msg.outputs, msg.replace)
        if record is not None:
            if msg.replace:
                self.doc.clear_outputs(record.cell_id)
            self.doc.append_outputs(record.cell_id, msg.outputs)

    def receiveMsg_ExecutionFinished(self, msg: ExecutionFinished, sender: ActorAddress) -> None:
        record = self.book.finish(msg.execution_id, msg.status, msg.execution_count, msg.error)
        if self._from_current_kernel(sender):
            self.kernel_state = KernelState.IDLE
        if record is not None:
            self._settle(record)

    def receiveMsg_ExecutionsCancelled(
        self, msg: ExecutionsCancelled, sender: ActorAddress
    ) -> None:
        for execution_id in msg.execution_ids:
            record = self.book.finish(execution_id, msg.status, error=msg.reason)
            if record is not None:
                self._settle(record)

    def _fail_live_executions(self, status: ExecutionStatus, reason: str) -> None:
        for execution_id in self.book.live_ids():
            record = self.book.finish(execution_id, status, error=reason)
            if record is not None:
                self._settle(record)

    def _settle(self, record: Execution) -> None:
        """A finished execution: update the cell, keep a record on disk, answer waiters."""
        with contextlib.suppress(NbstageError):
            self.doc.set_outputs(record.cell_id, record.outputs, record.execution_count)
        view = record.to_wire()
        reported = ExecutionReported(record.report())
        for origin in self.book.release_waiters(record.execution_id):
            self.answer(origin, reported)
        self._store_execution(view)
        self._edited()

    def _store_execution(self, view: dict[str, Any]) -> None:
        self.finished_count += 1
        record = orjson.dumps(view)
        where = self.executions_dir
        keep = None
        if self.finished_count % persistence.PRUNE_EVERY == 0:
            keep = self.config.settings.execution_retention
        execution_id = view["execution_id"]

        def write() -> None:
            persistence.record_execution(where, execution_id, record, keep)

        self.offload(ExecutionRecorded(execution_id), write)

    def _execution_recorded(self, done: BlockingWorkDone) -> None:
        if not done.ok:
            log.error("could not record execution %s: %s", done.token.execution_id, done.error)

    def _interrupt(self, origin: Origin, req: InterruptKernel) -> None:
        if self.kernel is None or self.kernel_state is KernelState.DEAD:
            raise NbstageError(ErrorCode.NO_KERNEL, "There is no running kernel to interrupt.")
        self.send(self.kernel, InterruptKernelNow(origin))

    def receiveMsg_KernelInterrupted(self, msg: KernelInterrupted, sender: ActorAddress) -> None:
        self.answer(msg.origin, InterruptSent())

    def _restart(self, origin: Origin, req: RestartKernel) -> None:
        if not self.life.has_runtime:
            raise NbstageError(ErrorCode.NO_KERNEL, "This notebook has no kernel runtime.")
        self._fail_live_executions(ExecutionStatus.ERROR, "the kernel was restarted")
        self.pending_restart.append(origin)
        if self.kernel is not None and self.kernel_state is not KernelState.DEAD:
            self.kernel_state = KernelState.RESTARTING
            self.send(self.kernel, RestartKernelNow(origin))
            return
        if self.kernel is not None:
            self.send(self.kernel, ShutdownKernel())
            self.kernel = None
        self._carry_out(lifetime.kernel_wanted, lifetime.kernel_released(self.life))

    def receiveMsg_KernelRestarted(self, msg: KernelRestarted, sender: ActorAddress) -> None:
        if self._from_current_kernel(sender):
            self.kernel_state = KernelState.IDLE
            self.kernel_pid = msg.pid
            self._answer_restarts()
            self._report_status()

    def _fail_restarts(self) -> None:
        failure = NbstageError(ErrorCode.KERNEL_DIED, f"{self.kernel_problem} Try restart again.")
        for origin in self.pending_restart:
            self.fail(origin, failure)
        self.pending_restart = []

    def _answer_restarts(self) -> None:
        for origin in self.pending_restart:
            self.answer(origin, RestartCompleted(self.kernel_pid))
        self.pending_restart = []
