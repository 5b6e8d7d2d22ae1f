"""Tasks an edge starts and holds until they end.

asyncio keeps only a weak reference to a running task, so each edge holds its own in a
set, which its stop also cancels and waits for."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any


def start_kept(tasks: set[asyncio.Task], work: Coroutine[Any, Any, Any]) -> asyncio.Task:
    """Run ``work`` as a task that stays in ``tasks`` until it is done."""
    task = asyncio.create_task(work)
    tasks.add(task)
    task.add_done_callback(tasks.discard)
    return task


async def stop_kept(*held: set[asyncio.Task]) -> int:
    """Cancel every task held in ``held`` and wait until each has ended, again for any
    started meanwhile (a request that came in while the others ended); how many ended
    cancelled (the others were ending anyway)."""
    cancelled = 0
    while tasks := [task for tasks in held for task in tasks if not task.done()]:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        cancelled += sum(task.cancelled() for task in tasks)
    return cancelled
