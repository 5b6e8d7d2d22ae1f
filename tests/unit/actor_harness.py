"""Drive real actors in one process (simpleSystemBase) and record what they send out.

A Recorder stands in for the socket edge and for the Daemon: it forwards
messages on the test's behalf (so replies come back to it) and keeps everything
it receives. Tests then inject messages in the exact order a race needs. Like a
real edge it carries out offloaded blocking work, but at once and in its own
mailbox, so the answer's place in the order is fixed.

A FakeDaemon plays the daemon socket behind a Recorder that stands in for a
session child's edge: it reads the daemon links the actors asked the edge to
open and the frames they asked it to write, and answers them by injecting the
messages the real edge would deliver (``DaemonFrameArrived``, ``DaemonLinkClosed``).
Nothing is answered unless the test says so, so every reply's order is the test's.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import orjson
from thespian.actors import Actor, ActorAddress, ActorSystem, WakeupMessage

from nbstage.actors.session.daemon_link import (
    CloseDaemonLink,
    DaemonFrameArrived,
    DaemonLinkClosed,
    OpenDaemonLink,
    SendToDaemon,
)
from nbstage.protocol.common.host_mail import TellAfterMail
from nbstage.protocol.common.offload import BlockingWorkDone, BlockingWorkRequested
from nbstage.protocol.common.settings import Settings
from nbstage.protocol.daemon.frames import WIRE_VERSION, decode_body
from nbstage.protocol.daemon_actors.kernels import KernelBackendKind
from nbstage.protocol.daemon_actors.room_followups import JournalAppended
from nbstage.protocol.daemon_actors.rooms import RoomSource, StartRoom


@dataclass(frozen=True)
class Forward:
    target: Any
    message: Any


@dataclass(frozen=True)
class ForwardInOrder:
    """Several Forwards sent back to back, in one turn of the Recorder.

    simpleSystemBase delivers messages first in, first out, so whatever the first one
    makes its target send is queued behind all of these: each later message reaches its
    target before the earlier ones have had any effect beyond their first receiver."""

    forwards: tuple[Forward, ...]


@dataclass(frozen=True)
class Recorded:
    """Ask the Recorder for everything it received so far."""


def run_inline(request: BlockingWorkRequested) -> BlockingWorkDone:
    """Carry out offloaded work at once; lines it reports are dropped."""
    work = (lambda: request.work(lambda line: None)) if request.reports else request.work
    try:
        return BlockingWorkDone(request.token, work())
    except Exception as exc:
        return BlockingWorkDone(request.token, error=exc)


class Recorder(Actor):
    def __init__(self) -> None:
        super().__init__()
        self.seen: list[Any] = []

    def receiveMessage(self, msg: Any, sender: ActorAddress) -> None:
        if isinstance(msg, Forward):
            self.send(msg.target, msg.message)
        elif isinstance(msg, ForwardInOrder):
            for forward in msg.forwards:
                self.send(forward.target, forward.message)
        elif isinstance(msg, BlockingWorkRequested):
            self.seen.append(msg)
            self.send(msg.reply_to, run_inline(msg))
        elif isinstance(msg, TellAfterMail):
            # what the actor host does: back to the actor, after what was sent before it
            self.send(msg.to, msg.message)
        elif isinstance(msg, Recorded):
            self.send(sender, list(self.seen))
        else:
            self.seen.append(msg)


class ActorBench:
    def __init__(self) -> None:
        self.system = ActorSystem("simpleSystemBase", transientUnique=True)
        self.recorder = self.system.createActor(Recorder)

    def close(self) -> None:
        self.system.shutdown()

    def create(self, cls: type) -> ActorAddress:
        return self.system.createActor(cls)

    def send(self, target: ActorAddress, message: Any) -> None:
        """Deliver ``message`` to ``target`` as if the Recorder sent it."""
        self.system.tell(self.recorder, Forward(target, message))

    def send_in_order(self, *sends: tuple[ActorAddress, Any]) -> None:
        """Deliver each (target, message) as one burst; see ``ForwardInOrder``."""
        forwards = tuple(Forward(target, message) for target, message in sends)
        self.system.tell(self.recorder, ForwardInOrder(forwards))

    def seen(self) -> list[Any]:
        return self.system.ask(self.recorder, Recorded(), 5)

    def seen_of(self, kind: type) -> list[Any]:
        return [m for m in self.seen() if isinstance(m, kind)]

    def fire(self, target: ActorAddress, payload: Any) -> None:
        """Deliver the wakeup ``target`` armed with ``payload`` now, as if its time had come.

        The real timer still fires later; actors guard their timers, so it finds
        nothing left to do."""
        self.send(target, WakeupMessage(timedelta(0), payload))

    def run_until(self, predicate: Callable[[], Any], timeout: float = 5.0) -> Any:
        """Let timers fire until ``predicate`` holds; fail if it never does."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = predicate()
            if value:
                return value
            self.system.listen(0.005)
        raise AssertionError("condition never held while actors ran")


def daemon_identity(pid: int, started_at: float, version: str) -> dict[str, Any]:
    """What the daemon reports about itself, on the wire (entrypoints/daemon/daemon_edge.py)."""
    return {
        "pid": pid,
        "started_at": started_at,
        "version": version,
        "incarnation": [pid, started_at],
    }


@dataclass(frozen=True)
class DaemonRequest:
    """One frame an actor asked its edge to write to the daemon, decoded."""

    link: int
    owner: ActorAddress
    """The actor the link belongs to; the daemon's answers go to it."""
    frame: dict[str, Any]

    @property
    def kind(self) -> str:
        return self.frame["type"]

    @property
    def request_id(self) -> int:
        return self.frame["id"]

    def __getitem__(self, field: str) -> Any:
        return self.frame[field]


class FakeDaemon:
    """The daemon behind ``bench.recorder``: it sees what was sent and answers on demand."""

    def __init__(self, bench: ActorBench) -> None:
        self.bench = bench
        self.answered: set[tuple[int, int]] = set()
        self.dropped: set[int] = set()
        """Links this daemon closed."""

    def opened(self) -> dict[int, ActorAddress]:
        """Every link the actors asked to open, with its owner, oldest first."""
        return {m.link: m.owner for m in self.bench.seen_of(OpenDaemonLink)}

    def closed(self) -> set[int]:
        """Links that are no longer up: closed by their owner or by this daemon."""
        return {m.link for m in self.bench.seen_of(CloseDaemonLink)} | self.dropped

    def live_links(self, owner: ActorAddress | None = None) -> list[int]:
        closed = self.closed()
        return [
            link
            for link, by in self.opened().items()
            if link not in closed and (owner is None or by == owner)
        ]

    def requests(self, kind: str | None = None) -> list[DaemonRequest]:
        """Every frame written so far (of ``kind``), in the order the actors wrote them."""
        owners = self.opened()
        found = []
        for sent in self.bench.seen_of(SendToDaemon):
            request = DaemonRequest(sent.link, owners[sent.link], decode_body(sent.frame[4:]))
            if kind is None or request.kind == kind:
                found.append(request)
        return found

    def unanswered(self, kind: str) -> list[DaemonRequest]:
        return [
            r
            for r in self.requests(kind)
            if (r.link, r.request_id) not in self.answered and r.link not in self.closed()
        ]

    def only(self, kind: str) -> DaemonRequest:
        """The one unanswered request of ``kind``; fails if there is none or several."""
        waiting = self.unanswered(kind)
        assert len(waiting) == 1, f"expected one unanswered {kind!r}, got {waiting}"
        return waiting[0]

    def _deliver(self, request: DaemonRequest, payload: dict[str, Any]) -> None:
        body = orjson.dumps({"v": WIRE_VERSION, "id": request.request_id, **payload})
        self.bench.send(request.owner, DaemonFrameArrived(request.link, body))

    def answer(self, request: DaemonRequest, result: dict[str, Any]) -> None:
        self.answered.add((request.link, request.request_id))
        self._deliver(request, {"type": "result", "result": result})

    def refuse(self, request: DaemonRequest, code: str, message: str) -> None:
        self.answered.add((request.link, request.request_id))
        self._deliver(request, {"type": "error", "error": {"code": code, "message": message}})

    def heartbeat(self, watch: DaemonRequest, identity: dict[str, Any]) -> None:
        """One heartbeat on a watch subscription (it stays open, so it is never answered)."""
        self._deliver(watch, {"type": "heartbeat", "identity": identity})

    def close(self, link: int, reason: str = "the daemon closed the connection") -> None:
        """The daemon end of ``link`` went away; its owner hears it as the edge reports it."""
        self.dropped.add(link)
        self.bench.send(self.opened()[link], DaemonLinkClosed(link, reason))


@dataclass(frozen=True)
class HoldAppends:
    """Tell a HoldingRecorder: from now on the offloaded work whose token is a ``kind``
    (by default, the journal appends) waits until ``ReleaseAppends``."""

    kind: type = JournalAppended


@dataclass(frozen=True)
class ReleaseAppends:
    """Carry out the held appends, in order, and hold no more."""


class HoldingRecorder(Recorder):
    def __init__(self) -> None:
        super().__init__()
        self.holding: type | None = None
        self.held: list[BlockingWorkRequested] = []

    def receiveMessage(self, msg: Any, sender: ActorAddress) -> None:
        if isinstance(msg, HoldAppends):
            self.holding = msg.kind
        elif isinstance(msg, ReleaseAppends):
            self.holding = None
            held, self.held = self.held, []
            for request in held:
                self.send(request.reply_to, run_inline(request))
        elif (
            isinstance(msg, BlockingWorkRequested)
            and self.holding is not None
            and isinstance(msg.token, self.holding)
        ):
            self.seen.append(msg)
            self.held.append(msg)
        else:
            super().receiveMessage(msg, sender)


def held_work(bench: ActorBench, kind: type) -> list[BlockingWorkRequested]:
    return [m for m in bench.seen_of(BlockingWorkRequested) if isinstance(m.token, kind)]


def file_room_start(
    notebook_id: str,
    path: Path,
    settings: Settings,
    edge: ActorAddress,
    binding_pending: bool = False,
) -> StartRoom:
    """StartRoom for a Room on the notebook file ``path``, with a scripted kernel and its
    state beside the file."""
    return StartRoom(
        notebook_id=notebook_id,
        source=RoomSource.FILE,
        path=str(path),
        ephemeral=False,
        kernelspec=None,
        working_dir=None,
        state_dir=str(path.parent / "state"),
        kernel_dir=str(path.parent / "kernels"),
        settings=settings,
        edge=edge,
        binding_pending=binding_pending,
        kernel_backend=KernelBackendKind.SCRIPTED,
    )
