"""The tasks an edge keeps (entrypoints/common/kept_tasks.py) end at its stop, those
started while the stop waits included."""

from __future__ import annotations

import asyncio

from nbstage.entrypoints.common.kept_tasks import start_kept, stop_kept


def test_a_task_started_while_the_stop_waits_is_cancelled_too() -> None:
    """A request that comes in while the kept tasks end starts one more: before, the stop
    cancelled only those it saw first, and the late one was left pending."""

    async def main() -> tuple[int, list[bool]]:
        kept: set[asyncio.Task] = set()
        late: list[asyncio.Task] = []

        async def waits_then_hands_over() -> None:
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                late.append(start_kept(kept, asyncio.Event().wait()))
                raise

        start_kept(kept, waits_then_hands_over())
        start_kept(kept, asyncio.Event().wait())
        await asyncio.sleep(0)  # both running
        cancelled = await stop_kept(kept)
        return cancelled, [task.cancelled() for task in late]

    cancelled, late = asyncio.run(main())
    assert late == [True]
    assert cancelled == 3


def test_tasks_that_ended_by_themselves_are_not_counted_as_cancelled() -> None:
    async def main() -> int:
        kept: set[asyncio.Task] = set()
        done = asyncio.Event()
        start_kept(kept, done.wait())
        start_kept(kept, asyncio.Event().wait())
        await asyncio.sleep(0)
        done.set()
        await asyncio.sleep(0)  # the first ends by itself
        return await stop_kept(kept)

    assert asyncio.run(main()) == 1
