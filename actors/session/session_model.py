"""The session model's state: the active session, the parked ones, the activation under
way, why the slot is empty and what to rejoin (SPEC §6). ``sessions.decide`` changes it."""

from __future__ import annotations

from dataclasses import field
from enum import StrEnum
from typing import Any

from nbstage.protocol.common.frozen import frozen

MAX_PARKED = 8


class DropReason(StrEnum):
    """Why the slot is empty (SPEC §4). SWITCHED is part of the contract's vocabulary, but
    this model never produces it: a switch parks the old session and installs the new one
    in one step, and a failed switch leaves the old session in place."""

    SWITCHED = "switched to another notebook"
    DISCONNECTED = "disconnected"
    EVICTED = "notebook is no longer available"


FIRST_RECOVERY_DELAY = 0.2
MAX_RECOVERY_DELAY = 5.0


@frozen
class Target:
    """What a connect asks for: a file path, a notebook id, or a new notebook."""

    path: str | None = None
    notebook_id: str | None = None
    create: dict[str, Any] | None = None

    @property
    def shareable(self) -> bool:
        return self.create is None


@frozen
class Session:
    notebook_id: str
    path: str | None
    peer_id: str
    incarnation: tuple[Any, ...] | None = None

    def matches(self, target: Target) -> bool:
        return target.notebook_id == self.notebook_id or (
            target.path is not None and target.path == self.path
        )

    @property
    def best_target(self) -> str:
        """A saved path ahead of a UUID (SPEC §7.5)."""
        return self.path or self.notebook_id


@frozen
class Drop:
    reason: DropReason
    notebook_id: str | None
    path: str | None


@frozen
class Activation:
    activation_id: int
    target: Target
    waiters: tuple[str, ...]
    epoch: int
    background: bool = False


@frozen
class SessionState:
    active: Session | None = None
    parked: tuple[Session, ...] = ()
    """Least recently active first."""
    epoch: int = 0
    next_activation: int = 1
    pending: Activation | None = None
    drop: Drop | None = None
    stale: tuple[int, ...] = field(default=())
    """Activations that were superseded or cancelled; their joins are released on arrival."""
    incarnation: tuple[Any, ...] | None = None
    """The daemon incarnation new sessions are bound to."""
    recovery: Target | None = None
    """What to rejoin after the daemon came back, until it works or proves impossible."""
    recovery_delay: float = FIRST_RECOVERY_DELAY
    """How long the next failed rejoin waits before it is tried again (doubling)."""
    lost_kernel_of: str | None = None
    """The notebook whose session a new daemon incarnation ended: its rejoin gets a new
    kernel, and the agent is told so once."""
