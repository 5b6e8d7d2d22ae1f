"""Fitting the console's text to a terminal's width: tables, aligned key-value lines and
wrapped messages.

Notebook ids shrink to their first eight characters (which every command also accepts
as an id), paths keep their tail, and every value from the daemon is shown with its
control characters escaped (``terminal_text.py``).
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from typing import Any

from nbstage.entrypoints.admin.terminal_text import visible
from nbstage.protocol.common.frozen import frozen

ID_WIDTH = 8
GAP = "  "
ELLIPSIS = "..."


def short_id(notebook_id: str | None) -> str:
    return "-" if not notebook_id else notebook_id[:ID_WIDTH]


def pid_text(pid: int | None) -> str:
    return "-" if pid is None else str(pid)


def where(path: str | None, ephemeral: bool) -> str:
    """A room's file, or what kind of room has none."""
    if path:
        return path
    return "(ephemeral)" if ephemeral else "(untitled)"


def duration(secs: float) -> str:
    secs = max(int(secs), 0)
    days, rest = divmod(secs, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, seconds = divmod(rest, 60)
    if days:
        return f"{days}d {hours}h"
    if hours:
        return f"{hours}h {minutes:02d}m"
    if minutes:
        return f"{minutes}m {seconds:02d}s"
    return f"{seconds}s"


def clip(text: str, width: int, keep: str = "head") -> str:
    """``text`` cut to ``width`` columns, marking the cut; ``keep="tail"`` keeps the end."""
    if len(text) <= width:
        return text
    if width <= len(ELLIPSIS):
        return text[:width] if keep == "head" else text[len(text) - width :]
    room = width - len(ELLIPSIS)
    return text[:room] + ELLIPSIS if keep == "head" else ELLIPSIS + text[len(text) - room :]


@frozen
class Column:
    header: str
    keep: str | None = None
    """How the column shrinks when the table is too wide: "head", "tail", or never (None)."""
    right: bool = False
    min_width: int = 6


def table(columns: Sequence[Column], rows: Sequence[Sequence[Any]], width: int) -> str:
    """Rows under their headers, each column as wide as it needs, shrunk to fit ``width``."""
    cells = [["-" if value is None else visible(str(value)) for value in row] for row in rows]
    widths = [
        max([len(col.header), *(len(row[i]) for row in cells)]) for i, col in enumerate(columns)
    ]
    excess = sum(widths) + len(GAP) * (len(columns) - 1) - width
    while excess > 0:
        shrinkable = [
            i
            for i, col in enumerate(columns)
            if col.keep is not None and widths[i] > max(col.min_width, len(col.header))
        ]
        if not shrinkable:
            break
        widest = max(shrinkable, key=lambda i: widths[i])
        widths[widest] -= 1
        excess -= 1

    def line(values: Sequence[str]) -> str:
        parts = []
        for col, w, value in zip(columns, widths, values, strict=True):
            value = clip(value, w, col.keep or "head")
            parts.append(value.rjust(w) if col.right else value.ljust(w))
        return GAP.join(parts).rstrip()

    return "\n".join([line([col.header for col in columns]), *(line(row) for row in cells)])


def key_values(pairs: Sequence[tuple[str, str, str]], width: int) -> str:
    """``key  value`` lines with the keys aligned; each value clipped as its third item says."""
    key_width = max(len(key) for key, _, _ in pairs)
    room = max(width - key_width - len(GAP), 8)
    return "\n".join(
        f"{key.ljust(key_width)}{GAP}{clip(visible(value), room, keep)}".rstrip()
        for key, value, keep in pairs
    )


def fit_message(message: str, width: int) -> str:
    """A message wrapped to the terminal, paths and ids kept whole where they fit."""
    return textwrap.fill(visible(message), width, subsequent_indent="  ", break_on_hyphens=False)
