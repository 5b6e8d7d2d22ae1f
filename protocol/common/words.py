"""Counts in the words people read them in: ``1 cell``, ``2 cells``."""

from __future__ import annotations


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"
