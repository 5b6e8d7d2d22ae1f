"""What the SessionManager and the WatchLoop leave for later and get back in their own
mailboxes: the payloads of the timers they arm (``wakeupAfter``).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class RetryLink:
    pass


@dataclass(frozen=True, slots=True)
class RetryRecovery:
    pass


@dataclass(frozen=True, slots=True)
class DeferredExpired:
    call_id: str


@dataclass(frozen=True, slots=True)
class FirstLinkOverdue:
    pass


@dataclass(frozen=True, slots=True)
class ReconnectDue:
    pass


@dataclass(frozen=True, slots=True)
class LagCheck:
    pass
