"""What a Kernel actor leaves for later and gets back in its own mailbox: its tick
payloads (``wakeupAfter``) and the tokens of the blocking work it hands to the edge
(``NbActor.offload``). Ticks carry a generation, because thespian timers cannot be
cancelled.
"""

from __future__ import annotations

from typing import Any

from nbstage.protocol.common.frozen import frozen


@frozen
class Tick:
    generation: int


@frozen
class Launched:
    """Offload token: the kernel process was started (or failed to start)."""


@frozen
class Relaunched:
    origin: Any
    room: Any


@frozen
class StoppedForGood:
    pid: int | None
    room: Any
