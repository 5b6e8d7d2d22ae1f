"""The processes a harness run owns: its daemon, its ``nbstage mcp`` clients, and the reaper.

Processes are found through what they report (the daemon's ``identity``, ``clients`` and
``list_rooms``) or through the ``NBSTAGE_EDGE_PID`` every actor and kernel inherits from
the process that started it, never by name.
"""

from __future__ import annotations

import os
import signal
import sys
import time
import uuid
from collections.abc import Iterable
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import psutil

from nbstage.entrypoints.daemon_client import DaemonClient
from nbstage.entrypoints.daemon_control import VERSION_ENV, stop
from nbstage.entrypoints.harness_match import Outcome
from nbstage.entrypoints.harness_model import ClientSpec
from nbstage.entrypoints.statedir import StatePaths

NBSTAGE = [sys.executable, "-m", "nbstage.entrypoints.cli"]
EDGE_PID_ENV = "NBSTAGE_EDGE_PID"
CLIENT_TAG_ENV = "NBSTAGE_HARNESS_CLIENT"
GONE_SECS = 15.0


class FaultError(Exception):
    """A fault or a process operation could not be carried out."""


class ClientUnusable(Exception):
    """The client's connection is gone; calls cannot be sent until start_client."""


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


async def wait_gone(pid: int, what: str, timeout: float = GONE_SECS) -> None:
    with anyio.move_on_after(timeout):
        while alive(pid):
            await anyio.sleep(0.02)
        return
    raise FaultError(f"{what} (pid {pid}) still runs {timeout:.0f}s after being told to end")


def sigkill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        raise FaultError(f"pid {pid} had already exited") from None


class Owned:
    """Every process the run started or was told about, kept for the last-resort sweep."""

    def __init__(self) -> None:
        self.started: dict[int, float] = {}

    def add(self, pid: int) -> None:
        try:
            self.started.setdefault(pid, psutil.Process(pid).create_time())
        except psutil.NoSuchProcess:
            self.started.setdefault(pid, 0.0)

    def _same_process(self, proc: psutil.Process) -> bool:
        return self.started.get(proc.pid) == proc.create_time()

    def _edges(self) -> set[str]:
        """Recorded pids whose process is gone or still ours (a reused pid is someone else's)."""
        edges = set()
        for pid in self.started:
            try:
                proc = psutil.Process(pid)
                if not self._same_process(proc):
                    continue
            except psutil.NoSuchProcess:
                pass
            edges.add(str(pid))
        return edges

    def leftovers(self) -> list[psutil.Process]:
        edges = self._edges()
        found = []
        for proc in psutil.process_iter():
            try:
                mine = self._same_process(proc) or proc.environ().get(EDGE_PID_ENV) in edges
                if mine and proc.status() != psutil.STATUS_ZOMBIE:
                    found.append(proc)
            except psutil.Error:
                continue
        return found

    def kill_leftovers(self, grace: float) -> list[int]:
        """SIGKILL whatever of ours still runs after ``grace`` seconds; returns those pids."""
        deadline = time.monotonic() + grace
        while (found := self.leftovers()) and time.monotonic() < deadline:
            time.sleep(0.1)
        killed = []
        for proc in found:
            try:
                proc.kill()
                killed.append(proc.pid)
            except psutil.Error:
                continue
        return killed


class Daemon:
    """The run's daemon: started through ``nbstage daemon start`` with the run's settings."""

    def __init__(self, paths: StatePaths, env: dict[str, str], owned: Owned) -> None:
        self.paths = paths
        self.env = env
        self.owned = owned
        self.version: str | None = os.environ.get(VERSION_ENV) or None
        self.pids: list[int] = []

    def request(self, kind: str, **fields: Any) -> dict[str, Any]:
        with DaemonClient(self.paths.socket, timeout=10.0) as client:
            return client.request(kind, **fields)

    async def ask(self, kind: str, **fields: Any) -> dict[str, Any]:
        return await anyio.to_thread.run_sync(partial(self.request, kind, **fields))

    def _environ(self) -> dict[str, str]:
        env = {**os.environ, **self.env}
        if self.version:
            env[VERSION_ENV] = self.version
        return env

    async def start(self) -> dict[str, Any]:
        command = [*NBSTAGE, "daemon", "start", "--state-dir", str(self.paths.root)]
        done = await anyio.run_process(command, env=self._environ(), check=False)
        if done.returncode != 0:
            said = (done.stdout + done.stderr).decode(errors="replace").strip()
            raise FaultError(f"nbstage daemon start exited {done.returncode}: {said[-300:]}")
        identity = await self.ask("identity")
        self.owned.add(identity["pid"])
        if identity["pid"] not in self.pids:
            self.pids.append(identity["pid"])
        if self.version and identity["version"] != self.version:
            raise FaultError(
                f"the daemon reports version {identity['version']}, not {self.version}"
            )
        return identity

    async def stop(self) -> int | None:
        return await anyio.to_thread.run_sync(stop, self.paths)

    async def kill(self) -> int:
        pid = (await self.ask("identity"))["pid"]
        sigkill(pid)
        await wait_gone(pid, "the killed daemon")
        return pid


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
            env={**os.environ, **self.env, CLIENT_TAG_ENV: tag},
            cwd=str(self.cwd),
        )
        info = Implementation(name="nbstage-harness", title=self.spec.label, version="1")
        transport = stdio_client(params, errlog=errlog)
        return Client(transport, mode=self.spec.mode, client_info=info)

    async def start(self, task_group: anyio.abc.TaskGroup, owned: Owned) -> int:
        if self.running:
            raise FaultError(f"client {self.spec.name} is already running")
        self._stop, self._done = anyio.Event(), anyio.Event()
        await task_group.start(self._serve, owned)
        assert self.pid is not None
        return self.pid

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
                    task_status.started()
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
