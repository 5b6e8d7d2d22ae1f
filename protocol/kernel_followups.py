"""What a Kernel actor leaves for later and gets back in its own mailbox: its tick
payloads (``wakeupAfter``) and the tokens of the blocking work it hands to the edge
(``NbActor.offload``). Ticks carry a generation, because thespian timers cannot be
cancelled.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Tick:
    generation: int


@dataclass(frozen=True, slots=True)
class Launched:
    """Offload token: the kernel process was started (or failed to start)."""


@dataclass(frozen=True, slots=True)
class Relaunched:
    origin: Any
    room: Any


@dataclass(frozen=True, slots=True)
class StoppedForGood:
    pid: int | None
    room: Any
