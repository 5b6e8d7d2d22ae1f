"""Fixtures the in-process actor tests share."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.unit.actor_harness import ActorBench


@pytest.fixture
def bench() -> Iterator[ActorBench]:
    """One simpleSystemBase actor system, shut down after the test."""
    bench = ActorBench()
    yield bench
    bench.close()
