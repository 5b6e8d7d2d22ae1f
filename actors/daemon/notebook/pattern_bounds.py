"""Whether ``replace_regex`` may compile a pattern at all: pure, checked before compiling.

Matching has a time limit (``document.PATTERN_TIMEOUT_SECS``); compiling has none, and the
``regex`` module offers none. Its cost follows the pattern's length and, above all, its
counted repeats: ``a{1000000}`` is compiled as a million copies of ``a`` (0.4 s, 274 MB),
and the 13 characters ``a{4294967294}`` exhaust the memory of the process. So a pattern
is refused when it is longer than ``MAX_PATTERN_CHARS`` or when its counted repeats,
multiplied out as the compiler does, come to more than ``MAX_PATTERN_WEIGHT`` items.
The weight is an estimate from a light scan of the syntax; it never undercounts a repeat
that the compiler expands (the lower bound of ``{m,n}``, nested repeats multiplied).
"""

from __future__ import annotations

import re

MAX_PATTERN_CHARS = 10_000
MAX_PATTERN_WEIGHT = 10_000
"""About 1.5 MB and a few milliseconds of compiling."""

_COUNTED = re.compile(r"\{(\d*)(?:,(\d*))?\}")


def pattern_problem(pattern: str) -> str | None:
    """Why ``pattern`` is too large to compile, or None."""
    if len(pattern) > MAX_PATTERN_CHARS:
        return (
            f"The pattern is {len(pattern):,} characters long, over the "
            f"{MAX_PATTERN_CHARS:,} that replace_regex compiles. Match a shorter, "
            "distinctive part, or use replace_match(cell_id=..., match=..., content=...) or "
            "set_cell(cell_id=..., source=...)."
        )
    weight = pattern_weight(pattern)
    if weight > MAX_PATTERN_WEIGHT:
        return (
            f"The pattern's counted repeats ({{n}}, {{n,m}}) expand to about {weight:,} "
            f"items when compiled, over the {MAX_PATTERN_WEIGHT:,} allowed. Use smaller "
            "counts or an open repeat such as a+."
        )
    return None


def pattern_weight(pattern: str) -> int:
    """The items a compiled ``pattern`` holds, counting each counted repeat's lower bound
    as that many copies of what it repeats. Stops counting once far over the limit."""
    levels: list[list[int]] = [[0, 0]]
    """Per open group: [weight so far, weight of its last atom]."""
    at = 0
    while at < len(pattern):
        char = pattern[at]
        atom = 1
        if char == "\\":
            at += 2
        elif char == "[":
            at = _class_end(pattern, at)
        elif char == "(" and pattern.startswith("(?#", at):
            close = pattern.find(")", at)
            at = len(pattern) if close < 0 else close + 1
            continue
        elif char == "(":
            levels.append([0, 0])
            at += 1
            continue
        elif char == ")" and len(levels) > 1:
            atom = levels.pop()[0]
            at += 1
        elif char == "{" and (counted := _COUNTED.match(pattern, at)) and counted.group(0) != "{}":
            low = int(counted.group(1) or 0)
            level = levels[-1]
            level[0] += level[1] * (low - 1)
            level[1] *= low
            at = counted.end()
            if level[0] > MAX_PATTERN_WEIGHT * 1000:
                return level[0]
            continue
        else:
            at += 1
        levels[-1][0] += atom
        levels[-1][1] = atom
    while len(levels) > 1:
        inner = levels.pop()[0]
        levels[-1][0] += inner
    return levels[0][0]


def _class_end(pattern: str, start: int) -> int:
    """The index just past the character class that opens at ``start``."""
    at = start + 1
    if pattern.startswith("^", at):
        at += 1
    if pattern.startswith("]", at):
        at += 1
    while at < len(pattern):
        if pattern[at] == "\\":
            at += 2
        elif pattern[at] == "]":
            return at + 1
        else:
            at += 1
    return len(pattern)
