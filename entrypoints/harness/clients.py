"""The run's MCP clients: each a real ``nbstage mcp`` process driven by the official SDK
client over stdio, held open by a task of its own so a fault can close and reopen it."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import psutil

from nbstage.entrypoints.common.statedir import StatePaths
from nbstage.entrypoints.harness.match import Outcome
from nbstage.entrypoints.harness.model import ClientSpec
from nbstage.entrypoints.harness.procs import (
    NBSTAGE,
    ClientUnusable,
    FaultError,
    Owned,
    alive,
    child_environ,
    wait_gone,
)

CLIENT_TAG_ENV = "NBSTAGE_HARNESS_CLIENT"
"""A unique value in each client's environment, to tell which child process it is."""


def outcome_of(result: Any) -> Outcome:
    texts = [item.text for item in result.content if getattr(item, "type", None) == "text"]
    return Outcome(bool(result.is_error), "\n".join(texts), result.structured_content)


def _child_with_tag(tag: str) -> int | None:
    for child in psutil.Process().children():
        try:
            if child.environ().get(CLIENT_TAG_ENV) == tag:
                return child.pid
        except psutil.Error:
            continue
    return None


class McpClient:
    """One ``nbstage mcp`` process driven by the SDK client, inside a task of its own."""

    def __init__(self, spec: ClientSpec, paths: StatePaths, cwd: Path, env: dict[str, str]):
        self.spec = spec
        self.paths = paths
        self.cwd = cwd
        self.env = env
        self.session: Any = None
        self.pid: int | None = None
        self.pids: list[int] = []
        self.problem: str | None = "it was never started"
        self._stop = anyio.Event()
        self._done = anyio.Event()

    @property
    def running(self) -> bool:
        return self.session is not None

    def _client(self, tag: str, errlog: Any) -> Any:
        from mcp import Client, StdioServerParameters
        from mcp.client.stdio import stdio_client
        from mcp_types import Implementation

        command = ["mcp", "--state-dir", str(self.paths.root), "--no-autostart"]
        params = StdioServerParameters(
            command=NBSTAGE[0],
            args=[*NBSTAGE[1:], *command, "--label", self.spec.label],
            env={**child_environ(self.env), CLIENT_TAG_ENV: tag},
            cwd=str(self.cwd),
        )
        info = Implementation(name="nbstage-harness", title=self.spec.label, version="1")
        transport = stdio_client(params, errlog=errlog)
        return Client(transport, mode=self.spec.mode, client_info=info)

    async def start(self, task_group: anyio.abc.TaskGroup, owned: Owned) -> int:
        """Launch ``nbstage mcp``, connect, and return its pid once it answers."""
        if self.running:
            raise FaultError(f"client {self.spec.name} is already running")
        self._stop, self._done = anyio.Event(), anyio.Event()
        return await task_group.start(self._serve, owned)

    async def _serve(self, owned: Owned, *, task_status: anyio.abc.TaskStatus) -> None:
        tag = uuid.uuid4().hex
        log = self.paths.logs / f"harness-client-{self.spec.name}.log"
        started = False
        try:
            with log.open("a") as errlog:
                async with self._client(tag, errlog) as session:
                    await session.list_tools()
                    self.pid = await self._find_pid(tag)
                    owned.add(self.pid)
                    self.pids.append(self.pid)
                    self.session, self.problem, started = session, None, True
                    task_status.started(self.pid)
                    await self._stop.wait()
        except Exception as exc:
            if not started:
                raise FaultError(f"client {self.spec.name} did not start: {exc!r}") from exc
            self.problem = f"it closed with an error: {exc!r}"
        finally:
            self.session = None
            self._done.set()

    async def _find_pid(self, tag: str) -> int:
        deadline = time.monotonic() + 10
        while (pid := _child_with_tag(tag)) is None:
            if time.monotonic() > deadline:
                raise FaultError("the nbstage mcp process could not be found among our children")
            await anyio.sleep(0.02)
        return pid

    async def stop(self) -> int:
        if not self.running or self.pid is None:
            raise FaultError(f"client {self.spec.name} is not running")
        pid = self.pid
        self._stop.set()
        await self._done.wait()
        self.problem = "it was stopped (stop_client)"
        await wait_gone(pid, f"client {self.spec.name}'s nbstage mcp")
        return pid

    def unusable(self) -> str | None:
        if not self.running:
            return self.problem
        if self.pid is not None and not alive(self.pid):
            self.problem = f"its nbstage mcp process (pid {self.pid}) has exited"
        return self.problem

    async def call(self, tool: str, args: dict[str, Any]) -> Outcome:
        from mcp import MCPError
        from mcp_types import CONNECTION_CLOSED

        problem = self.unusable()
        if problem:
            raise ClientUnusable(f"client {self.spec.name} is unusable: {problem}")
        try:
            result = await self.session.call_tool(tool, args)
        except MCPError as exc:
            if exc.code == CONNECTION_CLOSED or self.unusable():
                self.problem = self.problem or f"its connection closed ({exc.message})"
                raise ClientUnusable(
                    f"client {self.spec.name} is unusable: {self.problem}"
                ) from exc
            return Outcome(True, f"JSON-RPC error {exc.code}: {exc.message}", None, rpc_error=True)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
            self.problem = f"its connection broke ({exc!r})"
            raise ClientUnusable(f"client {self.spec.name} is unusable: {self.problem}") from exc
        return outcome_of(result)


def all_pids(clients: Iterable[McpClient]) -> dict[str, list[int]]:
    return {client.spec.name: list(client.pids) for client in clients}
