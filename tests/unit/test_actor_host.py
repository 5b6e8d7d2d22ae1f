"""ActorHost drives thespian's timers from the asyncio loop: a timer armed after a later
one still fires on time, and one armed after a sooner one still fires."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from thespian.actors import Actor, ActorAddress, WakeupMessage

from nbstage.entrypoints.common.actor_host import ActorHost


@dataclass(frozen=True)
class Arm:
    seconds: float
    tag: str
    reply_to: Any


class Alarm(Actor):
    def receiveMessage(self, msg: Any, sender: ActorAddress) -> None:
        if isinstance(msg, Arm):
            self.reply_to = msg.reply_to
            self.wakeupAfter(timedelta(seconds=msg.seconds), payload=msg.tag)
        elif isinstance(msg, WakeupMessage):
            self.send(self.reply_to, msg.payload)


async def fired_after(arms: list[tuple[float, str]], count: int) -> list[str]:
    fired: list[str] = []
    enough = asyncio.Event()

    def deliver(tag: str) -> None:
        fired.append(tag)
        if len(fired) == count:
            enough.set()

    host = ActorHost(deliver)
    alarm = host.create(Alarm)
    for seconds, tag in arms:
        host.tell(alarm, Arm(seconds, tag, host.edge_address))
    try:
        await asyncio.wait_for(enough.wait(), 10)
    finally:
        host.close()
    return fired


def test_a_sooner_timer_armed_after_a_later_one_fires_first() -> None:
    assert asyncio.run(fired_after([(3600, "late"), (0.01, "soon")], 1)) == ["soon"]


def test_a_later_timer_armed_after_a_sooner_one_fires_too() -> None:
    assert asyncio.run(fired_after([(0.01, "soon"), (0.05, "later")], 2)) == ["soon", "later"]
