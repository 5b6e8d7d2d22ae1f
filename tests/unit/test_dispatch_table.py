"""NbActor's one dispatch table (actors/common/base.py): built once, keyed by message type, with
envelopes keyed by what they carry, and thespian's receiveMsg_ names for the rest."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from thespian.actors import WakeupMessage

from nbstage.actors.common.base import NbActor, finished, progress, request, wakeup
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
        self.seen.append(("named", msg.n))


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
        ("named", 4),
    ]
    assert probe.tables == 1


def test_a_timer_the_table_does_not_name_is_dropped() -> None:
    probe = Probe()
    probe.receiveMessage(WakeupMessage(0, payload=Ping(5)), None)
    assert probe.seen == []


def test_the_room_carries_out_every_action_a_part_may_return() -> None:
    from typing import get_args

    from nbstage.actors.daemon.room import actions
    from nbstage.actors.daemon.room.actor import Room

    assert set(Room()._carriers) == set(get_args(actions.Action))
