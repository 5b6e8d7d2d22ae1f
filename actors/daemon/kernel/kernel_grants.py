"""The Daemon's grant of a kernel host to a room's next kernel (issue 26, ADR 0007).

Pure, tested as a table (tests/unit/test_kernel_grants.py): the hosts, their breakers, the
kernels the Daemon's ledger counts on each, and the room's ask give the grant. The
Daemon's part that keeps the ledger is actors/daemon/host_grants.py.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from nbstage.actors.daemon.kernel.host_health import Breaker, HostHealth, host_facts
from nbstage.actors.daemon.kernel.placement import HostFacts, Placed, Unplaceable, place_kernel
from nbstage.protocol.common.frozen import frozen
from nbstage.protocol.common.kernel_hosts import KernelHost
from nbstage.protocol.daemon_actors.host_grants import PlaceKernel


@frozen
class AwaitProbe:
    """The ask waits for a probe of ``host``, where the room's last kernel died: a host
    that still answers gets the kernel back, one that does not is passed over."""

    host: str


GrantDecision = Placed | Unplaceable | AwaitProbe


def host_load(
    grants: Mapping[str, str], running: Mapping[str, str], excluding: str | None = None
) -> dict[str, int]:
    """Kernels per host, by notebook id: the host each room was granted, and the host each
    room's kernel is seen running on (the two differ only while a kernel moves: both are
    counted). The room ``excluding`` is not counted: it asks for its own next kernel."""
    held = {(nid, host) for source in (grants, running) for nid, host in source.items()}
    load: dict[str, int] = {}
    for nid, host in held:
        if nid != excluding:
            load[host] = load.get(host, 0) + 1
    return load


def decide_grant(
    ask: PlaceKernel,
    hosts: Sequence[KernelHost],
    health: Mapping[str, HostHealth],
    load: Mapping[str, int],
    checked: bool = False,
) -> GrantDecision:
    """Where the room's next kernel runs.

    Placement (placement.py) decides from the breakers (only a closed one is healthy) and
    the ledger's counts. An ask whose last kernel died on a host that the breaker still
    takes as healthy first waits for a probe of that host (``checked`` once one came
    back): if that probe or the one before it failed, the host is passed over for this
    kernel, though the breaker needs more failures to take it as lost for everyone."""
    facts = host_facts(health, load)
    suspect = ask.last if ask.died_there and any(h.name == ask.last for h in hosts) else None
    if suspect is not None:
        seen = health.get(suspect, HostHealth())
        if seen.breaker is Breaker.CLOSED:
            if not checked:
                return AwaitProbe(suspect)
            if seen.failures > 0:
                facts[suspect] = replace(facts.get(suspect, HostFacts()), healthy=False)
    return place_kernel(hosts, facts, ask.wish, ask.last)
