"""The daemon's answers about itself and about the rooms it holds: identity, status,
watching, logs, the room list, the reaper, eviction and the actor tree."""

from __future__ import annotations

from dataclasses import field
from enum import StrEnum
from typing import Any

from nbstage.protocol.common.codec import OMIT_WHEN_NONE
from nbstage.protocol.common.frozen import frozen
from nbstage.protocol.daemon_actors.kernel_facts import EnvironmentView, KernelState


@frozen
class DaemonIdentity:
    """Who the daemon is, stable for its process's life."""

    pid: int
    started_at: float
    version: str
    incarnation: tuple[int, float]
    """(pid, started_at): a restarted daemon is a new incarnation even at the same version."""


@frozen
class DaemonStatus(DaemonIdentity):
    socket: str
    state_dir: str
    envs_dir: str
    """Where the daemon keeps kernel environments (``NBSTAGE_ENVS_DIR`` as the daemon
    read it), so that the admin console lists the daemon's and not its own."""
    rooms: int
    kernels: int
    """Kernels that are up (neither absent nor dead)."""


@frozen
class RoomCounts:
    """The Daemon actor's part of a status; the socket edge adds identity and paths."""

    rooms: int
    kernels: int


@frozen
class Heartbeat:
    """A watch subscription's first frame, then one every heartbeat period."""

    identity: DaemonIdentity


@frozen
class ClientsListed:
    clients: list[dict[str, Any]]
    """What each watching client reported about itself, as it reported it."""


@frozen
class DaemonStopping:
    stopping: bool = True


@frozen
class LogTail:
    lines: list[dict[str, Any]]
    """Log records (JSON lines of the daemon's logs), oldest first."""


@frozen
class PeerView:
    peer_id: str
    label: str
    kind: str | None = field(default=None, metadata=OMIT_WHEN_NONE)
    """In describe_room: "person" for one watching in JupyterLab (ADR 0004), else
    "agent"; absent where the daemon does not know."""


@frozen
class RoomView:
    notebook_id: str
    path: str | None
    ephemeral: bool
    starting: bool
    room_pid: int | None
    peers: list[PeerView] | None
    """None when not known: a session lists its own notebooks so while the daemon is away."""
    kernel_status: KernelState
    kernel_pid: int | None
    kernelspec: str | None = None
    environment: EnvironmentView | None = None


@frozen
class RoomsListed:
    rooms: list[RoomView]


@frozen
class HostView:
    """One kernel host as the daemon's watch sees it (``admin hosts``)."""

    name: str
    url: str
    health: str
    """"healthy", "lost" or "checking" (a breaker's state, actors/daemon/kernel/host_health.py)."""
    kernels: int
    """Kernels the daemon runs there now."""
    max_kernels: int | None
    last_error: str | None


@frozen
class HostsListed:
    hosts: list[HostView]


@frozen
class KeptRoom:
    """A room the reaper chose but kept, because its final save or flush failed."""

    notebook_id: str
    reason: str
    """Why it was being closed (a CloseReason's value)."""
    problem: str
    """Why the save or flush failed."""
    at: float
    """Wall-clock time of the failure."""


@frozen
class EnvironmentsCollected:
    removed: list[str]
    """The folders removed."""
    kept: list[str]
    """The fingerprints kept because an open room's kernel runs there."""


@frozen
class RoomsReaped:
    reaped: list[str]
    """The notebook ids the reaper chose whose rooms are gone, saved first."""
    kept: list[KeptRoom] = field(default_factory=list)
    """The rooms it chose but kept with their unsaved edits, because saving them failed."""


@frozen
class RoomEvicted:
    evicted: str
    saved: bool
    """Whether the final save or flush succeeded."""


class ActorRole(StrEnum):
    DAEMON = "Daemon"
    ROOM = "Room"


@frozen
class KernelNode:
    actor_pid: int
    kernel_pid: int | None


@frozen
class RoomNode:
    actor: ActorRole
    notebook_id: str
    address: str
    pid: int | None
    kernel: KernelNode | None


@frozen
class ActorTree:
    actor: ActorRole
    address: str
    pid: int
    rooms: list[RoomNode]
