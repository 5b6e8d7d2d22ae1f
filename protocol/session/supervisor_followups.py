"""What the ProxySupervisor leaves for later and gets back in its own mailbox: the
payloads of the timers it arms (``wakeupAfter``). Each names the child generation
or call it was armed for, so a stale one finds nothing to do.
"""

from __future__ import annotations

from nbstage.protocol.common.frozen import frozen


@frozen
class RestartDue:
    generation: int


@frozen
class ProgressDue:
    """A call's next progress beat; its value is the call's count (PendingCall)."""

    call_id: str


@frozen
class DrainOver:
    """Timer payload: stdin has ended and the calls in flight had their time; stop."""


@frozen
class CallWaitExpired:
    call_id: str
