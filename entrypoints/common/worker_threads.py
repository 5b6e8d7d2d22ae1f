"""Worker threads that never hold their process up when it ends.

``concurrent.futures.ThreadPoolExecutor`` (asyncio's default executor) joins its threads
at exit: a worker stuck in a system call (a read that a hung file system never answers)
would keep a stopping daemon alive, holding its lock, for as long as the call lasts.
These threads are daemon threads, left behind when the process exits, so the daemon's
stop waits for blocking work only as long as it chooses to (``OffloadRunner.drain``).
"""

from __future__ import annotations

import concurrent.futures
import functools
import queue
import threading
from collections.abc import Callable
from typing import Any

_Job = tuple[concurrent.futures.Future, Callable[[], Any]]


class DetachedWorkers(concurrent.futures.Executor):
    """Up to ``most`` daemon threads; a new one starts only when none is idle."""

    def __init__(self, most: int, name: str = "worker") -> None:
        self._most = most
        self._name = name
        self._jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self._idle = threading.Semaphore(0)
        self._lock = threading.Lock()
        self._count = 0

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any):
        future: concurrent.futures.Future = concurrent.futures.Future()
        self._jobs.put((future, functools.partial(fn, *args, **kwargs)))
        if not self._idle.acquire(blocking=False):
            self._add_thread()
        return future

    def _add_thread(self) -> None:
        with self._lock:
            if self._count >= self._most:
                return
            self._count += 1
            name = f"{self._name}-{self._count}"
        threading.Thread(target=self._work, name=name, daemon=True).start()

    def _work(self) -> None:
        while True:
            future, call = self._jobs.get()
            if future.set_running_or_notify_cancel():
                try:
                    result = call()
                except BaseException as exc:
                    future.set_exception(exc)
                else:
                    future.set_result(result)
            del future, call
            self._idle.release()
