"""The edge's side of ``protocol/common/offload.py``: blocking work on worker threads.

The threads are ``DetachedWorkers``: a stop waits for the work under way for a bounded
time (``drain``), and work still stuck after it never keeps the process alive."""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Callable
from typing import Any

from nbstage.entrypoints.common.worker_threads import DetachedWorkers
from nbstage.protocol.common.errors import a_failure
from nbstage.protocol.common.offload import BlockingWorkDone, BlockingWorkRequested, WorkProgressed

log = logging.getLogger("nbstage.offload")

MOST_THREADS = 32


class OffloadRunner:
    def __init__(
        self, tell: Callable[[Any, Any], None], workers: DetachedWorkers | None = None
    ) -> None:
        self._tell = tell
        self._lanes: dict[str, asyncio.Future] = {}
        self._running: dict[asyncio.Task, Any] = {}
        """Each task under way, held until it ends, with the token of its work."""
        self._workers = workers or DetachedWorkers(MOST_THREADS, "offload")

    def start(self, request: BlockingWorkRequested) -> None:
        previous = self._lanes.get(request.lane) if request.lane is not None else None
        task = asyncio.create_task(self._run(request, previous))
        self._running[task] = request.token
        task.add_done_callback(self._running.pop)
        if request.lane is not None:
            self._lanes[request.lane] = task
            task.add_done_callback(lambda done: self._forget_lane(request.lane, done))

    async def drain(self, timeout: float) -> list[Any]:
        """Wait up to ``timeout`` seconds for all work under way (at stop, so nothing
        acknowledged is cut short); return the tokens of the work still running then."""
        deadline = time.monotonic() + timeout
        while self._running:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            await asyncio.wait(list(self._running), timeout=left)
        return list(self._running.values())

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
            result = await asyncio.get_running_loop().run_in_executor(self._workers, work)
        except BaseException as exc:
            if not a_failure(exc):
                raise
            log.warning("blocking work %r failed: %s", request.token, exc)
            done = BlockingWorkDone(request.token, error=exc)
        else:
            done = BlockingWorkDone(request.token, result)
        self._tell(request.reply_to, done)
