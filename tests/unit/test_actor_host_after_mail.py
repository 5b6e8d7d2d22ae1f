"""The actor host tells a ``TellAfterMail`` message only after the edge has taken every
message of the delivery that asked for it (entrypoints/common/actor_host.py); a timer due
at once would run inside that delivery, before the edge got its answer."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

from thespian.actors import Actor, WakeupMessage

from nbstage.entrypoints.common.actor_host import ActorHost
from nbstage.protocol.common.frozen import frozen
from nbstage.protocol.common.host_mail import TellAfterMail

EVENTS: list[str] = []


@frozen
class AskedForAnswer:
    edge: Any
    later: str
    """``after-mail`` or ``timer``: how the actor asks for its follow-up."""


@frozen
class FollowUpDue:
    pass


class Answering(Actor):  # type: ignore[misc]
    def receiveMessage(self, msg: Any, sender: Any) -> None:
        if isinstance(msg, AskedForAnswer):
            self.send(msg.edge, "answer")
            if msg.later == "after-mail":
                self.send(msg.edge, TellAfterMail(self.myAddress, FollowUpDue()))
            else:
                self.wakeupAfter(timedelta(0), payload=FollowUpDue())
        elif isinstance(msg, (FollowUpDue, WakeupMessage)):
            EVENTS.append("follow-up")


def order_for(later: str) -> list[str]:
    EVENTS.clear()

    async def drive() -> None:
        host = ActorHost(lambda message: EVENTS.append(f"edge got {message}"))
        try:
            actor = host.create(Answering)
            host.tell(actor, AskedForAnswer(host.edge_address, later))
            for _ in range(5):
                await asyncio.sleep(0)
        finally:
            host.close()

    asyncio.run(drive())
    return list(EVENTS)


def test_a_message_told_after_mail_comes_after_the_edge_has_the_answer() -> None:
    assert order_for("after-mail") == ["edge got answer", "follow-up"]


def test_a_timer_due_at_once_would_not_wait_for_the_edge() -> None:
    """Why ``TellAfterMail`` exists: thespian runs such a timer in the same delivery."""
    assert order_for("timer") == ["follow-up", "edge got answer"]
