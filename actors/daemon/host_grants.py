"""The Daemon's ledger of kernel host slots (issue 26, docs/adr/0007-kernel-hosts.md).

Rooms do not place their kernels on hosts themselves: each asks the Daemon
(``PlaceKernel``), and the Daemon, whose mailbox takes one ask at a time, decides from its
ledger (kernel/kernel_grants.py) and records the grant before it takes the next ask. So
32 rooms starting kernels at the same moment spread over the hosts, and a host is never
granted more than its ``max_kernels``. A grant counts until the room releases it, asks
again or goes; a kernel the room statuses show running on a host counts too.

An ask whose last kernel died on a host waits for a probe of it (host_watch.py); the
probe's answer decides it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

from nbstage.actors.common.effects import Offload, Send, Wake
from nbstage.actors.daemon.host_watch import HostWatch
from nbstage.actors.daemon.kernel.kernel_grants import AwaitProbe, decide_grant, host_load
from nbstage.actors.daemon.kernel.placement import Placed, Unplaceable
from nbstage.protocol.common.frozen import frozen
from nbstage.protocol.common.kernel_hosts import KernelHost
from nbstage.protocol.daemon_actors.host_grants import (
    KernelHostReleased,
    KernelPlaced,
    PlaceKernel,
)

log = logging.getLogger("nbstage.daemon")

Effect = Send | Offload | Wake


@frozen
class Grant:
    ticket: int
    host: str


class HostGrants:
    def __init__(self, hosts: Iterable[KernelHost] = ()) -> None:
        self.hosts = tuple(hosts)
        self.grants: dict[str, Grant] = {}
        """The host each room holds a slot on, by notebook id."""
        self.waiting: list[tuple[Any, PlaceKernel]] = []
        """Asks waiting for a probe of the host their last kernel died on."""

    def load(self, running: Mapping[str, str], excluding: str | None = None) -> dict[str, int]:
        """Kernels per host: the grants held and the kernels seen running."""
        held = {nid: grant.host for nid, grant in self.grants.items()}
        return host_load(held, running, excluding)

    def ask(
        self, msg: PlaceKernel, room: Any, watch: HostWatch, running: Mapping[str, str]
    ) -> list[Effect]:
        self.grants.pop(msg.notebook_id, None)
        return self._decide(msg, room, watch, running, checked=False)

    def probed(self, name: str, watch: HostWatch, running: Mapping[str, str]) -> list[Effect]:
        """A probe of ``name`` came back: the asks that waited for it are decided."""
        ready = [(room, ask) for room, ask in self.waiting if ask.last == name]
        self.waiting = [(room, ask) for room, ask in self.waiting if ask.last != name]
        effects: list[Effect] = []
        for room, ask in ready:
            effects += self._decide(ask, room, watch, running, checked=True)
        return effects

    def _decide(
        self,
        msg: PlaceKernel,
        room: Any,
        watch: HostWatch,
        running: Mapping[str, str],
        checked: bool,
    ) -> list[Effect]:
        load = self.load(running, excluding=msg.notebook_id)
        decided = decide_grant(msg, self.hosts, watch.health, load, checked)
        if isinstance(decided, AwaitProbe):
            self.waiting.append((room, msg))
            return [*watch.check(decided.host)]
        if isinstance(decided, Unplaceable):
            return [Send(room, KernelPlaced(msg.ticket, None, refused=decided.reason))]
        return [Send(room, self._granted(msg, decided))]

    def _granted(self, msg: PlaceKernel, placed: Placed) -> KernelPlaced:
        if placed.host is not None:
            self.grants[msg.notebook_id] = Grant(msg.ticket, placed.host.name)
            if placed.moved_from is not None:
                log.info(
                    "room %s's kernel moves from kernel host %r to %r",
                    msg.notebook_id,
                    placed.moved_from,
                    placed.host.name,
                )
        return KernelPlaced(msg.ticket, placed.host, placed.note, placed.moved_from)

    def release(self, msg: KernelHostReleased) -> list[Effect]:
        """The room's kernel for ``msg.ticket`` is gone; a later grant of the room stays."""
        grant = self.grants.get(msg.notebook_id)
        if grant is not None and grant.ticket == msg.ticket:
            del self.grants[msg.notebook_id]
        return []

    def forget(self, notebook_id: str) -> None:
        """The room is gone: its slot, and any ask of its still waiting, go with it."""
        self.grants.pop(notebook_id, None)
        self.waiting = [(room, ask) for room, ask in self.waiting if ask.notebook_id != notebook_id]
