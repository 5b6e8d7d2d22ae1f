"""The systems bench/revisions.py times, each ready for `1+1` calls while it is open.

Raw jupyter_client, jupymcp and one revision of nbstage, each an async context that
starts what it needs, makes it ready with bench/peers.py's setups and yields a `Ready`: a
call that times itself, and the tags of the server's processes. A failure names the
system it happened in (`Failed`), with the server's stderr file where there is one.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractAsyncContextManager, ExitStack, asynccontextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import anyio
from checkouts import Checkout
from common import raw_kernel
from mcp import Client
from peers import (
    Prepared,
    Setup,
    check_jupymcp_exec,
    check_nbstage_exec,
    connected,
    jupymcp_setup,
    jupymcp_spawn,
    nbstage_latency_setup,
    reap,
    spawned,
    start_daemon,
    stop_daemon,
    tagged_processes,
)

Timed = Callable[[], Awaitable[float]]
"""One `1+1` on a system that is ready; its seconds, client wall-clock."""


@dataclass(frozen=True)
class Ready:
    """A system ready for timed calls, and the tags of its server's processes (none for
    raw, whose client is this process)."""

    call: Timed
    tags: tuple[str, ...] = ()


Opener = Callable[[Path], AbstractAsyncContextManager[Ready]]


class Failed(Exception):
    """One system failed; the round it was in is lost, the run goes on."""

    def __init__(self, name: str, error: BaseException, stderr: Path | None) -> None:
        super().__init__(f"{name}: {error}")
        self.name, self.error, self.stderr = name, error, stderr


def innermost(exc: BaseException) -> BaseException:
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


async def attributed(name: str, step: Awaitable[Any]) -> Any:
    """``step``'s result; a failure not yet named is named after ``name``."""
    try:
        return await step
    except Exception as exc:
        if isinstance(innermost(exc), Failed):
            raise
        raise Failed(name, innermost(exc), None) from exc


def timed(
    name: str, run: Callable[[], Awaitable[Any]], check: Callable[[Any], None], stderr: Path
) -> Timed:
    """The timed call of a server, whose failure names the server and its stderr file."""

    async def once() -> float:
        try:
            start = time.perf_counter()
            result = await run()
            elapsed = time.perf_counter() - start
            check(result)
        except Exception as exc:
            raise Failed(name, innermost(exc), stderr) from exc
        return elapsed

    return once


async def made_ready(name: str, client: Client, setup: Setup, stderr: Path) -> Prepared:
    """list_tools and the setup calls; a failure names the server and its stderr file."""
    try:
        await client.list_tools()
        return await setup(client)
    except Exception as exc:
        raise Failed(name, innermost(exc), stderr) from exc


# --- the systems, each ready for timed calls while its context is open --------------------


@asynccontextmanager
async def raw_system(where: Path) -> AsyncIterator[Ready]:
    """A kernel through jupyter_client, driven from one thread of its own (its client is
    blocking); each call times itself in that thread."""
    with ThreadPoolExecutor(1) as thread, ExitStack() as stack:
        loop = asyncio.get_running_loop()
        once = await loop.run_in_executor(thread, stack.enter_context, raw_kernel(where))
        try:
            yield Ready(lambda: loop.run_in_executor(thread, once))
        finally:
            await loop.run_in_executor(thread, stack.close)


@asynccontextmanager
async def jupymcp_system(where: Path, leaks: list[str]) -> AsyncIterator[Ready]:
    spawn = jupymcp_spawn("jupymcp", where)
    try:
        async with connected(spawn, leaks) as client:
            prepared = await made_ready("jupymcp", client, jupymcp_setup, spawn.stderr)
            call = timed("jupymcp", prepared.run, check_jupymcp_exec, spawn.stderr)
            yield Ready(call, (spawn.tag,))
    finally:
        reap({p.pid for p in tagged_processes(spawn.tag)}, spawn.what, leaks)


@asynccontextmanager
async def revision_system(
    checkout: Checkout, where: Path, leaks: list[str], setup: Setup = nbstage_latency_setup
) -> AsyncIterator[Ready]:
    """This revision's daemon in a fresh state dir, then its `nbstage mcp` on it."""
    state = where / "state"
    tag = uuid.uuid4().hex
    try:
        await anyio.to_thread.run_sync(start_daemon, state, tag, checkout.cli, checkout.env)
        args = ["mcp", "--state-dir", str(state)]
        spawn = spawned(f"nbstage {checkout.name}", where, checkout.cli[0], args, checkout.env)
        async with connected(spawn, leaks) as client:
            prepared = await made_ready(checkout.label, client, setup, spawn.stderr)
            call = timed(checkout.label, prepared.run, check_nbstage_exec, spawn.stderr)
            yield Ready(call, (tag, spawn.tag))
    finally:
        stop = partial(stop_daemon, state, tag, leaks, checkout.cli, checkout.env)
        await anyio.to_thread.run_sync(stop)
