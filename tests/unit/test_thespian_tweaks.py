"""nbstage's uses of thespian internals still fit the installed thespian (SPEC §13)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta

import pytest
from thespian.actors import Actor, ActorExitRequest, WakeupMessage
from thespian.system import simpleSystemBase

from nbstage.actors.common import thespian_tweaks


@dataclass(frozen=True)
class Echo:
    text: str


@dataclass(frozen=True)
class RemindMe:
    seconds: float


class Echoer(Actor):
    def receiveMessage(self, msg, sender):
        if isinstance(msg, Echo):
            self.send(sender, Echo(msg.text + "!"))
        elif isinstance(msg, RemindMe):
            self.reply_to = sender
            self.wakeupAfter(timedelta(seconds=msg.seconds), payload="ring")
        elif isinstance(msg, WakeupMessage):
            self.send(self.reply_to, msg.payload)


@pytest.fixture
def system() -> Iterator[thespian_tweaks.InProcessSystem]:
    system = thespian_tweaks.InProcessSystem()
    yield system
    system.shutdown()


def test_the_installed_thespian_is_the_pinned_version() -> None:
    assert thespian_tweaks.installed_version_matches(), (
        "thespian changed: re-check every internal in actors/common/thespian_tweaks.py, then re-pin"
    )


def test_mail_to_the_edge_address_is_collected_without_waiting(system) -> None:
    echoer = system.create(Echoer)
    system.post(echoer, Echo("hi"))
    assert system.collect() == []
    system.run()
    assert system.collect() == [Echo("hi!")]
    assert system.collect() == []


def test_the_next_timer_is_known_and_fires_only_when_due(system) -> None:
    echoer = system.create(Echoer)
    assert system.seconds_to_next_timer() is None
    system.post(echoer, RemindMe(0.05))
    system.run()
    waiting = system.seconds_to_next_timer()
    assert 0 < waiting <= 0.05
    system.run()
    assert system.collect() == []
    time.sleep(waiting)
    system.run()
    assert system.collect() == ["ring"]
    assert system.seconds_to_next_timer() is None


def test_pending_timers_live_in_a_heap_and_fire_in_due_order(system) -> None:
    assert simpleSystemBase.WakeupManager._add_wakeup is thespian_tweaks._heap_add
    echoer = system.create(Echoer)
    for seconds in (0.04, 3600, 0.02, 3600, 0.03):
        system.post(echoer, RemindMe(seconds))
    system.run()
    assert 0 < system.seconds_to_next_timer() <= 0.02
    time.sleep(0.05)
    system.run()
    assert system.collect() == ["ring", "ring", "ring"]
    assert system.seconds_to_next_timer() > 3000


def test_the_actors_still_running_are_known_until_they_exit(system) -> None:
    assert system.live_actors() == []
    first, _ = system.create(Echoer), system.create(Echoer)
    assert system.live_actors() == ["Echoer", "Echoer"]
    system.post(first, ActorExitRequest())
    system.run()
    assert system.live_actors() == ["Echoer"]
