"""The SessionManager's link to the daemon and the watch loop beside it: the start the
supervisor configures, the link connected and retried, the daemon's identity and
incarnation, a daemon of another version handed off to a fresh child, and the calls held
until the first link answers. The link's requests are daemon_requests.py's and the held
calls held_calls.py's; these are the SessionManager's handlers for them, acting through
it."""

from __future__ import annotations

import logging
import os
from dataclasses import replace
from datetime import timedelta
from functools import partial
from typing import Any

from nbstage.actors.session import session_decisions
from nbstage.actors.session import session_events as events
from nbstage.actors.session.daemon_link import (
    DaemonFailure,
    DaemonFrameArrived,
    DaemonLinkClosed,
    DaemonLinkRefused,
)
from nbstage.actors.session.session_calls import target_of
from nbstage.actors.session.watch_loop import WatchLoop
from nbstage.protocol.daemon.replies import DaemonIdentity
from nbstage.protocol.daemon.requests import GetIdentity
from nbstage.protocol.mcp import tools
from nbstage.protocol.session.resource_messages import ResourceRequested
from nbstage.protocol.session.session_followups import FirstLinkOverdue, RetryLink
from nbstage.protocol.session.supervision import (
    HandoffRequested,
    SessionConfig,
    SessionManagerReady,
    ToolCallProgressed,
)
from nbstage.protocol.session.watching import (
    DaemonIncarnationSeen,
    DaemonVersionChanged,
    DaemonWentAway,
    StartWatch,
)

log = logging.getLogger("nbstage.session")

LINK_RETRY = timedelta(milliseconds=200)
FIRST_LINK_RETRY = timedelta(milliseconds=20)
"""While a daemon this client autostarted comes up: its socket appears within a second,
and every 200 ms lost there is on the new user's first call."""
HEARTBEAT_ENV = "NBSTAGE_HEARTBEAT_SECS"
FIRST_LINK_LIMIT = timedelta(seconds=30)
"""How long calls wait for a daemon that is being started for this client."""


def configured(manager: Any, msg: SessionConfig, sender: Any) -> None:
    manager.config = msg
    manager.supervisor = sender
    manager.edge = sender
    if msg.autostart:
        manager.held.awaiting_first_link = True
        manager.wakeupAfter(FIRST_LINK_LIMIT, payload=FirstLinkOverdue())
    if msg.rejoin_target:
        # The restart target enters the session model at once, so a disconnect that
        # arrives before the daemon's first answer cancels it like any other rejoin.
        manager.state = replace(manager.state, recovery=target_of(msg.rejoin_target, msg.cwd))
    ready = SessionManagerReady(os.getpid(), msg.generation, tools.builtin_tool_list())
    manager.send(sender, ready)
    connect(manager)
    start_watch(manager)


def start_watch(manager: Any) -> None:
    manager.watch = manager.createActor(WatchLoop)
    heartbeat = float(os.environ.get(HEARTBEAT_ENV) or 1.0)
    start = StartWatch(manager.config.socket_path, heartbeat, manager._client_info(), manager.edge)
    manager.send(manager.watch, start)


def child_exited(manager: Any, msg: Any, sender: Any) -> None:
    if manager.watch is not None and msg.childAddress == manager.watch:
        log.warning("the watch loop exited; starting a new one")
        start_watch(manager)


def connect(manager: Any) -> None:
    manager.daemon.connect(
        partial(tell_edge, manager), manager.config.socket_path, manager.myAddress
    )
    manager.held.confirmed = False
    manager.daemon.send(GetIdentity(), partial(on_identity, manager))


def tell_edge(manager: Any, message: object) -> None:
    manager.send(manager.edge, message)


def retry_link(manager: Any, due: RetryLink) -> None:
    if manager.daemon.link is None:
        connect(manager)


def on_identity(manager: Any, reply: DaemonIdentity | DaemonFailure) -> None:
    """The link's own identity answer: the daemon is up, so recovery need not wait for
    the watch loop's first heartbeat (which reports the same incarnation later)."""
    if isinstance(reply, DaemonFailure):
        if manager.daemon.link is not None:
            manager.held.confirmed = True
        release_held_calls(manager)
        return
    if version_changed(manager, reply.version):
        return
    manager.held.confirmed = True
    incarnation_seen(manager, reply.incarnation)
    first_link_settled(manager)


def first_link_settled(manager: Any) -> None:
    """The first link answered (or the wait is over): the calls held for it run now."""
    manager.held.awaiting_first_link = False
    release_held_calls(manager)


def release_held_calls(manager: Any) -> None:
    for msg in manager.held.release():
        if isinstance(msg, ResourceRequested):
            manager.resources.requested(msg, manager.supervisor)
        else:
            manager._tool_call(msg, manager.supervisor)


def version_changed(manager: Any, version: str) -> bool:
    """Check a live daemon's version against this process's first, handing off if
    it differs."""
    handoff = manager.held.version_seen(version)
    if handoff is None:
        return False
    hand_off(manager, handoff.from_version, handoff.to_version)
    return True


def incarnation_reported(manager: Any, msg: DaemonIncarnationSeen, sender: Any) -> None:
    if version_changed(manager, msg.version):
        return
    if manager.daemon.link is None:
        connect(manager)
    incarnation_seen(manager, (msg.pid, msg.started_at))


def incarnation_seen(manager: Any, incarnation: tuple[Any, ...]) -> None:
    if incarnation == manager.state.incarnation:
        return
    session_decisions.decide(manager, events.IncarnationSeen(incarnation, None))


def version_reported(manager: Any, msg: DaemonVersionChanged, sender: Any) -> None:
    hand_off(manager, msg.from_version, msg.to_version)


def daemon_went_away(manager: Any, msg: DaemonWentAway, sender: Any) -> None:
    log.info("the daemon went away; sessions wait for its return")


def hand_off(manager: Any, from_version: str, to_version: str) -> None:
    """A daemon of another version: this code must not serve it; the supervisor restarts
    the session manager from the installed code at once."""
    handoff = HandoffRequested(from_version, to_version, manager.config.generation)
    manager.send(manager.supervisor, handoff)


def link_lost(manager: Any, msg: DaemonLinkClosed | DaemonLinkRefused, sender: Any) -> None:
    """A link that ended or could not be made. Only the first of a run of refusals is
    logged (the link is tried again every few hundred ms). A daemon that would refuse
    its settings will not come while it waits: the calls held for it are answered."""
    said_before = manager.daemon.unreachable
    if not manager.daemon.lost(msg):
        return
    refused = isinstance(msg, DaemonLinkRefused)
    if not refused:
        log.warning("daemon link closed: %s", msg.reason)
    elif manager.daemon.refused_in_a_row == 1 or manager.daemon.unreachable != said_before:
        log.info("daemon link refused: %s", msg.settings_problem or msg.reason)
    manager.held.confirmed = False
    if refused and msg.settings_problem is not None:
        manager.held.awaiting_first_link = False
    if not manager.held.awaiting_first_link:
        release_held_calls(manager)
    retry = FIRST_LINK_RETRY if manager.held.awaiting_first_link else LINK_RETRY
    manager.wakeupAfter(retry, payload=RetryLink())


def frame_arrived(manager: Any, msg: DaemonFrameArrived, sender: Any) -> None:
    manager.daemon.arrived(msg, partial(progressed, manager), manager.book.note)


def progressed(manager: Any, call_id: str, line: str) -> None:
    manager.send(manager.supervisor, ToolCallProgressed(call_id, line))
