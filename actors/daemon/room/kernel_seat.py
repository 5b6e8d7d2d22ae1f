"""The Room's kernel seat: its Kernel child, the latch, the restarts waiting for it, and
what a kernel that failed, died or exited means.

It keeps the state and decides (lifetime.py decides when the kernel starts and stops;
execution_calls.py, which the seat holds, keeps the runs); what it asks for comes back
as actions. The Room creates the Kernel actor (``StartKernelChild``), lets it go
(``DetachKernel``) and writes outputs into the document: the seat never touches it.
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Any

from nbstage.actors.daemon.environment import dependencies, projects
from nbstage.actors.daemon.kernel import placement
from nbstage.actors.daemon.room import lifetime
from nbstage.actors.daemon.room.actions import (
    Action,
    Answer,
    DetachKernel,
    EndChild,
    Fail,
    ProjectReported,
    ReadKernelspecs,
    ReportStatus,
    Send,
    SettleClose,
    StartKernelChild,
    Wake,
)
from nbstage.actors.daemon.room.environment import EnvironmentSeat
from nbstage.actors.daemon.room.execution_calls import ExecutionCalls
from nbstage.actors.daemon.room.host_slot import HostSlot
from nbstage.protocol.common.errors import ErrorCode, NbstageError
from nbstage.protocol.daemon.replies import KernelShutDown, RestartCompleted
from nbstage.protocol.daemon.requests import InterruptKernel, RestartKernel, ShutdownKernelNow
from nbstage.protocol.daemon_actors.edge import (
    EventKind,
    KernelProcessEnded,
    Origin,
    RoomEventOccurred,
)
from nbstage.protocol.daemon_actors.host_grants import KernelHostReleased, KernelPlaced
from nbstage.protocol.daemon_actors.kernel_facts import ExecutionStatus, KernelState
from nbstage.protocol.daemon_actors.kernels import (
    ExecutionFinished,
    ExecutionStarted,
    InterruptKernelNow,
    KernelDied,
    KernelFailed,
    KernelReady,
    KernelRestarted,
    KernelStopped,
    RestartKernelNow,
    ShutdownKernel,
    StartKernel,
)
from nbstage.protocol.daemon_actors.room_followups import KeepAliveExpired
from nbstage.protocol.daemon_actors.rooms import HostsSeen, StartRoom


class KernelSeat:
    """Shares the environment part with the Room: what runs where, and who waits on it."""

    def __init__(self, env: EnvironmentSeat) -> None:
        self.env = env
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
        self.runs = ExecutionCalls()
        self.stopping: list[Any] = []
        """Kernel children told to shut down that have not said they stopped yet."""
        self.hosts_seen = HostsSeen()
        """The Daemon's latest word on the kernel hosts' health."""
        self.daemon: Any = None
        self.slots = HostSlot()

    def start(self, config: StartRoom, has_runtime: bool, daemon: Any = None) -> None:
        self.config = config
        self.daemon = daemon
        self.hosts_seen = config.hosts_seen
        self.runs.start(config)
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

    def hosts_told(self, seen: HostsSeen, sender: Any = None) -> list[Action]:
        """The Daemon's new word on the kernel hosts: a restart reads which are lost."""
        self.hosts_seen = seen
        return []

    def keep_alive_expired(self, msg: KeepAliveExpired, sender: Any = None) -> list[Action]:
        busy = bool(self.runs.book.live_ids())
        return self.decide(lifetime.keep_alive_expired, self.life, msg.generation, busy)

    def peer_joined(self) -> list[Action]:
        return self.decide(lifetime.peer_joined, self.life)

    def peer_left(self) -> list[Action]:
        return self.decide(lifetime.peer_left, self.life)

    def want(self) -> list[Action]:
        return self.decide(lifetime.kernel_wanted, lifetime.kernel_released(self.life))

    def release(self) -> None:
        self.life = lifetime.kernel_released(self.life)

    def seated(self, address: Any) -> None:
        self.address = address
        self.state = KernelState.STARTING
        self.problem = None

    def place(self, path: str | None, metadata: dict) -> list[Action]:
        """Start the new Kernel child: here at once, or, for a notebook that wishes for a
        kernel host, where the Daemon grants (``placed``)."""
        wish, hosts = placement.wished_host(metadata), self.config.settings.kernel_hosts
        if wish is None or not hosts or self.daemon is None:
            here = _placed_here(placement.place_kernel(hosts, {}, wish))
            return [Send(self.address, self.start_message(path, metadata, here))]
        ask = self.slots.ask(self.config.notebook_id, wish)
        return [Send(self.daemon, ask)]

    def placed(self, msg: KernelPlaced, path: str | None, metadata: dict) -> list[Action]:
        """The Daemon's grant: the kernel waiting for it starts there. A grant nobody waits
        for any more (the kernel was let go meanwhile) is handed back."""
        if self.address is None or not self.slots.granted(msg):
            return self._release(msg.ticket) if msg.host is not None else []
        return [Send(self.address, self.start_message(path, metadata, msg))]

    def _release(self, ticket: int | None) -> list[Action]:
        if ticket is None or self.daemon is None:
            return []
        return [Send(self.daemon, KernelHostReleased(self.config.notebook_id, ticket))]

    def start_message(self, path: str | None, metadata: dict, granted: KernelPlaced) -> StartKernel:
        """What the new Kernel child is told: where to run, in which environment."""
        cfg, env = self.config, self.env
        cwd = os.path.dirname(path) if path is not None else cfg.working_dir
        deps = dependencies.read_dependencies(metadata)
        refused = granted.refused or placement.refuse_inline_dependencies(granted.host, deps)
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
            granted.host,
            refused,
        )

    def ready(self, msg: KernelReady, sender: Any) -> list[Action]:
        if not self.is_current(sender):
            return []
        self.up(msg.pid, msg.actor_pid)
        self.env.running = msg.environment
        return [ProjectReported(), *self.answer_restarts(), ReportStatus()]

    def up(self, pid: int, actor_pid: int | None = None) -> None:
        self.state = KernelState.IDLE
        self.pid = pid
        if actor_pid is not None:
            self.actor_pid = actor_pid

    def restarted(self, msg: KernelRestarted, sender: Any) -> list[Action]:
        if not self.is_current(sender):
            return []
        self.up(msg.pid)
        return [*self.answer_restarts(), ReportStatus()]

    def answer_restarts(self) -> list[Action]:
        """The kernel is up: restarts, and dependency changes that restarted it, are done;
        a kernel that came up on another host than the last one says where it moved."""
        env, moved = self.env, self.slots.take_move() or (None, None)
        done = RestartCompleted(self.pid, moved_from=moved[0], moved_to=moved[1])
        todo: list[Action] = [Answer(o, done) for o in self.pending_restart]
        todo += [Answer(o, replace(reply, environment=env.running)) for o, reply in env.pending]
        self.pending_restart, env.pending = [], []
        return todo

    def fail_restarts(self, failure: NbstageError | None = None) -> list[Action]:
        failure = failure or self.restart_failure()
        waiting = self.pending_restart + [origin for origin, _ in self.env.pending]
        self.pending_restart, self.env.pending = [], []
        return [Fail(origin, failure) for origin in waiting]

    def is_current(self, sender: Any) -> bool:
        return self.address is not None and sender == self.address

    def stop_child(self) -> list[Action]:
        """Tell the current child to shut down; the close waits until it says it stopped."""
        released = self._release(self.slots.let_go())
        if self.address is None:
            return released
        stop = Send(self.address, ShutdownKernel())
        self.stopping.append(self.address)
        self.address = None
        return [stop, *released]

    def detach(self, reason: str) -> list[Action]:
        """The latch: from here on the old kernel is never handed out; its runs end."""
        stop = self.stop_child()
        self.state = KernelState.NONE
        self.pid = None
        self.actor_pid = None
        self.env.running = None
        said = (
            f'kernel stopped: {reason}; run the cell again with execute_cell(cell_id="{{cell_id}}")'
        )
        return [*stop, *self.runs.fail_live(ExecutionStatus.ERROR, said), ReportStatus()]

    def gone(self, address: Any) -> None:
        self.stopping = [kernel for kernel in self.stopping if kernel != address]

    def stopped(self, msg: KernelStopped, sender: Any) -> list[Action]:
        """A child told to shut down did: its actor ends, its process is reported gone."""
        self.gone(sender)
        if msg.pid is None:
            return [EndChild(sender), SettleClose()]
        ended = Send(self.config.edge, KernelProcessEnded(self.config.notebook_id, msg.pid))
        return [EndChild(sender), ended, SettleClose()]

    def exited(self, msg: Any, sender: Any) -> list[Action]:
        """thespian's ChildActorExited: a child's actor is gone, let go or not."""
        self.gone(msg.childAddress)
        return [SettleClose(), *self.actor_exited(msg.childAddress)]

    def ended(self, problem: str) -> None:
        self.state = KernelState.DEAD
        self.problem = problem

    def failed(self, msg: KernelFailed, sender: Any) -> list[Action]:
        """The current kernel could not start: restarts and runs waiting on it fail."""
        if not self.is_current(sender):
            return []
        self.ended(msg.message)
        self.slots.ended_badly()
        restarts = [*self.fail_restarts(), *self._release(self.slots.let_go())]
        return [*restarts, *self.runs.fail_live(ExecutionStatus.ERROR, msg.message), ReportStatus()]

    def died(self, msg: KernelDied, sender: Any) -> list[Action]:
        if not self.is_current(sender):
            return []
        where = f"on kernel host {msg.host!r}" if msg.host else f"(pid {msg.pid})"
        self.ended(f"The kernel {where} died{': ' + msg.reason if msg.reason else ''}.")
        detail = {"pid": msg.pid, "host": msg.host} if msg.host else {"pid": msg.pid}
        event = RoomEventOccurred(EventKind.KERNEL_DIED, self.config.notebook_id, detail)
        self.slots.ended_badly()
        released = self._release(self.slots.let_go())
        return [*self.fail_restarts(), Send(self.config.edge, event), *released, ReportStatus()]

    def actor_exited(self, child: Any) -> list[Action]:
        """The current Kernel actor exited without being let go: its runs end with it."""
        if not self.is_current(child):
            return []
        self.address = None
        self.ended("The kernel's actor exited.")
        self.release()
        released = self._release(self.slots.let_go())
        return [
            *self.runs.fail_live(ExecutionStatus.ERROR, self.problem),
            *released,
            ReportStatus(),
        ]

    def require(self) -> list[Action]:
        """Refuse a call that needs a kernel which cannot come; start one if none is up."""
        self.env.refuse_without_kernelspec(self.life.has_runtime)
        if not self.life.has_runtime:
            raise NbstageError(ErrorCode.NO_KERNEL, "This notebook has no kernel runtime.")
        if self.state is KernelState.DEAD:
            raise NbstageError(
                ErrorCode.KERNEL_DIED,
                f"{self.problem or 'The kernel died.'} Call restart_kernel to start a "
                "fresh kernel (its variables are lost), then run the cells you need again.",
            )
        return self.want() if self.address is None else []

    def restart(self, origin: Origin, req: RestartKernel | None = None) -> list[Action]:
        """Restart in place, or (a kernel placed afresh, or none running) let the old one go
        and start a new one; either way its runs end and ``origin`` waits for the kernel.
        A notebook that fit no kernelspec reads them again first: one may be new."""
        if self.env.kernel_refused is not None:
            return [ReadKernelspecs(origin)]
        self.env.refuse_without_kernelspec(self.life.has_runtime)
        if not self.life.has_runtime:
            raise NbstageError(ErrorCode.NO_KERNEL, "This notebook has no kernel runtime.")
        todo = self.runs.fail_live(ExecutionStatus.ERROR, "the kernel was restarted")
        self.pending_restart.append(origin)
        if self.address is not None and self.state is not KernelState.DEAD:
            if not projects.placed_afresh(self.env.running) and not self._on_lost_host():
                self.state = KernelState.RESTARTING
                return [*todo, Send(self.address, RestartKernelNow(origin))]
            todo += self.detach("the kernel was restarted")
        return [*todo, *self.stop_child(), *self.want()]

    def _on_lost_host(self) -> bool:
        """The kernel runs on a host the Daemon takes as lost: a restart there would wait
        out its bounds and fail, so a fresh kernel is placed instead."""
        host = self.env.running.host if self.env.running is not None else None
        if host is None or host not in self.hosts_seen.lost:
            return False
        self.slots.ended_badly()
        return True

    def interrupt(self, origin: Origin, req: InterruptKernel) -> list[Action]:
        if self.address is None or self.state is KernelState.DEAD:
            raise NbstageError(ErrorCode.NO_KERNEL, "There is no running kernel to interrupt.")
        return [Send(self.address, InterruptKernelNow(origin))]

    def shut_down(self, origin: Origin, req: ShutdownKernelNow) -> list[Action]:
        """The operator's shutdown: the kernel goes, and comes back only when wanted."""
        pid = self.pid
        if self.address is None:
            raise NbstageError(ErrorCode.NO_KERNEL, "This notebook has no running kernel.")
        todo = self.detach("shut down by the operator")
        self.release()
        return [*todo, Answer(origin, KernelShutDown(pid))]

    def restart_failure(self) -> NbstageError:
        return NbstageError(ErrorCode.KERNEL_DIED, f"{self.problem} Try restart again.")

    def execution_started(self, msg: ExecutionStarted, sender: Any) -> list[Action]:
        """The current kernel is busy with a run (execution_calls.py keeps the runs)."""
        if self.is_current(sender) and self.runs.book.started(msg.execution_id):
            self.state = KernelState.BUSY
        return []

    def execution_finished(self, msg: ExecutionFinished, sender: Any) -> list[Action]:
        todo = self.runs.finish(msg.execution_id, msg.status, msg.execution_count, msg.error)
        if self.is_current(sender):
            self.state = KernelState.IDLE
        return todo


def _placed_here(decided: placement.Placed | placement.Unplaceable) -> KernelPlaced:
    """A placement the room made itself (no wish, or no hosts), as the Daemon's grant reads."""
    if isinstance(decided, placement.Unplaceable):
        return KernelPlaced(0, None, refused=decided.reason)
    return KernelPlaced(0, decided.host)
