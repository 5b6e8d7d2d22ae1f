"""The WatchLoop actor: follows the daemon's identity and tells the SessionManager.

It holds a watch subscription (heartbeats carrying the identity, plus room
events) on a DaemonLink of its own, feeds what it sees to the pure ``reconcile``
step, and carries out the actions: report an incarnation, report absence, ask for
a handoff, reconnect with backoff, or query the identity when heartbeats lag.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import timedelta
from typing import Any

from thespian.actors import ActorAddress, ActorExitRequest

from nbstage.actors.common.base import Key, NbActor, wakeup
from nbstage.actors.session import reconcile, resources
from nbstage.actors.session.daemon_link import (
    DaemonFrameArrived,
    DaemonLink,
    DaemonLinkClosed,
    DaemonLinkRefused,
    frame_from,
    is_current,
)
from nbstage.protocol.common.codec import from_wire
from nbstage.protocol.common.errors import NbstageError
from nbstage.protocol.daemon.frames import FrameKind
from nbstage.protocol.daemon.replies import DaemonIdentity, Heartbeat
from nbstage.protocol.daemon.requests import GetIdentity, Watch
from nbstage.protocol.session.session_followups import LagCheck, ReconnectDue
from nbstage.protocol.session.watching import (
    ClientInfoChanged,
    DaemonIncarnationSeen,
    DaemonVersionChanged,
    DaemonWentAway,
    StartWatch,
    bounded_client,
)

log = logging.getLogger("nbstage.watch")

LAG_FACTOR = 3.0


class WatchLoop(NbActor):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.config: StartWatch | None = None
        self.session_manager: ActorAddress | None = None
        self.state = reconcile.WatchState()
        self.link: DaemonLink | None = None
        self.last_beat = time.monotonic()
        self.reconnect_pending = False

    def handlers(self) -> dict[Key, Callable[..., None]]:
        return {
            StartWatch: self._start,
            ClientInfoChanged: self._client_info_changed,
            DaemonFrameArrived: self._frame_arrived,
            DaemonLinkClosed: self._link_closed,
            DaemonLinkRefused: self._link_refused,
            wakeup(ReconnectDue): self._reconnect_due,
            wakeup(LagCheck): self._lag_check,
            ActorExitRequest: self._exit,
        }

    def _start(self, msg: StartWatch, sender: ActorAddress) -> None:
        self.config = msg
        self.session_manager = sender
        self._connect()
        self.wakeupAfter(self._lag_period(), payload=LagCheck())

    def _lag_period(self) -> timedelta:
        return timedelta(seconds=self.config.heartbeat_secs * LAG_FACTOR)

    def _connect(self) -> None:
        self.link = DaemonLink(self._tell_edge, self.config.socket_path, self.myAddress)
        self.last_beat = time.monotonic()
        self.link.send(Watch(bounded_client(self.config.client)))

    def _tell_edge(self, message: object) -> None:
        self.send(self.config.edge, message)

    def _client_info_changed(self, msg: ClientInfoChanged, sender: ActorAddress) -> None:
        self.config = replace(self.config, client=msg.client)
        if self.link is not None:
            self.link.send(Watch(bounded_client(msg.client)))

    def _frame_arrived(self, msg: DaemonFrameArrived, sender: ActorAddress) -> None:
        frame = frame_from(self.link, msg)
        if frame is None:
            return
        if (event := resources.event_message(frame)) is not None:
            self.send(self.session_manager, event)
            return
        identity = _identity_in(frame)
        if identity is not None:
            self.last_beat = time.monotonic()
            seen = reconcile.Identity(identity.pid, identity.started_at, identity.version)
            self._step(reconcile.HeartbeatSeen(seen))

    def _link_closed(self, msg: DaemonLinkClosed, sender: ActorAddress) -> None:
        if is_current(self.link, msg):
            self.link = None
            self._step(reconcile.LinkClosed())

    def _link_refused(self, msg: DaemonLinkRefused, sender: ActorAddress) -> None:
        if is_current(self.link, msg):
            self.link = None
            self._step(reconcile.QueryFailed())

    def _reconnect_due(self, due: ReconnectDue) -> None:
        self.reconnect_pending = False
        if self.link is None:
            self._connect()

    def _lag_check(self, check: LagCheck) -> None:
        lagging = time.monotonic() - self.last_beat > self._lag_period().total_seconds()
        if self.link is not None and lagging:
            self._step(reconcile.DeliveryLagged())
        self.wakeupAfter(self._lag_period(), payload=LagCheck())

    def _step(self, event: object) -> None:
        self.state, actions = reconcile.reconcile(self.state, event)
        for action in actions:
            match action:
                case reconcile.IncarnationChanged(identity):
                    self.send(
                        self.session_manager,
                        DaemonIncarnationSeen(identity.pid, identity.started_at, identity.version),
                    )
                case reconcile.DaemonAbsent():
                    self.send(self.session_manager, DaemonWentAway())
                case reconcile.Handoff(from_version, to_version):
                    self.send(self.session_manager, DaemonVersionChanged(from_version, to_version))
                case reconcile.Reconnect(after) if not self.reconnect_pending:
                    self.reconnect_pending = True
                    self.wakeupAfter(timedelta(seconds=after), payload=ReconnectDue())
                case reconcile.QueryIdentity():
                    self.link.send(GetIdentity())

    def _exit(self, msg: object, sender: ActorAddress) -> None:
        if self.link is not None:
            self.link.close()


def _identity_in(frame: dict[str, Any]) -> DaemonIdentity | None:
    """The identity a heartbeat or an identity answer carries; room events carry none."""
    try:
        match frame["type"]:
            case FrameKind.HEARTBEAT:
                return from_wire(Heartbeat, frame).identity
            case FrameKind.RESULT:
                return from_wire(DaemonIdentity, frame.get("result"))
    except NbstageError as exc:
        log.warning("dropped a malformed %s from the daemon: %s", frame["type"], exc.message)
    return None
