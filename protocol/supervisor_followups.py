"""What the ProxySupervisor leaves for later and gets back in its own mailbox: the
payloads of the timers it arms (``wakeupAfter``). Each names the child generation
or call it was armed for, so a stale one finds nothing to do.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class RestartDue:
    generation: int


@dataclass(frozen=True, slots=True)
class ProgressDue:
    call_id: str
    beat: int


@dataclass(frozen=True, slots=True)
class CallWaitExpired:
    call_id: str
