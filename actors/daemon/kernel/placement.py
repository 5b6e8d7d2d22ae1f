"""Where a new kernel runs: the daemon's machine or one of the kernel hosts (issue 26).

A decision, as the others are: a pure function of the hosts, what is known of them and
the notebook's wish, tested as a table (tests/unit/test_kernel_hosts_placement.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from nbstage.protocol.common.frozen import frozen
from nbstage.protocol.common.kernel_hosts import KernelHost

METADATA_KEY = "kernel_host"
"""``metadata["nbstage"]["kernel_host"]`` of a notebook: the host its kernel should run on."""

ANY_HOST = "*"
"""The wish for any kernel host: the healthy one with room and the fewest kernels."""


@frozen
class HostFacts:
    """What the daemon knows of one host when it places a kernel."""

    healthy: bool = True
    kernels: int = 0
    """Kernels the daemon runs there now."""


@frozen
class Placed:
    """The decision: ``host`` None is the daemon's own machine."""

    host: KernelHost | None
    note: str | None = None
    """Why the kernel runs somewhere other than where the notebook asked (said to the agent)."""
    moved_from: str | None = None
    """The host the notebook's previous kernel ran on, when this one runs elsewhere."""


@frozen
class Unplaceable:
    """No host can take the kernel; ``reason`` says why and what to do."""

    reason: str


def wished_host(metadata: object) -> str | None:
    """The host a notebook's metadata asks for, if it names one (a malformed entry reads
    as none)."""
    ours = metadata.get("nbstage") if isinstance(metadata, dict) else None
    wish = ours.get(METADATA_KEY) if isinstance(ours, dict) else None
    return wish if isinstance(wish, str) and wish else None


def with_wished_host(metadata: dict[str, Any], name: str | None) -> dict[str, Any]:
    """A copy of ``metadata`` that asks for host ``name`` (None: for none); the rest is kept."""
    fresh = dict(metadata)
    ours = dict(fresh.get("nbstage") or {}) if isinstance(fresh.get("nbstage"), dict) else {}
    if name is None:
        ours.pop(METADATA_KEY, None)
    else:
        ours[METADATA_KEY] = name
    if ours:
        fresh["nbstage"] = ours
    else:
        fresh.pop("nbstage", None)
    return fresh


def _has_room(host: KernelHost, facts: HostFacts) -> bool:
    return facts.healthy and (host.max_kernels is None or facts.kernels < host.max_kernels)


def place_kernel(
    hosts: Sequence[KernelHost],
    facts: Mapping[str, HostFacts],
    wish: str | None,
    last: str | None = None,
) -> Placed | Unplaceable:
    """The host for a new kernel.

    - No wish: the daemon's machine, as without hosts.
    - A wish for any host (``ANY_HOST``): the healthy host with room and the fewest
      kernels (then the first in the settings); none has room: unplaceable.
    - A wish for a host that is healthy and below its limit: that host.
    - A wish for a host that is lost or full: the healthy host with the fewest kernels
      (then the first in the settings) that has room, with a note saying so; none has
      room: unplaceable.
    - A wish for a host the settings do not name: unplaceable, naming the hosts there are.
    A host with no facts is taken as healthy and empty (it has not been checked yet).
    ``last`` is the host the notebook's previous kernel ran on: a kernel placed elsewhere
    says it moved from there."""
    placed = _place(hosts, facts, wish)
    if (
        isinstance(placed, Placed)
        and placed.host is not None
        and last not in (None, placed.host.name)
    ):
        return Placed(placed.host, placed.note, moved_from=last)
    return placed


def _place(
    hosts: Sequence[KernelHost], facts: Mapping[str, HostFacts], wish: str | None
) -> Placed | Unplaceable:
    if wish is None:
        return Placed(None)
    if wish == ANY_HOST:
        if not hosts:
            return Unplaceable("the notebook asks for any kernel host, and config.toml names none")
        chosen = _least_loaded(hosts, facts, exclude=None)
        if chosen is None:
            return Unplaceable("no kernel host is healthy with room for another kernel")
        return Placed(chosen)
    by_name = {host.name: host for host in hosts}
    wished = by_name.get(wish)
    if wished is None:
        named = ", ".join(repr(h.name) for h in hosts) or "none"
        return Unplaceable(
            f"the notebook asks for kernel host {wish!r}, which config.toml does not name "
            f"(it names: {named})"
        )
    wished_facts = facts.get(wish, HostFacts())
    if _has_room(wished, wished_facts):
        return Placed(wished)
    why = "is full" if wished_facts.healthy else "is lost"
    chosen = _least_loaded(hosts, facts, exclude=wish)
    if chosen is None:
        return Unplaceable(f"kernel host {wish!r} {why}, and no other host has room")
    return Placed(chosen, f"kernel host {wish!r} {why}: the kernel runs on {chosen.name!r}")


def _least_loaded(
    hosts: Sequence[KernelHost], facts: Mapping[str, HostFacts], exclude: str | None
) -> KernelHost | None:
    """The healthy host with room and the fewest kernels; a tie: the first in the settings."""
    open_hosts = [
        (facts.get(h.name, HostFacts()).kernels, at, h)
        for at, h in enumerate(hosts)
        if h.name != exclude and _has_room(h, facts.get(h.name, HostFacts()))
    ]
    return min(open_hosts, key=lambda row: row[:2])[2] if open_hosts else None


def refuse_inline_dependencies(host: KernelHost | None, requirements: Sequence[str]) -> str | None:
    """Why a kernel on ``host`` cannot start with the notebook's inline dependencies, if it
    cannot: nbstage builds their environment on the daemon's machine, which a kernel on a
    host never sees (docs/adr/0007-kernel-hosts.md)."""
    if host is None or not requirements:
        return None
    return (
        f"this notebook has inline dependencies ({', '.join(requirements)}), which nbstage "
        f"installs on the daemon's machine only; kernel host {host.name!r} cannot use them. "
        "Install them from a cell on that host (%pip install …) and remove them with "
        "manage_dependencies(remove=[…]), or run the notebook locally"
    )
