"""NbActor's one dispatch table (actors/common/base.py): built once, keyed by message type, with
envelopes keyed by what they carry; a message it does not name is unrecognized, whatever
methods the actor has."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from thespian.actors import ActorExitRequest, WakeupMessage

from nbstage.actors.common.base import NbActor, finished, progress, request, wakeup
from nbstage.protocol.common.errors import ErrorCode, NbstageError
from nbstage.protocol.common.offload import BlockingWorkDone, WorkProgressed
from nbstage.protocol.daemon_actors.edge import ClientRequest, Origin


@dataclass(frozen=True)
class Ping:
    n: int


@dataclass(frozen=True)
class Named:
    n: int


@dataclass(frozen=True)
class Token:
    n: int


class Probe(NbActor):
    def __init__(self) -> None:
        super().__init__()
        self.seen: list[tuple[str, Any]] = []
        self.tables = 0

    def handlers(self):
        self.tables += 1
        return {
            Ping: lambda msg, sender: self.seen.append(("ping", msg.n)),
            request(Ping): lambda origin, body: self.seen.append(("request", body.n)),
            finished(Token): lambda done: self.seen.append(("finished", done.result)),
            progress(Token): lambda token, line: self.seen.append(("progress", line)),
            wakeup(Token): lambda payload: self.seen.append(("wakeup", payload.n)),
        }

    def receiveMsg_Named(self, msg: Named, sender: Any) -> None:
        self.seen.append(("named by method", msg.n))

    def receiveUnrecognizedMessage(self, msg: Any, sender: Any) -> None:
        self.seen.append(("unrecognized", msg.n))


def test_each_kind_reaches_its_handler_and_the_table_is_built_once() -> None:
    probe = Probe()
    for msg in (
        Ping(1),
        ClientRequest(Origin(1, 1), Ping(2)),
        BlockingWorkDone(Token(0), "done"),
        WorkProgressed(Token(0), "line"),
        WakeupMessage(0, payload=Token(3)),
        Named(4),
    ):
        probe.receiveMessage(msg, None)
    assert probe.seen == [
        ("ping", 1),
        ("request", 2),
        ("finished", "done"),
        ("progress", "line"),
        ("wakeup", 3),
        ("unrecognized", 4),
    ]
    assert probe.tables == 1


def test_a_timer_the_table_does_not_name_is_dropped() -> None:
    probe = Probe()
    probe.receiveMessage(WakeupMessage(0, payload=Ping(5)), None)
    assert probe.seen == []


class Holding(Probe):
    """An actor whose own ClientRequest row holds a request back, then serves it."""

    def __init__(self) -> None:
        super().__init__()
        self.held: list[Any] = []
        self.exits = 0

    def handlers(self):
        return {
            **super().handlers(),
            ClientRequest: lambda msg, sender: self.held.append(msg),
            ActorExitRequest: lambda msg, sender: setattr(self, "exits", self.exits + 1),
        }

    def fail(self, origin: Origin, error: NbstageError) -> None:
        self.seen.append(("failed", error.code))


def test_an_actors_own_row_replaces_the_bases_and_serve_dispatches_what_it_held() -> None:
    holding = Holding()
    holding.receiveMessage(ClientRequest(Origin(1, 1), Ping(6)), None)
    holding.receiveMessage(ClientRequest(Origin(1, 2), Token(7)), None)
    holding.receiveMessage(ActorExitRequest(), None)
    assert (holding.seen, holding.exits) == ([], 1)
    for held in holding.held:
        holding.serve(held.origin, held.body)
    assert holding.seen == [("request", 6), ("failed", ErrorCode.UNKNOWN_REQUEST)]


def test_actors_name_no_receive_methods() -> None:
    """Every handler is in a table: no actor, the base included, has a receiveMsg_ method
    (thespian's plain Actor never calls one; a table row is the only entry point)."""
    from nbstage.actors.daemon.actor import Daemon
    from nbstage.actors.daemon.kernel.actor import Kernel
    from nbstage.actors.daemon.room.actor import Room
    from nbstage.actors.proxy.supervisor import ProxySupervisor
    from nbstage.actors.session.session_manager import SessionManager
    from nbstage.actors.session.watch_loop import WatchLoop

    for actor in (NbActor, Daemon, Kernel, Room, ProxySupervisor, SessionManager, WatchLoop):
        named = {name for name in dir(actor) if name.startswith("receiveMsg_")}
        assert named == set(), actor.__name__


def test_the_room_carries_out_every_action_a_part_may_return() -> None:
    from typing import get_args

    from nbstage.actors.daemon.room import actions
    from nbstage.actors.daemon.room.actor import Room

    assert set(Room()._carriers) == set(get_args(actions.Action))


def test_the_daemon_carries_out_every_admission_step() -> None:
    """Admissions return the effects any actor carries out, and the Daemon's own two."""
    from typing import get_args

    from nbstage.actors.daemon import admitting
    from nbstage.actors.daemon.actor import Daemon

    assert set(get_args(admitting.Step)) <= set(Daemon()._carriers)
