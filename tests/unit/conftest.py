"""Fixtures the in-process actor tests share."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.unit.actor_harness import ActorBench, HoldingRecorder


@pytest.fixture
def bench() -> Iterator[ActorBench]:
    """One simpleSystemBase actor system, shut down after the test."""
    bench = ActorBench()
    yield bench
    bench.close()


@pytest.fixture
def holding_bench() -> Iterator[ActorBench]:
    """A bench whose recorder can hold offloaded work of one kind (HoldAppends)."""
    bench = ActorBench()
    bench.recorder = bench.system.createActor(HoldingRecorder)
    yield bench
    bench.close()
