"""The Daemon ↔ Room conversation: starting, joining, path claims and closing."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from nbstage.protocol.common.errors import ErrorCode
from nbstage.protocol.common.frozen import frozen
from nbstage.protocol.common.settings import Settings
from nbstage.protocol.daemon.replies import KeptRoom
from nbstage.protocol.daemon_actors.edge import Origin
from nbstage.protocol.daemon_actors.kernel_facts import EnvironmentView, KernelState
from nbstage.protocol.daemon_actors.kernels import KernelBackendKind, KernelspecInfo


class RoomSource(StrEnum):
    FILE = "file"
    """Load the .ipynb at the room's path."""
    UNTITLED = "untitled"
    """Load a persisted untitled notebook from the registry."""
    NEW = "new"
    """Start from an empty document."""


@frozen
class DaemonRun:
    """One daemon incarnation, as its execution records name it."""

    pid: int
    started_at: float


@frozen
class EarlierDaemon:
    """The incarnation that ran on this state dir before this one, and when it was last
    seen alive (its final heartbeat, or its stop)."""

    run: DaemonRun
    last_alive: float


@frozen
class StartDaemon:
    """The edge's first message to the Daemon actor; its sender is the edge's reply address."""

    state_dir: str
    kernel_dir: str
    settings: Settings
    run: DaemonRun = DaemonRun(0, 0.0)
    earlier: EarlierDaemon | None = None


@frozen
class DaemonStarted:
    pid: int


@frozen
class StopDaemon:
    """Close every room (saving and flushing), then answer DaemonStopped."""


@frozen
class DaemonStopped:
    rooms_closed: int


@frozen
class HostsSeen:
    """What the Daemon knows of its kernel hosts' health (issue 26): sent to every room
    when it changes, and with StartRoom. A host not named in ``lost`` is healthy. A
    restart reads it: a kernel on a lost host is placed afresh (ADR 0007, 4c)."""

    lost: tuple[str, ...] = ()


@frozen
class StartRoom:
    """A new Room's first message: who it is and where its document comes from."""

    notebook_id: str
    source: RoomSource
    path: str | None
    ephemeral: bool
    kernelspec: KernelspecInfo | None
    """A NEW room's kernelspec, None for a room with no kernel. A loaded notebook's kernel
    is chosen by the Room from the notebook's metadata, so the Daemon sends None."""
    working_dir: str | None
    state_dir: str
    kernel_dir: str
    settings: Settings
    edge: Any
    """The edge's address: answers and events go straight there."""
    kernel_backend: KernelBackendKind = KernelBackendKind.JUPYTER
    """Passed on to StartKernel; unit tests use SCRIPTED."""
    content: bytes | None = None
    """An UNTITLED room's document as the registry held it, read by the Daemon in the same
    mailbox step that admitted the attach, so a record removed meanwhile cannot leave the
    room empty (SPEC §14 check_and_load_atomic)."""
    run: DaemonRun = DaemonRun(0, 0.0)
    earlier: EarlierDaemon | None = None
    binding_pending: bool = False
    """The path is not in the registry yet: the Daemon is recording it and says
    PathRecorded when done, and until then the Room answers no join."""
    kernel_host: str | None = None
    """A NEW room's wished kernel host (create_notebook's kernel_host), for its metadata."""
    hosts_seen: HostsSeen = HostsSeen()


@frozen
class RoomStarted:
    notebook_id: str
    pid: int


@frozen
class RoomStartFailed:
    notebook_id: str
    code: ErrorCode
    message: str


@frozen
class JoinRoom:
    """Admit a peer; the Room answers the origin directly."""

    origin: Origin
    peer_label: str
    created: bool
    """True when this join created the room (reported as a fresh notebook)."""
    join_seq: int = 0
    """The Daemon's count of joins sent to this room; RoomStatus echoes the last one seen."""


@frozen
class RoomStatus:
    """A Room's summary, sent to the Daemon whenever it changes (peers, kernel, path)."""

    notebook_id: str
    path: str | None
    ephemeral: bool
    peers: tuple[tuple[str, str], ...]
    """(peer_id, label) pairs."""
    kernel_status: KernelState
    kernel_pid: int | None
    idle_since: float | None
    """Monotonic time the room last lost its last peer, or None while it has peers."""
    joins_seen: int = 0
    kernel_actor_pid: int | None = None
    kernelspec: str | None = None
    """The kernelspec the room chose, None while it has none."""
    environment: EnvironmentView | None = None
    """None while no kernel runs."""


@frozen
class ClaimPath:
    """A Room asks to bind ``path`` (already canonical) before writing there."""

    notebook_id: str
    path: str
    origin: Origin


@frozen
class PathClaimed:
    path: str
    origin: Origin


@frozen
class PathRefused:
    path: str
    origin: Origin
    code: ErrorCode
    message: str


@frozen
class PathBound:
    """The Room wrote its file at a claimed path: the Daemon records the binding, and
    says PathRecorded once it is on disk, so the save is answered only after that."""

    notebook_id: str
    path: str
    origin: Origin


@frozen
class PathRecorded:
    """The registry holds ``path`` ↔ the Room's id: an agent told of the save, or of the
    open (``origin`` None: the Room held its joins for this), can rely on the id after a
    SIGKILL. ``problem`` says why the binding could not be written."""

    path: str
    origin: Origin | None
    problem: str | None


@frozen
class PathReleased:
    """The Room could not write at a claimed path: the Daemon drops the reservation."""

    notebook_id: str
    path: str


class CloseReason(StrEnum):
    REAPED = "reaped"
    EVICTED = "evicted by the operator"
    DAEMON_STOPPING = "daemon stopping"


@frozen
class CloseRoom:
    """Stop the kernel, save or flush, then answer RoomClosed (see ``reaper.after_close``)."""

    reason: CloseReason


@frozen
class RoomClosed:
    """The close's durability barrier is done: the Daemon stops the room, or reopens it."""

    notebook_id: str
    saved: bool
    problem: str | None = None
    """Why the final save or flush failed, when it did."""


@frozen
class ReopenRoom:
    """The Daemon keeps a room whose close could not save: it serves again, edits unsaved."""

    kept: KeptRoom
