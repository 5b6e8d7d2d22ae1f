"""A Room's answers about joining and leaving it, describing it and saving its notebook."""

from __future__ import annotations

from dataclasses import field
from enum import StrEnum

from nbstage.protocol.common.codec import OMIT_WHEN_NONE
from nbstage.protocol.common.frozen import frozen
from nbstage.protocol.daemon.daemon_replies import KeptRoom, PeerView
from nbstage.protocol.daemon_actors.kernel_facts import EnvironmentView, KernelState


@frozen
class NotebookFacts:
    """What a Room says about itself in a join and in a description."""

    notebook_id: str
    path: str | None
    ephemeral: bool
    runtime: str | None
    """The kernelspec name, or None for a room without a kernel."""
    cell_count: int
    kernel_status: KernelState
    kernel_refused: str | None = field(default=None, kw_only=True, metadata=OMIT_WHEN_NONE)
    """Why no installed kernelspec fits the notebook; the notebook can still be edited."""
    environment: EnvironmentView | None = field(default=None, kw_only=True, metadata=OMIT_WHEN_NONE)
    """The running kernel's environment; None while no kernel runs."""


@frozen
class NotebookJoined(NotebookFacts):
    """The answer to open, create and attach: the room, and the new peer in it."""

    peer_id: str
    created: bool
    """True when this join made the notebook."""


@frozen
class RoomLeft:
    left: bool = True


@frozen
class ExecutionCounts:
    live: list[str]
    finished: int


@frozen
class Latch:
    kernel_attached: bool
    generation: int


@frozen
class KeepAlive:
    secs: float
    armed_generation: int | None
    pending: bool
    """A teardown is armed for the current generation and the room has no peers."""


class SharedDocState(StrEnum):
    """Where the room's shared Y document stands (ADR 0004)."""

    NONE = "none"
    BUILDING = "building"
    LIVE = "live"
    FREEZING = "freezing"
    FROZEN = "frozen"


@frozen
class SharedDocView:
    state: SharedDocState
    frozen_bytes: int | None = None
    """What a frozen document keeps: its compressed update and its cells' checksums."""


@frozen
class RoomDescribed(NotebookFacts):
    peers: list[PeerView]
    kernel_pid: int | None
    kernel_actor_pid: int | None
    executions: ExecutionCounts
    latch: Latch
    keep_alive: KeepAlive
    unsaved: bool
    room_pid: int
    kept: KeptRoom | None = None
    """Set while the room holds edits the reaper could not save before removing it."""
    shared_doc: SharedDocView | None = None


@frozen
class NotebookSaved:
    notebook_id: str
    path: str
