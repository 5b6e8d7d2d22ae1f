"""The Kernel actor: one real Jupyter kernel, its run queue and its output batches.

It never blocks on the kernel. The daemon's edge watches the kernel sockets' fds on
its event loop (WatchKernelSockets) and sends KernelIoReady when they may be
readable; the actor then drains them without waiting. Timer ticks back this up:
every 50 ms while something runs (to flush output batches), every 100 ms otherwise
(which is also how it notices the process dying). A backend without fds (the
scripted one in unit tests) is polled every 1 ms while busy. Timers cannot be
cancelled in thespian, so each tick carries a generation and stale ones are dropped.

Code runs one cell at a time, in request order. An error cancels the queue behind it.

Starting, restarting and shutting the kernel down block for tens or hundreds of
milliseconds, so they run on the edge's worker threads (``NbActor.offload``), one at
a time in this kernel's lane. While one runs the backend is in the worker's hands:
the actor does not touch it until the work reports back.
"""

from __future__ import annotations

import logging
import os
import time
from collections import deque
from datetime import timedelta
from typing import Any

from thespian.actors import ActorAddress, ActorExitRequest

from nbstage.actors.common.base import NbActor, finished, wakeup
from nbstage.actors.common.output_bounds import KeptOutputs
from nbstage.actors.daemon.kernel.backend_start import launch
from nbstage.actors.daemon.kernel.current_run import Run
from nbstage.actors.daemon.kernel.kernel_backend_events import (
    KernelWentIdle,
    QuestionAnswered,
)
from nbstage.actors.daemon.kernel.kernel_questions import KernelQuestions
from nbstage.protocol.common.errors import ErrorCode
from nbstage.protocol.common.offload import BlockingWorkDone
from nbstage.protocol.daemon_actors.edge import KernelProcessStarted
from nbstage.protocol.daemon_actors.kernel_facts import ExecutionStatus, KernelState
from nbstage.protocol.daemon_actors.kernel_followups import (
    Launched,
    Relaunched,
    StoppedForGood,
    Tick,
)
from nbstage.protocol.daemon_actors.kernel_questions import KernelQuestionAsked
from nbstage.protocol.daemon_actors.kernels import (
    ExecutionFinished,
    ExecutionsCancelled,
    ExecutionStarted,
    InterruptKernelNow,
    KernelDied,
    KernelFailed,
    KernelInterrupted,
    KernelIoReady,
    KernelReady,
    KernelRestarted,
    KernelStopped,
    RestartKernelNow,
    RunCode,
    ShutdownKernel,
    StartKernel,
    UnwatchKernelSockets,
    WatchKernelSockets,
)

log = logging.getLogger("nbstage.kernel")

POLLING_TICK = timedelta(milliseconds=1)
FLUSH_TICK = timedelta(milliseconds=50)
IDLE_TICK = timedelta(milliseconds=100)
INFO_RETRY_SECS = 0.2


class Kernel(NbActor):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.room: ActorAddress | None = None
        self.backend: Any = None
        self.state = KernelState.NONE
        self.waiting: deque[tuple[str, str]] = deque()
        self.run: Run | None = None
        self.info_ids: set[str] = set()
        """kernel_info requests sent while starting; the kernel is ready once one of them
        is followed by an iopub idle, which proves the iopub subscription is live."""
        self.info_sent_at = 0.0
        self.restart_origin: Any = None
        self.tick_generation = 0
        self.watched: tuple[int, ...] = ()
        """The socket fds the edge watches for this kernel."""
        self.name = ""
        self.output_limit = 0
        self.lane = ""
        self.backend_busy = False
        """Offloaded work holds the backend; ticks and wake-ups leave it alone meanwhile."""
        self.stop_after_launch: Any = None
        """Who asked for a shutdown while the kernel was still being launched."""
        self.questions = KernelQuestions()

    def handlers(self):
        return {
            KernelIoReady: self._on_kernel_io_ready,
            StartKernel: self._on_start_kernel,
            RunCode: self._on_run_code,
            KernelQuestionAsked: self._on_question,
            InterruptKernelNow: self._on_interrupt_kernel_now,
            RestartKernelNow: self._on_restart_kernel_now,
            ShutdownKernel: self._on_shutdown_kernel,
            ActorExitRequest: self._on_actor_exit,
            wakeup(Tick): self._tick,
            finished(Launched): self._launched,
            finished(Relaunched): self._relaunched,
            finished(StoppedForGood): self._stopped_for_good,
        }

    # --- ticks ----------------------------------------------------------------------------

    def _tick_soon(self) -> None:
        """Start a new tick chain at the pace the current state needs."""
        self.tick_generation += 1
        busy = self.state in (KernelState.STARTING, KernelState.RESTARTING) or self.run is not None
        busy_tick = FLUSH_TICK if self.watched else POLLING_TICK
        self.wakeupAfter(busy_tick if busy else IDLE_TICK, payload=Tick(self.tick_generation))

    def _tick(self, tick: Tick) -> None:
        if tick.generation != self.tick_generation:
            return
        if self.backend is None or self.state is KernelState.DEAD or self.backend_busy:
            return
        self._pump_safely()
        if self.state is not KernelState.DEAD:
            self._tick_soon()

    def _on_kernel_io_ready(self, msg: KernelIoReady, sender: ActorAddress) -> None:
        if self.backend_busy:
            return
        if self.backend is not None and self.state is not KernelState.DEAD:
            self._pump_safely()

    def _pump_safely(self) -> None:
        try:
            self._pump()
        except Exception:
            log.exception("kernel pump failed")

    def _asked_info(self, msg_id: str) -> None:
        self.info_ids.add(msg_id)
        self.info_sent_at = time.monotonic()

    def _pump(self) -> None:
        for event in self.backend.drain():
            self._on_event(event)
        starting = self.state in (KernelState.STARTING, KernelState.RESTARTING)
        if starting and time.monotonic() - self.info_sent_at > INFO_RETRY_SECS:
            self._asked_info(self.backend.request_info())
        if self.run is not None:
            self._finish_or_flush()
        if not self.backend.is_alive():
            self._died()

    # --- start ----------------------------------------------------------------------------

    def _on_start_kernel(self, msg: StartKernel, sender: ActorAddress) -> None:
        self.room = sender
        self.edge = msg.edge
        self.name = msg.notebook_id
        self.output_limit = msg.output_limit
        self.lane = f"kernel:{self.myAddress}"
        self.state = KernelState.STARTING
        self.offload(Launched(), lambda: launch(msg), self.lane)

    def _launched(self, done: BlockingWorkDone) -> None:
        if not done.ok:
            log.error("kernel start failed: %s", done.error)
            self.state = KernelState.DEAD
            message = f"kernel failed to start: {done.error}"
            self.send(self.room, KernelFailed(ErrorCode.INTERNAL, message))
            self._stop_if_asked()
            return
        self.backend, info_id = done.result
        self._tell_pid()
        if self.stop_after_launch is not None:
            self._stop_backend(self.stop_after_launch)
            return
        self._asked_info(info_id)
        self.watched = tuple(self.backend.wake_fds())
        if self.watched:
            self.send(self.edge, WatchKernelSockets(self.myAddress, self.watched))
        self._tick_soon()

    def _tell_pid(self) -> None:
        """A local kernel's pid, for the edge's last-resort teardown (a remote one has none)."""
        if self.backend.pid is not None:
            self.send(self.edge, KernelProcessStarted(self.name, self.backend.pid))

    def _stop_if_asked(self) -> None:
        if self.stop_after_launch is not None:
            self.send(self.stop_after_launch, KernelStopped(None))

    # --- events from the kernel -----------------------------------------------------------

    def _on_event(self, event: Any) -> None:
        if isinstance(event, QuestionAnswered):
            self._tell(self.questions.answered(event))
            return
        if event.parent_id in self.info_ids:
            if isinstance(event, KernelWentIdle):
                self._ready()
            return
        if self.run is not None and event.parent_id == self.run.msg_id:
            self.run.take(event, self.output_limit)

    def _ready(self) -> None:
        self.info_ids.clear()
        restarting = self.state is KernelState.RESTARTING
        self.state = KernelState.IDLE
        what = "restarted" if restarting else "ready"
        log.info("kernel pid %s of room %s %s", self.backend.pid, self.name, what)
        if restarting:
            self.send(self.room, KernelRestarted(self.restart_origin, self.backend.pid))
            self.restart_origin = None
        else:
            placement = self.backend.placement
            view = placement.view if placement is not None else None
            self.send(self.room, KernelReady(self.backend.pid, os.getpid(), view))
        self._next()

    def _finish_or_flush(self) -> None:
        run = self.run
        if run.finished():
            self._flush(run)
            ok = run.reply.ok
            status = ExecutionStatus.DONE if ok else ExecutionStatus.ERROR
            count = run.execution_count or run.reply.execution_count
            self.send(
                self.room, ExecutionFinished(run.execution_id, status, count, run.reply.error)
            )
            self.run = None
            self.state = KernelState.IDLE
            if not ok:
                self._cancel_waiting(ExecutionStatus.CANCELLED, "an earlier cell failed")
            self._next()
        elif run.flush_due():
            self._flush(run)

    def _flush(self, run: Run) -> None:
        arrived = run.flushed(self.output_limit)
        if arrived is not None:
            self.send(self.room, arrived)

    # --- running code ---------------------------------------------------------------------

    def _on_run_code(self, msg: RunCode, sender: ActorAddress) -> None:
        if self.state is KernelState.DEAD:
            self.send(
                sender,
                ExecutionsCancelled((msg.execution_id,), ExecutionStatus.ERROR, "the kernel died"),
            )
            return
        self.waiting.append((msg.execution_id, msg.code))
        self._next()

    def _next(self) -> None:
        if self.run is not None or self.state is not KernelState.IDLE or not self.waiting:
            return
        execution_id, code = self.waiting.popleft()
        self.run = Run(
            execution_id, self.backend.execute(code), batch=KeptOutputs(self.output_limit)
        )
        self.state = KernelState.BUSY
        self.send(self.room, ExecutionStarted(execution_id))
        self._tick_soon()

    def _cancel_waiting(self, status: ExecutionStatus, reason: str) -> None:
        if self.waiting:
            ids = tuple(execution_id for execution_id, _ in self.waiting)
            self.waiting.clear()
            self.send(self.room, ExecutionsCancelled(ids, status, reason))

    def _abandon_run(self, reason: str) -> None:
        """The running cell will never finish normally: report it as an error."""
        if self.run is not None:
            self._flush(self.run)
            self.send(
                self.room,
                ExecutionsCancelled((self.run.execution_id,), ExecutionStatus.ERROR, reason),
            )
            self.run = None

    # --- questions about code (kernel_questions.py) ----------------------------------------

    def _on_question(self, msg: KernelQuestionAsked, sender: ActorAddress) -> None:
        ready = self.state in (KernelState.IDLE, KernelState.BUSY) and not self.backend_busy
        self._tell(self.questions.ask(self.backend if ready else None, msg, sender))
        self._tick_soon()

    def _tell(self, reply: tuple[Any, Any] | None) -> None:
        if reply is not None:
            self.send(*reply)

    def _drop_questions(self, reason: str) -> None:
        for reply in self.questions.drop_all(reason):
            self._tell(reply)

    # --- control --------------------------------------------------------------------------

    def _on_interrupt_kernel_now(self, msg: InterruptKernelNow, sender: ActorAddress) -> None:
        if self.state is KernelState.BUSY:
            self.backend.interrupt()
        self.send(sender, KernelInterrupted(msg.origin))

    def _on_restart_kernel_now(self, msg: RestartKernelNow, sender: ActorAddress) -> None:
        self._drop_questions("the kernel was restarted")
        self._abandon_run("the kernel was restarted")
        self._cancel_waiting(ExecutionStatus.CANCELLED, "the kernel was restarted")
        self.state = KernelState.RESTARTING
        self.restart_origin = msg.origin
        if self.backend is None:
            return
        self.backend_busy = True
        self.offload(Relaunched(msg.origin, sender), self.backend.restart, self.lane)

    def _relaunched(self, done: BlockingWorkDone) -> None:
        self.backend_busy = False
        if self.state is not KernelState.RESTARTING:
            return
        if not done.ok:
            log.error("kernel restart failed: %s", done.error)
            self.state = KernelState.DEAD
            self._stop_watching()
            message = f"kernel restart failed: {done.error}"
            self.send(done.token.room, KernelFailed(ErrorCode.INTERNAL, message))
            return
        self._asked_info(done.result)
        self._tell_pid()
        self._pump_safely()
        self._tick_soon()

    def _stop_watching(self) -> None:
        """Before the sockets close: an fd the loop still watches must never be reused."""
        if self.watched:
            self.send(self.edge, UnwatchKernelSockets(self.watched))
            self.watched = ()

    def _died(self) -> None:
        pid = self.backend.pid
        log.warning("kernel pid %s of room %s died", pid, self.name)
        self.state = KernelState.DEAD
        self._stop_watching()
        self._drop_questions("the kernel died")
        self._abandon_run("the kernel died")
        self._cancel_waiting(ExecutionStatus.ERROR, "the kernel died")
        host = getattr(self.backend, "host", None)
        name = host.name if host is not None else None
        self.send(self.room, KernelDied(pid, name, getattr(self.backend, "lost", None)))

    def _on_shutdown_kernel(self, msg: ShutdownKernel, sender: ActorAddress) -> None:
        self._drop_questions("the kernel was shut down")
        self._abandon_run("the kernel was shut down")
        self._cancel_waiting(ExecutionStatus.CANCELLED, "the kernel was shut down")
        self._stop_watching()
        launching = self.backend is None and self.state is KernelState.STARTING
        self.state = KernelState.DEAD
        if launching:
            self.stop_after_launch = sender
        elif self.backend is None:
            self.send(sender, KernelStopped(None))
        else:
            self._stop_backend(sender)

    def _stop_backend(self, reply_to: Any) -> None:
        self.state = KernelState.DEAD
        self.backend_busy = True
        backend, self.backend = self.backend, None
        self.offload(StoppedForGood(backend.pid, reply_to), backend.shutdown, self.lane)

    def _stopped_for_good(self, done: BlockingWorkDone) -> None:
        if not done.ok:
            log.error("kernel shutdown failed: %s", done.error)
        else:
            log.info("kernel pid %s of room %s stopped", done.token.pid, self.name)
        self.send(done.token.room, KernelStopped(done.token.pid))

    def _on_actor_exit(self, msg: ActorExitRequest, sender: ActorAddress) -> None:
        """Last resort: the Room asks for ShutdownKernel first, so this rarely finds a kernel."""
        self._stop_watching()
        if self.backend is not None and not self.backend_busy:
            self.backend.shutdown()
