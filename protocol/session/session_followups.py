"""What the SessionManager and the WatchLoop leave for later and get back in their own
mailboxes: the payloads of the timers they arm (``wakeupAfter``).
"""

from __future__ import annotations

from nbstage.protocol.common.frozen import frozen


@frozen
class RetryLink:
    pass


@frozen
class RetryRecovery:
    pass


@frozen
class DeferredExpired:
    call_id: str


@frozen
class FirstLinkOverdue:
    pass


@frozen
class ReconnectDue:
    pass


@frozen
class LagCheck:
    pass


@frozen
class FiguresWritten:
    """The images of a finished tool result were written to the figure folder (offloaded
    work); the result goes out now."""

    call_id: str
    result_json: bytes
