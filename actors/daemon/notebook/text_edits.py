"""The search-and-replace edits of a cell's source: one literal match with its context,
or one match of a regular expression. Pure: each returns the new source or raises
:class:`NbstageError` saying what to do next."""

from __future__ import annotations

import regex

from nbstage.actors.daemon.notebook.cell_model import clipped
from nbstage.actors.daemon.notebook.pattern_bounds import pattern_problem
from nbstage.protocol.common.errors import ErrorCode, NbstageError

PATTERN_TIMEOUT_SECS = 0.5
"""How long one replace_regex may search a cell: it runs in the Room's mailbox."""


def require_match(match: str, cell_id: str) -> None:
    """Refuse an empty ``match``, before the cell is looked up."""
    if not match:
        raise NbstageError(
            ErrorCode.BAD_REQUEST,
            "match must not be empty. To replace a cell's whole source, use "
            f'set_cell(cell_id="{clipped(cell_id)}", source=...).',
        )


def match_replaced(
    source: str,
    cell_id: str,
    match: str,
    content: str,
    context_before: str | None = None,
    context_after: str | None = None,
) -> str:
    """``source`` with the one literal occurrence of ``match`` (not empty: see
    ``require_match``) that has the given context replaced by ``content``."""
    hits = _literal_hits(source, match, context_before or "", context_after or "")
    what = "text with that context" if context_before or context_after else "text"
    _require_one(len(hits), cell_id, what, "Add context_before or context_after")
    at = hits[0]
    return source[:at] + content + source[at + len(match) :]


def pattern_replaced(source: str, cell_id: str, compiled: regex.Pattern, content: str) -> str:
    """``source`` with the one match of ``compiled`` (see ``compile_pattern``) replaced by
    ``content``, a template."""
    try:
        found = list(compiled.finditer(source, timeout=PATTERN_TIMEOUT_SECS))
    except TimeoutError:
        raise NbstageError(
            ErrorCode.BAD_PATTERN,
            f"The pattern took longer than {PATTERN_TIMEOUT_SECS} s on cell "
            f"{clipped(cell_id)}, so nothing was replaced. Make it simpler (nested "
            "repeats such as (a+)+ backtrack without end) or use "
            f'replace_match(cell_id="{clipped(cell_id)}", match=..., content=...).',
        ) from None
    _require_one(len(found), cell_id, "pattern", "Make the pattern more specific")
    hit = found[0]
    return source[: hit.start()] + _expand(hit, content) + source[hit.end() :]


def _literal_hits(source: str, match: str, before: str, after: str) -> list[int]:
    """Start offsets of every (possibly overlapping) occurrence that has the context."""
    hits = []
    at = source.find(match)
    while at != -1:
        if source.endswith(before, 0, at) and source.startswith(after, at + len(match)):
            hits.append(at)
        at = source.find(match, at + 1)
    return hits


def _require_one(count: int, cell_id: str, what: str, narrow: str) -> None:
    if count == 0:
        raise NbstageError(
            ErrorCode.NO_MATCH,
            f"The {what} was not found in cell {cell_id}. Call get_cell to see its current "
            "source and retry with text taken from it.",
        )
    if count > 1:
        raise NbstageError(
            ErrorCode.AMBIGUOUS_MATCH,
            f"The {what} matches {count} places in cell {cell_id}, and exactly one must "
            f"match. {narrow} so that only one place qualifies.",
        )


def compile_pattern(pattern: str) -> regex.Pattern:
    """Compile ``pattern`` (re.MULTILINE) once it is known to be small enough
    (``pattern_bounds``); it is not kept in the module's cache, which would hold up to 500
    of them."""
    problem = pattern_problem(pattern)
    if problem is not None:
        raise NbstageError(ErrorCode.BAD_PATTERN, f"{problem} Nothing was replaced.")
    try:
        return regex.compile(pattern, regex.MULTILINE, cache_pattern=False)
    except regex.error as exc:
        raise NbstageError(
            ErrorCode.BAD_PATTERN,
            f"The pattern is not a valid Python regular expression ({exc}). Fix it and retry.",
        ) from None


def _expand(hit: regex.Match, template: str) -> str:
    try:
        return hit.expand(template)
    except (regex.error, IndexError) as exc:
        raise NbstageError(
            ErrorCode.BAD_PATTERN,
            f"The replacement content is not a valid template ({exc}). Refer to groups as "
            r"\1 or \g<name> and write a literal backslash as \\.",
        ) from None
