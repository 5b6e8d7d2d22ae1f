"""When a room's autosave falls due: about ``autosave_delay_secs`` after the last edit,
and never later than ``autosave_max_delay_secs`` after the first edit that no save has
taken yet. Pure: the caller reads the clock and arms the timer.

A save takes its snapshot when it starts, so the window of unsaved edits starts again
there: the edits made while it writes count from the first of them. Counted from the
first edit of a steady stream instead, every save after the first was overdue before it
began, and a room under an agent's edits saved back to back (a 1,000-cell notebook three
times a second).
"""

from __future__ import annotations


def autosave_wait(
    unsaved_since: float | None, now: float, delay: float, most: float
) -> tuple[float, float]:
    """An edit at ``now``: since when the notebook counts as unsaved, and how long until
    its autosave."""
    since = now if unsaved_since is None else unsaved_since
    return since, max(0.0, min(delay, since + most - now))
