"""The edge's side of ``protocol/offload.py``: blocking work on worker threads."""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable
from typing import Any

from nbstage.entrypoints.kept_tasks import start_kept
from nbstage.protocol.offload import BlockingWorkDone, BlockingWorkRequested, WorkProgressed

log = logging.getLogger("nbstage.offload")


class OffloadRunner:
    def __init__(self, tell: Callable[[Any, Any], None]) -> None:
        self._tell = tell
        self._lanes: dict[str, asyncio.Future] = {}
        self._tasks: set[asyncio.Task] = set()

    def start(self, request: BlockingWorkRequested) -> None:
        previous = self._lanes.get(request.lane) if request.lane is not None else None
        task = start_kept(self._tasks, self._run(request, previous))
        if request.lane is not None:
            self._lanes[request.lane] = task
            task.add_done_callback(lambda done: self._forget_lane(request.lane, done))

    async def drain(self) -> None:
        """Wait for all work under way (at stop, so nothing acknowledged is cut short)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    def _forget_lane(self, lane: str, done: asyncio.Task) -> None:
        if self._lanes.get(lane) is done:
            del self._lanes[lane]

    async def _run(self, request: BlockingWorkRequested, previous: asyncio.Future | None) -> None:
        if previous is not None:
            await asyncio.gather(previous, return_exceptions=True)
        work = request.work
        if request.reports:
            loop = asyncio.get_running_loop()

            def report(line: str) -> None:
                progressed = WorkProgressed(request.token, line)
                loop.call_soon_threadsafe(self._tell, request.reply_to, progressed)

            work = functools.partial(request.work, report)
        try:
            result = await asyncio.to_thread(work)
        except Exception as exc:
            log.warning("blocking work %r failed: %s", request.token, exc)
            done = BlockingWorkDone(request.token, error=exc)
        else:
            done = BlockingWorkDone(request.token, result)
        self._tell(request.reply_to, done)
