"""What the agent is told when its session server restarts: the banner that opens the
next tool result, and the refusals of calls that cannot wait for the restart."""

from __future__ import annotations

from nbstage.actors.proxy import restart_policy
from nbstage.protocol.daemon.notices import Notice, NoticeKind

RESTARTED = Notice(NoticeKind.SESSION_RESTARTED, "Session server restarted")
HANDED_OFF = Notice(NoticeKind.SESSION_RESTARTED, "Session server handed off to the installed code")
KERNEL_RENEWED_BY_UPGRADE = Notice(
    NoticeKind.KERNEL_RENEWED,
    "The upgraded daemon reopens the notebook with a new kernel: variables from before are "
    "gone; run the cells you need again.",
)
CRASHED_TWICE = "The session server crashed twice while running this call; not retried."
NOT_BACK_IN_TIME = "The nbstage session server did not come back in time; try again."
STOPPED_FIRST = (
    "nbstage mcp stopped before this call finished (its input ended, or it was told to "
    "stop): it may or may not have taken effect."
)


def daemon_upgraded(from_version: str, to_version: str) -> Notice:
    return Notice(NoticeKind.DAEMON_UPGRADED, f"Daemon upgraded ({from_version} → {to_version})")


def banner(first: Notice, when_rejoining: Notice | None, rejoining: bool) -> tuple[Notice, ...]:
    """The lines the next result opens with; ``when_rejoining`` follows ``first`` if a
    notebook is to be rejoined."""
    if not rejoining:
        return (first,)
    first = Notice(first.kind, first.message + ", rejoin requested", first.next_call)
    return (first, when_rejoining) if when_rejoining else (first,)


def circuit_message(restart: restart_policy.RestartState, now: float) -> str:
    until = restart.circuit_open_until or now
    wait = max(0, round(until - now))
    return (
        f"The nbstage session server crashed {len(restart.crashes)} times in "
        f"{restart_policy.DEFAULT_POLICY.window_secs:.0f} s, so restarts are paused "
        f"(circuit open). It retries by itself in {wait} s; call reconnect() to "
        "retry now."
    )
