"""The Room's ``changed`` events (actors/daemon/room/change_beacon.py): said at once, then
at most once per pause, and never losing the last revision."""

from __future__ import annotations

from types import SimpleNamespace

from nbstage.actors.daemon.room.actions import Send, Wake
from nbstage.actors.daemon.room.change_beacon import PAUSE, ChangeBeacon
from nbstage.protocol.daemon_actors.edge import EventKind


def room(revision: int | None) -> SimpleNamespace:
    doc = None if revision is None else SimpleNamespace(revision=revision)
    return SimpleNamespace(doc=doc, edge="edge", config=SimpleNamespace(notebook_id="nb"))


def said(actions: list) -> list[int]:
    return [a.message.detail["revision"] for a in actions if isinstance(a, Send)]


def test_a_change_is_said_at_once_then_the_last_one_after_the_pause() -> None:
    beacon = ChangeBeacon()
    assert beacon.after(room(None)) == []
    assert beacon.after(room(3)) == [], "the first load is no change"
    first = beacon.after(room(4))
    assert said(first) == [4]
    assert first[0].message.kind is EventKind.CHANGED
    assert [a.seconds for a in first if isinstance(a, Wake)] == [PAUSE]
    assert beacon.after(room(5)) == []
    assert beacon.after(room(9)) == []
    assert said(beacon.pause_over(room(9))) == [9]
    assert beacon.pause_over(room(9)) == [], "nothing new: no event, no timer"
    assert said(beacon.after(room(10))) == [10]
