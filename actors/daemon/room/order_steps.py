"""The steps that bring the shared document's list of cells from one order of cell ids to
another: deletes and inserts by index, as the Y array takes them.

Pure. A moved cell is a delete and an insert, as JupyterLab's front end moves one (the
Y array's own move is a yrs feature the front end's yjs cannot read). The cells kept in
place are a longest run that is in order in both lists, so one create, delete or move in
a notebook of any size is one or two steps, found in O(n log n).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable
from dataclasses import dataclass
from operator import ne


@dataclass(frozen=True)
class Delete:
    index: int


@dataclass(frozen=True)
class Insert:
    index: int
    cell_id: str


Step = Delete | Insert


def steps(before: list[str], after: list[str]) -> list[Step]:
    """Deletes first, from the highest index down, then inserts from the lowest index up;
    applied in order to ``before`` they give ``after``. Ids are unique in each list."""
    head, tail = _same_ends(before, after)
    old, new = before[head : len(before) - tail], after[head : len(after) - tail]
    staying = _kept_in_place(old, new)
    out: list[Step] = [
        Delete(head + index) for index in reversed(range(len(old))) if old[index] not in staying
    ]
    out += [
        Insert(head + index, cell_id) for index, cell_id in enumerate(new) if cell_id not in staying
    ]
    return out


def _same_ends(before: list[str], after: list[str]) -> tuple[int, int]:
    """How many ids the two lists share at their start, and then at their end: they stay
    where they are, so one change in a big notebook sorts only the few ids around it."""
    shorter = min(len(before), len(after))
    head = _first_difference(before, after, shorter)
    tail = _first_difference(reversed(before), reversed(after), shorter - head)
    return head, tail


def _first_difference(one: Iterable[str], other: Iterable[str], most: int) -> int:
    """Where the two first differ, at most ``most`` (compared in C's loop, not Python's)."""
    differs = list(map(ne, one, other))
    try:
        return differs.index(True, 0, most)
    except ValueError:
        return most


def _kept_in_place(before: list[str], after: list[str]) -> set[str]:
    """A longest subsequence of ``before`` whose ids come in the same order in ``after``
    (patience sorting on their places in ``after``)."""
    place = {cell_id: index for index, cell_id in enumerate(after)}
    common = [cell_id for cell_id in before if cell_id in place]
    tails: list[int] = []
    """tails[k]: the smallest place in ``after`` that ends an ordered run of length k + 1."""
    ends: list[int] = []
    """ends[k]: the index in ``common`` of that run's last id."""
    previous: list[int] = [-1] * len(common)
    for at, cell_id in enumerate(common):
        k = bisect_left(tails, place[cell_id])
        if k == len(tails):
            tails.append(place[cell_id])
            ends.append(at)
        else:
            tails[k], ends[k] = place[cell_id], at
        previous[at] = ends[k - 1] if k else -1
    kept: set[str] = set()
    at = ends[-1] if ends else -1
    while at != -1:
        kept.add(common[at])
        at = previous[at]
    return kept
