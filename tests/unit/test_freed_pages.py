"""A kept freeze gives the pages the live document held back to the system (freed_pages.py)."""

from __future__ import annotations

import sys

import psutil
import pytest

from nbstage.actors.daemon.room import freed_pages


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="malloc_trim is glibc's")
def test_pages_freed_between_live_blocks_go_back_to_the_system() -> None:
    """Freed blocks with live ones among them, as the daemon's are: glibc keeps their
    pages until trimmed."""
    process = psutil.Process()
    blocks = [bytes(4000) + bytes([i % 256]) for i in range(10_000)]  # 40 MB, malloc's
    live = blocks[::16]
    del blocks
    before = process.memory_info().rss
    if not freed_pages.release():
        pytest.skip("this C library has no malloc_trim")
    given_back = before - process.memory_info().rss
    del live  # alive until now, between the freed blocks
    assert given_back > 20 * 2**20
