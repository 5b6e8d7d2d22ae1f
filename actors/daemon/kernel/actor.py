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

The run queue (run_queue.py) and the way out (stopping.py) are handlers beside it that
act through the Kernel.
"""

from __future__ import annotations

import logging
import os
import time
from collections import deque
from datetime import timedelta
from functools import partial
from typing import Any

from thespian.actors import ActorAddress, ActorExitRequest

from nbstage.actors.common.base import NbActor, finished, wakeup
from nbstage.actors.daemon.kernel import run_queue, stopping
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
    InterruptKernelNow,
    KernelDied,
    KernelFailed,
    KernelInterrupted,
    KernelIoReady,
    KernelReady,
    KernelRestarted,
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
            RunCode: partial(run_queue.run_code, self),
            KernelQuestionAsked: self._on_question,
            InterruptKernelNow: self._on_interrupt_kernel_now,
            RestartKernelNow: self._on_restart_kernel_now,
            ShutdownKernel: partial(stopping.shutdown_kernel, self),
            ActorExitRequest: partial(stopping.actor_exit, self),
            wakeup(Tick): self._tick,
            finished(Launched): self._launched,
            finished(Relaunched): self._relaunched,
            finished(StoppedForGood): partial(stopping.stopped_for_good, self),
        }

    # --- ticks ----------------------------------------------------------------------------

    def tick_soon(self) -> None:
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
            self.tick_soon()

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
            run_queue.finish_or_flush(self)
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
            stopping.stop_if_asked(self)
            return
        self.backend, info_id = done.result
        self._tell_pid()
        if self.stop_after_launch is not None:
            stopping.stop_backend(self, self.stop_after_launch)
            return
        self._asked_info(info_id)
        self.watched = tuple(self.backend.wake_fds())
        if self.watched:
            self.send(self.edge, WatchKernelSockets(self.myAddress, self.watched))
        self.tick_soon()

    def _tell_pid(self) -> None:
        """A local kernel's pid, for the edge's last-resort teardown (a remote one has none)."""
        if self.backend.pid is not None:
            self.send(self.edge, KernelProcessStarted(self.name, self.backend.pid))

    # --- events from the kernel -----------------------------------------------------------

    def _on_event(self, event: Any) -> None:
        if isinstance(event, QuestionAnswered):
            self.carry(*self.questions.answered(event))
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
        run_queue.next_run(self)

    # --- questions about code (kernel_questions.py) ----------------------------------------

    def _on_question(self, msg: KernelQuestionAsked, sender: ActorAddress) -> None:
        ready = self.state in (KernelState.IDLE, KernelState.BUSY) and not self.backend_busy
        self.carry(*self.questions.ask(self.backend if ready else None, msg, sender))
        self.tick_soon()

    def drop_questions(self, reason: str) -> None:
        self.carry(*self.questions.drop_all(reason))

    # --- control --------------------------------------------------------------------------

    def _on_interrupt_kernel_now(self, msg: InterruptKernelNow, sender: ActorAddress) -> None:
        if self.state is KernelState.BUSY:
            self.backend.interrupt()
        self.send(sender, KernelInterrupted(msg.origin))

    def _on_restart_kernel_now(self, msg: RestartKernelNow, sender: ActorAddress) -> None:
        run_queue.stop_all(self, "the kernel was restarted", ExecutionStatus.CANCELLED)
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
            self.stop_watching()
            message = f"kernel restart failed: {done.error}"
            self.send(done.token.room, KernelFailed(ErrorCode.INTERNAL, message))
            return
        self._asked_info(done.result)
        self._tell_pid()
        self._pump_safely()
        self.tick_soon()

    def stop_watching(self) -> None:
        """Before the sockets close: an fd the loop still watches must never be reused."""
        if self.watched:
            self.send(self.edge, UnwatchKernelSockets(self.watched))
            self.watched = ()

    def _died(self) -> None:
        pid = self.backend.pid
        log.warning("kernel pid %s of room %s died", pid, self.name)
        self.state = KernelState.DEAD
        self.stop_watching()
        run_queue.stop_all(self, "the kernel died", ExecutionStatus.ERROR)
        host = getattr(self.backend, "host", None)
        name = host.name if host is not None else None
        self.send(self.room, KernelDied(pid, name, getattr(self.backend, "lost", None)))
