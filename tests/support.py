"""Helpers the tests share: a real daemon in a temp state dir, and process accounting."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from nbstage.entrypoints.common.statedir import StatePaths, client_paths, state_paths
from nbstage.entrypoints.control import daemon_control
from nbstage.entrypoints.control.daemon_client import DaemonClient, DaemonNotRunning
from tests import daemon_logs

NBSTAGE = [sys.executable, "-m", "nbstage.entrypoints.cli"]


def wait_until(predicate: Callable[[], Any], timeout: float, what: str) -> Any:
    """Poll an OS fact (a pid exiting, a file appearing) until it holds; fail loudly if not."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.02)


def processes_of_daemon(daemon_pid: int) -> list[psutil.Process]:
    """Every live process of an edge: itself and what it started (kernels, a session child).

    Those inherit NBSTAGE_EDGE_PID from the edge that started them, which is
    how a test finds every process of one tree without naming them.
    """
    found = []
    for proc in psutil.process_iter():
        try:
            mine = proc.pid == daemon_pid or proc.environ().get("NBSTAGE_EDGE_PID") == str(
                daemon_pid
            )
            if mine and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
        except psutil.Error:
            continue
    return found


def edge_tree_gone(pid: int) -> bool:
    """True once the edge ``pid`` has exited (a zombie counts) and nothing it started runs."""
    try:
        if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
            return False
    except psutil.NoSuchProcess:
        pass
    return not processes_of_daemon(pid)


def wait_edge_tree_gone(pid: int, timeout: float = 30.0) -> None:
    """Wait until an ``nbstage mcp`` process and its session child are gone."""
    wait_until(
        lambda: edge_tree_gone(pid), timeout, f"nbstage mcp pid {pid} and its actors to exit"
    )


def tcp_listeners(processes: list[psutil.Process]) -> list[str]:
    """Every TCP port these processes listen on, as "name pid address"."""
    return [
        f"{proc.name()} {proc.pid} {conn.laddr}"
        for proc in processes
        for conn in proc.net_connections(kind="inet")
        if conn.status == psutil.CONN_LISTEN
    ]


def cli_env(state_dir: Path, env: dict[str, str] | None) -> dict[str, str]:
    """The environment an nbstage command of a test runs with."""
    return {**os.environ, "NBSTAGE_STATE_DIR": str(state_dir), **(env or {})}


def run_cli(*args: str, state_dir: Path, env: dict[str, str] | None = None, timeout: float = 90):
    return subprocess.run(
        [*NBSTAGE, *args],
        env=cli_env(state_dir, env),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@dataclass
class RunningDaemon:
    paths: StatePaths
    env: dict[str, str]
    pid: int

    def client(self, timeout: float = 60.0) -> DaemonClient:
        return DaemonClient(self.paths.socket, timeout=timeout)

    def request(self, kind: str, **fields: Any) -> dict[str, Any]:
        with self.client() as client:
            return client.request(kind, **fields)

    def status(self) -> dict[str, Any]:
        return self.request("status")

    def stop(self) -> None:
        """What `nbstage daemon stop` does, in this process (the CLI has its own tests)."""
        daemon_control.stop(state_paths(self.paths.root))

    def kill(self) -> None:
        os.kill(self.pid, 9)


def start_daemon(state_dir: Path, env: dict[str, str] | None = None) -> RunningDaemon:
    """What `nbstage daemon start` does, in this process, so a test pays for no CLI."""
    env = env or {}
    root = state_paths(state_dir).root
    daemon_logs.started(root)
    try:
        daemon_control.start_background(state_paths(state_dir), cli_env(state_dir, env))
    except Exception:
        daemon_logs.stopped(root, cleanly=True)  # none runs; a later test's failure is not its
        raise
    paths = client_paths(state_dir)
    with DaemonClient(paths.socket) as client:
        pid = client.request("identity")["pid"]
    return RunningDaemon(paths, env, pid)


@contextmanager
def daemon_running(state_dir: Path, env: dict[str, str] | None = None) -> Iterator[RunningDaemon]:
    """A daemon for the body of the block; afterwards, stopped with nothing left behind."""
    daemon = start_daemon(state_dir, env)
    try:
        yield daemon
    finally:
        try:
            assert_daemon_gone(daemon)
        except BaseException:
            daemon_logs.stopped(daemon.paths.root, cleanly=False)
            raise
        daemon_logs.stopped(daemon.paths.root, cleanly=True)


def assert_daemon_gone(daemon: RunningDaemon) -> None:
    """Stop whatever daemon runs on the state dir (a test may have restarted it), then
    require that no process of it, or of the one the test started, remains."""
    pids = {daemon.pid}
    with contextlib.suppress(DaemonNotRunning, OSError):
        pids.add(daemon.request("identity")["pid"])
    daemon.stop()
    for pid in pids:
        wait_until(lambda pid=pid: not processes_of_daemon(pid), 15, f"daemon {pid} to exit")


# --- kernels and rooms, as the kernel tests see them --------------------------------------


def pid_gone(pid: int) -> bool:
    """True once a process no longer runs (exited, or a zombie awaiting its parent)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def room_view(daemon: RunningDaemon, notebook_id: str) -> dict[str, Any] | None:
    """The daemon's list_rooms entry for one notebook, or None when it is not resident."""
    rooms = daemon.request("list_rooms")["rooms"]
    return next((room for room in rooms if room["notebook_id"] == notebook_id), None)


def run_cell(
    client: DaemonClient, notebook_id: str, source: str, wait_secs: float = 30.0
) -> dict[str, Any]:
    """Append a code cell and execute it; returns the execution as the daemon reports it."""
    cell_id = client.request("create_cell", notebook_id=notebook_id, source=source)["cell_id"]
    answer = client.request(
        "execute", notebook_id=notebook_id, cell_id=cell_id, wait_secs=wait_secs
    )
    return answer["execution"]


def printed(execution: dict[str, Any]) -> str:
    """The text a finished execution printed; it must have run to the end."""
    assert execution["status"] == "done", execution
    return "".join(out.get("text", "") for out in execution["outputs"])


# --- MCP clients: the official SDK driving a real `nbstage mcp` ----------------------------


class McpClientSession:
    """``async with``: an SDK ``mcp.Client`` on a fresh ``nbstage mcp`` process for ``daemon``.

    The server runs with ``cwd`` (default: the directory that holds the state dir), shows
    up in the daemon as ``label`` (its clientInfo title), and speaks ``mode`` ("legacy"
    or "2026-07-28"). ``extensions`` maps an extension's identifier to the settings the
    client declares for it (``capabilities.extensions``). Leaving the block closes the
    client; then the server process and every actor process it started must be gone.
    """

    def __init__(
        self,
        daemon: RunningDaemon,
        mode: str,
        label: str,
        cwd: Path | str | None,
        no_autostart: bool = False,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> None:
        import uuid

        from mcp import Client, StdioServerParameters
        from mcp.client.extension import advertise
        from mcp_types import Implementation

        self.tag = uuid.uuid4().hex
        params = StdioServerParameters(
            command=NBSTAGE[0],
            args=[
                *NBSTAGE[1:],
                "mcp",
                "--state-dir",
                str(daemon.paths.root),
                *(["--no-autostart"] if no_autostart else []),
            ],
            env={**os.environ, **daemon.env, "NBSTAGE_TEST_CLIENT_TAG": self.tag},
            cwd=str(cwd if cwd is not None else daemon.paths.root.parent),
        )
        info = Implementation(name=label, title=label, version="1")
        declared = [advertise(name, settings) for name, settings in (extensions or {}).items()]
        self.client = Client(params, mode=mode, client_info=info, extensions=declared or None)
        self.server_pid: int | None = None

    async def __aenter__(self) -> Any:
        import anyio

        await self.client.__aenter__()
        # Popen returns once exec has closed its error pipe, which is before the kernel
        # has set up the new image's environment: for a moment the tag cannot be read.
        self.server_pid = await anyio.to_thread.run_sync(
            wait_until, self._tagged_child, 10, "the nbstage mcp process of this client"
        )
        return self.client

    def _tagged_child(self) -> int | None:
        for child in psutil.Process().children():
            try:
                if child.environ().get("NBSTAGE_TEST_CLIENT_TAG") == self.tag:
                    return child.pid
            except psutil.Error:
                continue
        return None

    async def __aexit__(self, *exc_info: Any) -> None:
        import anyio

        await self.client.__aexit__(*exc_info)
        pid = self.server_pid
        assert pid is not None, "the nbstage mcp process of this client was never found"

        await anyio.to_thread.run_sync(wait_edge_tree_gone, pid)


def mcp_client(
    daemon: RunningDaemon,
    mode: str,
    label: str = "tester",
    cwd: Path | str | None = None,
    no_autostart: bool = False,
    extensions: dict[str, dict[str, Any]] | None = None,
) -> McpClientSession:
    """``async with mcp_client(daemon, "legacy") as client:`` — see McpClientSession."""
    return McpClientSession(daemon, mode, label, cwd, no_autostart, extensions)


# --- helpers for tests that drive MCP clients -------------------------------------------


def run_bounded(body: Callable[..., Any], *args: Any, budget: float = 120.0) -> None:
    """Run an async test body under a time budget; a lone failure is raised unwrapped."""
    import anyio

    async def bounded() -> None:
        with anyio.fail_after(budget):
            await body(*args)

    try:
        anyio.run(bounded)
    except BaseExceptionGroup as group:
        leaves = list(_exception_leaves(group))
        if len(leaves) == 1:
            raise leaves[0] from None
        raise


def _exception_leaves(group: BaseExceptionGroup) -> Iterator[BaseException]:
    for inner in group.exceptions:
        if isinstance(inner, BaseExceptionGroup):
            yield from _exception_leaves(inner)
        else:
            yield inner


def texts_of(result: Any) -> list[str]:
    return [item.text for item in result.content if item.type == "text"]


async def call_ok(client: Any, name: str, **arguments: Any) -> dict[str, Any]:
    """Call a tool that must succeed; return its structuredContent."""
    result = await client.call_tool(name, arguments)
    assert not result.is_error, f"{name}({arguments}) failed: {texts_of(result)}"
    return result.structured_content


def client_record(daemon: RunningDaemon, label: str) -> dict[str, Any] | None:
    """What the daemon knows of the connected `nbstage mcp` with this label."""
    clients = daemon.request("clients")["clients"]
    return next((c for c in clients if c["label"] == label), None)


def session_manager_pid(daemon: RunningDaemon, label: str) -> int:
    """The live session manager pid of a client, as its watch subscription reports it."""

    def live_pid() -> int | None:
        record = client_record(daemon, label)
        pid = record["session_manager_pid"] if record else None
        return pid if pid is not None and not pid_gone(pid) else None

    return wait_until(live_pid, 20, f"a live session manager for {label}")


ARTIFACTS = Path(__file__).resolve().parents[1] / "build" / "test-artifacts"
"""What a test keeps for a person to look at after the run (screenshots); not in git."""


def artifact(name: str) -> Path:
    """Where a test keeps the artifact ``name``: in ``build/test-artifacts/``, which
    outlives the run's temp dir."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS / name
