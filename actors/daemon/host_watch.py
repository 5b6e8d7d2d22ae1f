"""The Daemon's watch on its kernel hosts (issue 26, docs/adr/0007-kernel-hosts.md).

Every ``kernel_host_check_secs`` (a setting) each host gets a tick; its breaker
(kernel/host_health.py) decides whether to probe it. A probe is ``GET /api`` with the
host's token, bounded by ``PROBE_SECS``, run on the edge's worker threads in a lane of the
host's own, so a host that hangs holds up nothing but its own next probe; a host with a
probe under way is not asked again until it answers. The timer carries a generation
(thespian's cannot be cancelled): ``stop`` makes the armed tick stale. With no hosts,
nothing is armed.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable

from nbstage.actors.common.effects import Offload, Wake
from nbstage.actors.daemon.kernel import host_health as hh
from nbstage.actors.daemon.kernel.gateway_client import GatewayClient, GatewayError
from nbstage.protocol.common.kernel_hosts import KernelHost
from nbstage.protocol.common.offload import BlockingWorkDone
from nbstage.protocol.daemon.replies import HostsListed, HostView
from nbstage.protocol.daemon_actors.daemon_followups import HostProbed, HostsCheckDue
from nbstage.protocol.daemon_actors.kernel_facts import KernelState
from nbstage.protocol.daemon_actors.rooms import HostsSeen, RoomStatus

log = logging.getLogger("nbstage.daemon")

CHECK_SECS = 2.0
PROBE_SECS = 2.0


def probe(host: KernelHost, bound: float = PROBE_SECS) -> str | GatewayError:
    """Blocking: the host's version, or the GatewayError saying why it did not answer
    (returned, not raised: a lost host's failures are the watch's news, not the log's)."""
    try:
        return asyncio.run(asyncio.wait_for(GatewayClient(host).version(), bound))
    except GatewayError as exc:
        return exc
    except TimeoutError:
        return GatewayError(f"kernel host {host.name!r} ({host.url}): no answer in {bound:g} s")


def died_on(before: RoomStatus | None, after: RoomStatus) -> str | None:
    """The host a room's kernel just died on, if this status says one did."""
    env = after.environment
    if after.kernel_status is not KernelState.DEAD or env is None or env.host is None:
        return None
    return None if before is not None and before.kernel_status is KernelState.DEAD else env.host


class HostWatch:
    def __init__(
        self,
        hosts: Iterable[KernelHost],
        every: float = CHECK_SECS,
        policy: hh.BreakerPolicy = hh.DEFAULT_POLICY,
    ):
        self.hosts = {host.name: host for host in hosts}
        self.every = every
        self.policy = policy
        self.health = {name: hh.HostHealth() for name in self.hosts}
        self.probing: set[str] = set()
        self.generation = 0
        self.told = HostsSeen()

    def start(self, now: float) -> list[Offload | Wake]:
        """The first probes and the first tick; nothing without hosts."""
        if not self.hosts:
            return []
        return self._tick(now)

    def stop(self) -> None:
        self.generation += 1
        self.hosts = {}

    def due(self, tick: HostsCheckDue, now: float) -> list[Offload | Wake]:
        if tick.generation != self.generation or not self.hosts:
            return []
        return self._tick(now)

    def _tick(self, now: float) -> list[Offload | Wake]:
        effects: list[Offload | Wake] = []
        for name in self.hosts:
            effects += self._event(name, hh.TimePassed(now))
        self.generation += 1
        return [*effects, Wake(self.every, HostsCheckDue(self.generation))]

    def probed(self, done: BlockingWorkDone, now: float) -> list[Offload | Wake]:
        name = done.token.name
        self.probing.discard(name)
        if name not in self.hosts:
            return []
        failed = done.error if not done.ok else done.result
        if isinstance(failed, BaseException):
            return self._event(name, hh.ProbeFailed(str(failed), now))
        return self._event(name, hh.ProbeOk())

    def room_status(self, before: RoomStatus | None, after: RoomStatus) -> list[Offload | Wake]:
        """A room's kernel on a host died (its channels dropped): ask the host now."""
        name = died_on(before, after)
        return [] if name is None else self.check(name)

    def check(self, name: str) -> list[Offload | Wake]:
        """Someone has reason to doubt the host (a kernel died there): probe it now, unless
        a probe is under way or the breaker already takes it as not healthy."""
        return self._event(name, hh.KernelLost()) if name in self.hosts else []

    def _event(self, name: str, event: hh.HealthEvent) -> list[Offload | Wake]:
        before = self.health[name]
        self.health[name], actions = hh.on_health_event(before, event, self.policy)
        effects: list[Offload | Wake] = []
        for action in actions:
            if isinstance(action, hh.Probe) and name not in self.probing:
                self.probing.add(name)
                host = self.hosts[name]
                effects.append(Offload(HostProbed(name), lambda h=host: probe(h), f"host-{name}"))
            elif isinstance(action, hh.HostLost):
                log.warning("a kernel host is lost: %s", action.error)
            elif isinstance(action, hh.HostBack):
                log.info("kernel host %r answers again", name)
        return effects

    def seen(self) -> HostsSeen:
        """What the rooms are told: the hosts not healthy."""
        facts = hh.host_facts(self.health, {})
        return HostsSeen(tuple(sorted(name for name, fact in facts.items() if not fact.healthy)))

    def news(self) -> HostsSeen | None:
        """What the rooms are told, when it differs from what they were told last."""
        seen = self.seen()
        if not self.hosts or seen == self.told:
            return None
        self.told = seen
        return seen

    def listed(self, kernels: dict[str, int]) -> HostsListed:
        """Each host, its health, kernels and last error (``admin hosts``)."""
        return HostsListed(
            [
                HostView(
                    name,
                    host.url,
                    self.health[name].breaker.value,
                    kernels.get(name, 0),
                    host.max_kernels,
                    self.health[name].last_error,
                )
                for name, host in self.hosts.items()
            ]
        )
