"""The Room's kernel seat: its Kernel child, the latch, the executions queued on it,
their waits and records, and the restarts waiting for it.

It keeps the state and decides (lifetime.py decides when the kernel starts and stops,
executions.py keeps the book); what it asks for comes back as actions. The Room
creates the Kernel actor (``StartKernelChild``), lets it go (``DetachKernel``) and writes
outputs into the document: the seat never touches the document.
"""

from __future__ import annotations

import logging
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson

from nbstage.actors.daemon.environment import dependencies, projects
from nbstage.actors.daemon.notebook import persistence
from nbstage.actors.daemon.room import executions, lifetime
from nbstage.actors.daemon.room.actions import (
    Action,
    Answer,
    DetachKernel,
    Edited,
    Fail,
    Offload,
    ReportStatus,
    Send,
    SetOutputs,
    StartKernelChild,
    Wake,
)
from nbstage.actors.daemon.room.executions import Execution, ExecutionBook
from nbstage.protocol.common.codec import from_wire
from nbstage.protocol.common.errors import ErrorCode, NbstageError
from nbstage.protocol.common.offload import BlockingWorkDone
from nbstage.protocol.daemon.replies import (
    ExecutionReported,
    ExecutionView,
    KernelShutDown,
    RestartCompleted,
)
from nbstage.protocol.daemon_actors.edge import EventKind, Origin, RoomEventOccurred
from nbstage.protocol.daemon_actors.kernels import (
    ExecutionStatus,
    InterruptKernelNow,
    KernelState,
    OutputsArrived,
    RestartKernelNow,
    RunCode,
    ShutdownKernel,
    StartKernel,
)
from nbstage.protocol.daemon_actors.room_followups import (
    ExecutionRecorded,
    KeepAliveExpired,
    LiveExecutionRecorded,
    StoredExecutionRead,
    WaitExpired,
)
from nbstage.protocol.daemon_actors.rooms import StartRoom

log = logging.getLogger("nbstage.room")

MAX_WAIT_SECS = 24 * 3600.0


class KernelSeat:
    def __init__(self) -> None:
        self.config: StartRoom | None = None
        self.life = lifetime.Lifetime(has_runtime=False)
        self.address: Any = None
        """The current Kernel child; None once the latch let it go."""
        self.state = KernelState.NONE
        self.pid: int | None = None
        self.actor_pid: int | None = None
        self.teardown_armed: int | None = None
        """Generation of the last keep-alive timer armed, shown by admin."""
        self.problem: str | None = None
        self.pending_restart: list[Origin] = []
        self.book = ExecutionBook()
        self.finished_count = 0
        self.stopping: list[Any] = []
        """Kernel children told to shut down that have not said they stopped yet."""

    def start(self, config: StartRoom, has_runtime: bool) -> None:
        self.config = config
        self.book.output_limit = config.settings.output_limit_bytes
        self.life = lifetime.Lifetime(has_runtime=has_runtime)

    # --- the child and the latch ----------------------------------------------------------

    def decide(self, decide: Any, *args: Any) -> list[Action]:
        """Carry a lifetime.py decision into this seat's state and the Room's actions."""
        self.life, decided = decide(*args)
        actions: list[Action] = []
        for action in decided:
            match action:
                case lifetime.StartFreshKernel():
                    actions.append(StartKernelChild())
                case lifetime.ScheduleTeardown(generation):
                    self.teardown_armed = generation
                    after = self.config.settings.keep_alive_secs
                    actions.append(Wake(after, KeepAliveExpired(generation)))
                case lifetime.BeginTeardown():
                    actions.append(DetachKernel("keep-alive expired"))
        return actions

    def want(self) -> list[Action]:
        return self.decide(lifetime.kernel_wanted, lifetime.kernel_released(self.life))

    def release(self) -> None:
        self.life = lifetime.kernel_released(self.life)

    def seated(self, address: Any) -> None:
        self.address = address
        self.state = KernelState.STARTING
        self.problem = None

    def start_message(self, path: str | None, metadata: dict, env: Any) -> StartKernel:
        """What the new Kernel child is told: where to run, in which environment."""
        cfg = self.config
        cwd = os.path.dirname(path) if path is not None else cfg.working_dir
        deps = dependencies.read_dependencies(metadata)
        return StartKernel(
            cfg.notebook_id,
            env.kernel_name,
            cfg.kernel_dir,
            cwd,
            cfg.edge,
            cfg.kernel_backend,
            cfg.state_dir,
            dependencies.wanted_environment(deps, env.trusted, cwd),
            cfg.settings.output_limit_bytes,
        )

    def up(self, pid: int, actor_pid: int | None = None) -> None:
        self.state = KernelState.IDLE
        self.pid = pid
        if actor_pid is not None:
            self.actor_pid = actor_pid

    def answer_restarts(self, env: Any) -> list[Action]:
        """The kernel is up: restarts, and dependency changes that restarted it, are done."""
        todo: list[Action] = [Answer(o, RestartCompleted(self.pid)) for o in self.pending_restart]
        todo += [Answer(o, replace(reply, environment=env.running)) for o, reply in env.pending]
        self.pending_restart, env.pending = [], []
        return todo

    def fail_restarts(self, env: Any, failure: NbstageError | None = None) -> list[Action]:
        failure = failure or self.restart_failure()
        waiting = self.pending_restart + [origin for origin, _ in env.pending]
        self.pending_restart, env.pending = [], []
        return [Fail(origin, failure) for origin in waiting]

    def is_current(self, sender: Any) -> bool:
        return self.address is not None and sender == self.address

    def stop_child(self) -> list[Action]:
        """Tell the current child to shut down; the close waits until it says it stopped."""
        if self.address is None:
            return []
        stop = Send(self.address, ShutdownKernel())
        self.stopping.append(self.address)
        self.address = None
        return [stop]

    def detach(self, reason: str, env: Any) -> list[Action]:
        """The latch: from here on the old kernel is never handed out; its runs end."""
        stop = self.stop_child()
        self.state = KernelState.NONE
        self.pid = None
        self.actor_pid = None
        env.running = None
        said = (
            f'kernel stopped: {reason}; run the cell again with execute_cell(cell_id="{{cell_id}}")'
        )
        return [*stop, *self.fail_live(ExecutionStatus.ERROR, said), ReportStatus()]

    def gone(self, address: Any) -> None:
        self.stopping = [kernel for kernel in self.stopping if kernel != address]

    def ended(self, problem: str) -> None:
        self.state = KernelState.DEAD
        self.problem = problem

    def failed(self, sender: Any, problem: str, env: Any) -> list[Action]:
        """The current kernel could not start: restarts and runs waiting on it fail."""
        if not self.is_current(sender):
            return []
        self.ended(problem)
        restarts = self.fail_restarts(env)
        return [*restarts, *self.fail_live(ExecutionStatus.ERROR, problem), ReportStatus()]

    def died(self, sender: Any, pid: int, env: Any) -> list[Action]:
        if not self.is_current(sender):
            return []
        self.ended(f"The kernel (pid {pid}) died.")
        event = RoomEventOccurred(EventKind.KERNEL_DIED, self.config.notebook_id, {"pid": pid})
        return [*self.fail_restarts(env), Send(self.config.edge, event), ReportStatus()]

    def actor_exited(self, child: Any) -> list[Action]:
        """The current Kernel actor exited without being let go: its runs end with it."""
        if not self.is_current(child):
            return []
        self.address = None
        self.ended("The kernel's actor exited.")
        self.release()
        return [*self.fail_live(ExecutionStatus.ERROR, self.problem), ReportStatus()]

    def require(self) -> list[Action]:
        """Refuse a call that needs a kernel which cannot come; start one if none is up."""
        if not self.life.has_runtime:
            raise NbstageError(ErrorCode.NO_KERNEL, "This notebook has no kernel runtime.")
        if self.state is KernelState.DEAD:
            raise NbstageError(
                ErrorCode.KERNEL_DIED,
                f"{self.problem or 'The kernel died.'} Call restart_kernel to start a "
                "fresh kernel (its variables are lost), then run the cells you need again.",
            )
        return self.want() if self.address is None else []

    def restart(self, origin: Origin, env: Any) -> list[Action]:
        """Restart in place, or (a kernel placed afresh, or none running) let the old one go
        and start a new one; either way its runs end and ``origin`` waits for the kernel."""
        env.refuse_without_kernelspec(self.life.has_runtime)
        if not self.life.has_runtime:
            raise NbstageError(ErrorCode.NO_KERNEL, "This notebook has no kernel runtime.")
        todo = self.fail_live(ExecutionStatus.ERROR, "the kernel was restarted")
        self.pending_restart.append(origin)
        if self.address is not None and self.state is not KernelState.DEAD:
            if not projects.placed_afresh(env.running):
                self.state = KernelState.RESTARTING
                return [*todo, Send(self.address, RestartKernelNow(origin))]
            todo += self.detach("the kernel was restarted", env)
        return [*todo, *self.stop_child(), *self.want()]

    def interrupt(self, origin: Origin) -> Send:
        if self.address is None or self.state is KernelState.DEAD:
            raise NbstageError(ErrorCode.NO_KERNEL, "There is no running kernel to interrupt.")
        return Send(self.address, InterruptKernelNow(origin))

    def shut_down(self, origin: Origin, env: Any) -> list[Action]:
        """The operator's shutdown: the kernel goes, and comes back only when wanted."""
        pid = self.pid
        if self.address is None:
            raise NbstageError(ErrorCode.NO_KERNEL, "This notebook has no running kernel.")
        todo = self.detach("shut down by the operator", env)
        self.release()
        return [*todo, Answer(origin, KernelShutDown(pid))]

    def restart_failure(self) -> NbstageError:
        return NbstageError(ErrorCode.KERNEL_DIED, f"{self.problem} Try restart again.")

    # --- executions -----------------------------------------------------------------------

    def answer_execution(self, origin: Origin, execution_id: str, wait_secs: float) -> list:
        record = self.book.get(execution_id)
        if record is None:
            where, limit = self.executions_dir, self.config.settings.max_file_bytes
            read = lambda: persistence.read_execution(where, execution_id, limit)  # noqa: E731
            return [Offload(StoredExecutionRead(execution_id, origin), read)]
        if record.status.finished:
            return [Answer(origin, ExecutionReported(record.report()))]
        if wait_secs <= 0:
            return [self.live_record(origin, record)]
        self.book.wait(execution_id, origin)
        return [Wake(min(wait_secs, MAX_WAIT_SECS), WaitExpired(execution_id, origin))]

    def wait_expired(self, expired: WaitExpired) -> list[Action]:
        if not self.book.release_waiter(expired.execution_id, expired.origin):
            return []
        return [self.live_record(expired.origin, self.book.get(expired.execution_id))]

    def live_record(self, origin: Origin, record: Execution) -> Offload:
        """The id of an execution that has not finished leaves the daemon: its live record
        lands first, so that a daemon killed from then on has it reported lost (issue 11 §10).
        An execution answered only once finished never has a live record written."""
        live = orjson.dumps(executions.live_record(record, self.config.run))
        return self._write(record.execution_id, live, answer_to=origin)

    def live_recorded(self, done: BlockingWorkDone) -> list:
        execution_id, origin = done.token.execution_id, done.token.origin
        if not done.ok:
            log.error("could not record execution %s: %s", execution_id, done.error)
        record = self.book.get(execution_id)
        if record is None:
            return self.answer_execution(origin, execution_id, 0)
        return [Answer(origin, ExecutionReported(record.report()))]

    def stored_read(self, done: BlockingWorkDone) -> Action:
        execution_id, origin = done.token.execution_id, done.token.origin
        cfg = self.config
        found = executions.stored_execution(done.result if done.ok else None, cfg.run, cfg.earlier)
        match found:
            case executions.StoredView(view):
                return Answer(origin, ExecutionReported(from_wire(ExecutionView, view)))
            case executions.LostWithDaemon(at, cell_id):
                lost = executions.lost_message(execution_id, at, cell_id)
                return Fail(origin, NbstageError(ErrorCode.EXECUTION_LOST, lost))
        missing = f"No execution {execution_id} in this notebook."
        return Fail(origin, NbstageError(ErrorCode.EXECUTION_NOT_FOUND, missing))

    def run(self, cell_id: str, source: str) -> tuple[str, list[Action]]:
        """Queue a run of the cell (or join the one queued): its id, and what starts it."""
        record, is_new = self.book.queue(cell_id)
        if not is_new:
            return record.execution_id, []
        run = Send(self.address, RunCode(record.execution_id, source))
        return record.execution_id, [SetOutputs(cell_id, [], None), run]

    def outputs(self, msg: OutputsArrived) -> list[Action]:
        book = self.book
        record = book.add_outputs(msg.execution_id, msg.outputs, msg.replace, msg.dropped, msg.tail)
        return [] if record is None else [SetOutputs(record.cell_id, record.outputs, None)]

    def finish(
        self,
        execution_id: str,
        status: ExecutionStatus,
        count: int | None = None,
        error: Any = None,
    ) -> list[Action]:
        record = self.book.finish(execution_id, status, count, error)
        return [] if record is None else self.settled(record)

    def fail_live(self, status: ExecutionStatus, reason: str) -> list[Action]:
        """End every live execution; ``{cell_id}`` in ``reason`` names each one's cell."""
        ended: list[Action] = []
        for execution_id in self.book.live_ids():
            live = self.book.get(execution_id)
            said = reason.replace("{cell_id}", live.cell_id) if live is not None else reason
            ended += self.finish(execution_id, status, error=said)
        return ended

    def settled(self, record: Execution) -> list[Action]:
        """A finished execution: write it into the cell, answer its waiters, keep its record
        on disk."""
        reported = ExecutionReported(record.report())
        actions: list[Action] = [SetOutputs(record.cell_id, record.outputs, record.execution_count)]
        for origin in self.book.release_waiters(record.execution_id):
            actions.append(Answer(origin, reported))
        self.finished_count += 1
        keep = None
        if self.finished_count % persistence.PRUNE_EVERY == 0:
            keep = self.config.settings.execution_retention
        view = record.to_wire()
        actions.append(self._write(view["execution_id"], orjson.dumps(view), keep))
        actions.append(Edited())
        return actions

    @property
    def executions_dir(self) -> Path:
        return Path(self.config.state_dir) / "executions"

    def _write(
        self, execution_id: str, record: bytes, keep: int | None = None, answer_to: Any = None
    ) -> Offload:
        """The live record and the finished one share a lane, so the finished one lands last."""
        where = self.executions_dir

        def write() -> None:
            persistence.record_execution(where, execution_id, record, keep)

        token = (
            ExecutionRecorded(execution_id)
            if answer_to is None
            else LiveExecutionRecorded(execution_id, answer_to)
        )
        return Offload(token, write, f"execution:{execution_id}")
