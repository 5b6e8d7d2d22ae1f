"""`1+1` latency of nbstage next to a peer MCP server and the raw jupyter_client limit.

In one run, against the same machine load:

1. raw jupyter_client over IPC (the limit);
2. jupymcp 0.3.2, a peer MCP server, over stdio (`execute(code)`), installed by this
   script into its own venv (bench/.venvs/jupymcp) the first time;
3. nbstage's `execute_cell` through `nbstage mcp` over stdio;
4. nbstage through the daemon socket alone (DaemonClient);
5. an MCP server that answers at once (bench/instant_server.py): the SDK client's and
   the pipes' own cost, under any stdio server's latency.

The calls are split into rounds (``--rounds``), each system in turn and the order reversed
every other round, so that a shared machine whose speed drifts during the run weighs on
every system alike. Both MCP servers are driven by the official SDK client (`mcp.Client`,
legacy handshake),
their stderr kept in files. Each latency is client wall-clock around one call: N timed
calls after WARMUP untimed ones; jupymcp's kernel uses its own default transport (TCP).
Also: cold start of both MCP servers (spawn, with no nbstage daemon and a fresh state
dir, to the first `1+1` result, median of 3) and the idle footprint of `nbstage mcp`
(its own process tree, without the daemon and kernels, after initialize and one call).

    .venv/bin/python bench/peers.py [--runs 200] [--rounds 4] [--json results.json]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from importlib.metadata import version as installed_version
from pathlib import Path
from typing import Any

import anyio
import orjson
import psutil
from common import NBSTAGE, WARMUP, raw_roundtrips, summarize, warm_client_library
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp_types import Implementation

from nbstage.entrypoints.common.lifelines import EDGE_PID_ENV
from nbstage.entrypoints.common.statedir import state_paths
from nbstage.entrypoints.control.daemon_client import DaemonClient

BENCH = Path(__file__).resolve().parent
JUPYMCP_VERSION = "0.3.2"
JUPYMCP_VENV = BENCH / ".venvs" / "jupymcp"
JUPYMCP_BIN = JUPYMCP_VENV / "bin" / "jupymcp"
COLD_TRIES = 3
CALL_TIMEOUT = 120.0
"""Longest any single MCP request may take before the run gives up on that system."""
PHASE_BASE_BUDGET = 180.0
PHASE_PER_CALL_BUDGET = 2.0
"""A phase of N calls must finish within BASE + N * PER_CALL seconds."""
TAG_ENV = "NBSTAGE_PEERS_BENCH_TAG"
"""Set on every process this script spawns (and inherited by theirs), to find them all."""
SETTLE_SECS = 1.5
SETTLE_LIMIT = 15.0
"""The footprint is taken once the process tree has not changed for SETTLE_SECS."""
REAP_TIMEOUT = 20.0
"""How long a closed server and its children get to exit before they are killed."""
COLD_PATIENCE = 60.0
RETRY_PAUSE = 0.1
"""A cold create_notebook that fails is retried every RETRY_PAUSE s for up to COLD_PATIENCE s."""
STDERR_TAIL = 40
"""Lines of a failed server's stderr kept in the JSON results."""
INFO = Implementation(name="peers-bench", title="peers-bench", version="1")


def budget(calls: int) -> float:
    return PHASE_BASE_BUDGET + calls * PHASE_PER_CALL_BUDGET


def log(message: str) -> None:
    print(f"[peers] {message}", file=sys.stderr, flush=True)


# --- statistics ---------------------------------------------------------------------------


def stats(samples: list[float]) -> dict[str, Any]:
    """Median, p90 and p99 (nearest rank, as common.summarize) in milliseconds."""
    ordered = sorted(samples)
    median, p90 = summarize(ordered)
    return {
        "n": len(ordered),
        "median_ms": median,
        "p90_ms": p90,
        "p99_ms": ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000,
        "mean_ms": statistics.fmean(ordered) * 1000,
        "max_ms": ordered[-1] * 1000,
    }


async def timed_calls(
    call: Callable[[], Awaitable[Any]], check: Callable[[Any], None], runs: int
) -> list[float]:
    """WARMUP + runs calls, one after another; the wall-clock of the last `runs`."""
    samples = []
    for i in range(WARMUP + runs):
        start = time.perf_counter()
        result = await call()
        elapsed = time.perf_counter() - start
        check(result)
        if i >= WARMUP:
            samples.append(elapsed)
    return samples


# --- processes ----------------------------------------------------------------------------


def tagged_env(tag: str, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    return {**os.environ, **(extra or {}), TAG_ENV: tag}


def environ_of(proc: psutil.Process) -> dict[str, str]:
    try:
        return proc.environ()
    except psutil.Error:
        return {}


def tagged_processes(tag: str) -> list[psutil.Process]:
    """Every live process that carries this run's tag in its environment."""
    found = []
    for proc in psutil.process_iter():
        try:
            if proc.status() == psutil.STATUS_ZOMBIE:
                continue
        except psutil.Error:
            continue
        if environ_of(proc).get(TAG_ENV) == tag:
            found.append(proc)
    return found


def descendants(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        return []


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def server_pid(tag: str) -> int | None:
    """The pid of the server this process spawned with ``tag`` (a direct child)."""
    for child in psutil.Process().children():
        if environ_of(child).get(TAG_ENV) == tag:
            return child.pid
    return None


def reap(pids: set[int], what: str, leaks: list[str]) -> None:
    """Wait (bounded) until every pid is gone; kill and record any that stays."""
    deadline = time.monotonic() + REAP_TIMEOUT
    while time.monotonic() < deadline and any(alive(p) for p in pids):
        time.sleep(0.05)
    for pid in sorted(p for p in pids if alive(p)):
        with contextlib.suppress(psutil.Error):
            name = " ".join(psutil.Process(pid).cmdline()[:6])
            leaks.append(f"{what}: pid {pid} still alive {REAP_TIMEOUT:.0f}s after close: {name}")
            log(leaks[-1] + "; killing it")
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


def stop_daemon(
    state: Path,
    tag: str,
    leaks: list[str],
    cli: Sequence[str] = NBSTAGE,
    extra_env: Mapping[str, str] | None = None,
) -> None:
    """`nbstage daemon stop` for this state dir, then no process of this tag may remain.

    ``cli`` and ``extra_env`` pick another install of nbstage (bench/revisions.py)."""
    try:
        subprocess.run(
            [*cli, "daemon", "stop", "--state-dir", str(state)],
            env=tagged_env(tag, extra_env),
            capture_output=True,
            timeout=90,
            check=False,
        )
    except subprocess.TimeoutExpired:
        leaks.append(f"`nbstage daemon stop --state-dir {state}` took over 90 s")
    reap({p.pid for p in tagged_processes(tag)}, f"after daemon stop ({state.name})", leaks)


# --- jupymcp's venv -----------------------------------------------------------------------


def jupymcp_installed() -> bool:
    python = JUPYMCP_VENV / "bin" / "python"
    if not (python.exists() and JUPYMCP_BIN.exists()):
        return False
    probe = subprocess.run(
        [str(python), "-c", "import importlib.metadata as m; print(m.version('jupymcp'))"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return probe.stdout.strip() == JUPYMCP_VERSION


def ensure_jupymcp() -> None:
    """Create bench/.venvs/jupymcp with jupymcp==0.3.2 unless it is there already."""
    if jupymcp_installed():
        return
    python = JUPYMCP_VENV / "bin" / "python"
    if not python.exists():
        log(f"creating {JUPYMCP_VENV}")
        JUPYMCP_VENV.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "venv", str(JUPYMCP_VENV)], check=True, timeout=300)
    log(f"installing jupymcp=={JUPYMCP_VERSION} into {JUPYMCP_VENV} (a minute or two)")
    subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", f"jupymcp=={JUPYMCP_VERSION}"],
        check=True,
        timeout=1200,
    )
    if not jupymcp_installed():
        raise RuntimeError(f"jupymcp {JUPYMCP_VERSION} is not importable in {JUPYMCP_VENV}")


# --- the two MCP servers ------------------------------------------------------------------


@dataclass(frozen=True)
class Spawn:
    """How to start one MCP server process, and where its stderr goes."""

    what: str
    params: StdioServerParameters
    tag: str
    stderr: Path


def spawned(
    what: str,
    cwd: Path,
    command: str,
    args: list[str],
    extra_env: Mapping[str, str] | None = None,
) -> Spawn:
    """A server started as ``command args`` in ``cwd``, tagged so its processes can be found."""
    tag = uuid.uuid4().hex
    env = tagged_env(tag, extra_env)
    params = StdioServerParameters(command=command, args=args, env=env, cwd=str(cwd))
    return Spawn(what, params, tag, cwd / f"stderr-{tag[:8]}.log")


def nbstage_spawn(what: str, state: Path, cwd: Path) -> Spawn:
    return spawned(what, cwd, NBSTAGE[0], [*NBSTAGE[1:], "mcp", "--state-dir", str(state)])


def instant_spawn(what: str, cwd: Path) -> Spawn:
    return spawned(what, cwd, sys.executable, [str(BENCH / "instant_server.py")])


def jupymcp_spawn(what: str, cwd: Path) -> Spawn:
    workspace = cwd / "workspace"
    workspace.mkdir(parents=True, exist_ok=True)
    return spawned(what, cwd, str(JUPYMCP_BIN), ["--workspace-root", str(workspace)])


@asynccontextmanager
async def connected(spawn: Spawn, leaks: list[str]) -> AsyncIterator[Client]:
    """An SDK client on a fresh server process, initialized with the legacy handshake.

    On the way out the client is closed, and then the server and its children must end
    (bounded wait, then killed and recorded as a leak). A daemon the server started
    (nbstage autostart) is left to `nbstage daemon stop`."""
    tree: set[int] = set()
    spawn.stderr.parent.mkdir(parents=True, exist_ok=True)
    with open(spawn.stderr, "a") as errlog:
        transport = stdio_client(spawn.params, errlog=errlog)
        client = Client(
            transport, mode="legacy", client_info=INFO, read_timeout_seconds=CALL_TIMEOUT
        )
        try:
            async with client:
                try:
                    yield client
                finally:
                    tree = server_tree(spawn.tag)
        finally:
            reap(tree, spawn.what, leaks)


def server_tree(tag: str) -> set[int]:
    """The pids of the server spawned with ``tag`` and its children, minus any daemon."""
    pid = server_pid(tag)
    if pid is None:
        return set()
    tree = {pid, *(p.pid for p in descendants(pid))}
    for proc in tagged_processes(tag):
        if is_daemon(proc) and proc.pid != pid:
            tree -= {proc.pid, *(p.pid for p in descendants(proc.pid))}
    return tree


def is_daemon(proc: psutil.Process) -> bool:
    """An `nbstage daemon start --foreground` process (as autostart runs it)."""
    try:
        args = proc.cmdline()
    except psutil.Error:
        return False
    return "daemon" in args and "--foreground" in args


def texts(result: Any) -> list[str]:
    return [block.text for block in result.content if getattr(block, "type", None) == "text"]


def check_ok(name: str, result: Any) -> Any:
    if result.is_error:
        raise RuntimeError(f"{name} failed: {' | '.join(texts(result))[:500]}")
    return result.structured_content


def check_nbstage_exec(result: Any) -> None:
    structured = check_ok("execute_cell", result) or {}
    status = (structured.get("execution") or {}).get("status")
    if status != "done":
        raise RuntimeError(f"execute_cell answered status {status!r}: {str(structured)[:500]}")


def check_jupymcp_exec(result: Any) -> None:
    check_ok("execute", result)
    if "2" not in texts(result):
        raise RuntimeError(f"execute('1+1') did not return 2: {texts(result)[:3]}")


@dataclass
class Prepared:
    """A server made ready for `1+1`: the call that runs it, and what getting there took."""

    run: Callable[[], Awaitable[Any]]
    retries: int = 0
    first_error: str | None = None


Setup = Callable[[Client], Awaitable[Prepared]]


async def nbstage_setup(client: Client, exec_timeout: float, patience: float = 0.0) -> Prepared:
    """create_notebook, then create_cell `1+1`; the call executes that cell.

    With ``patience``, a create_notebook that fails is retried (every RETRY_PAUSE s, for
    up to that many seconds), as an agent would on "daemon unreachable, try again"."""
    call = client.call_tool
    deadline = time.monotonic() + patience
    retries, first_error = 0, None
    while True:
        created = await call("create_notebook", {})
        if not created.is_error or time.monotonic() > deadline:
            break
        retries += 1
        first_error = first_error or " | ".join(texts(created))[:300]
        await anyio.sleep(RETRY_PAUSE)
    check_ok("create_notebook", created)
    made = check_ok("create_cell", await call("create_cell", {"source": "1+1"}))
    arguments = {"cell_id": made["cell_id"], "timeout_secs": exec_timeout}
    return Prepared(lambda: call("execute_cell", arguments), retries, first_error)


async def jupymcp_setup(client: Client) -> Prepared:
    return Prepared(lambda: client.call_tool("execute", {"code": "1+1"}))


async def nbstage_latency_setup(client: Client) -> Prepared:
    return await nbstage_setup(client, 30.0)


async def mcp_latency(
    spawn: Spawn,
    setup: Setup,
    check: Callable[[Any], None],
    runs: int,
    leaks: list[str],
) -> list[float]:
    """list_tools, the setup calls, then WARMUP + runs timed executions of `1+1`."""
    with anyio.fail_after(budget(WARMUP + runs)):
        async with connected(spawn, leaks) as client:
            await client.list_tools()
            prepared = await setup(client)
            return await timed_calls(prepared.run, check, runs)


# --- cold start ---------------------------------------------------------------------------


async def cold_start(
    spawn: Spawn,
    setup: Setup,
    check: Callable[[Any], None],
    leaks: list[str],
) -> dict[str, float]:
    """Seconds from spawn to the initialize answer, to list_tools, to the first `1+1`."""
    with anyio.fail_after(budget(5)):
        start = time.perf_counter()
        async with connected(spawn, leaks) as client:
            initialized = time.perf_counter() - start
            await client.list_tools()
            listed = time.perf_counter() - start
            prepared = await setup(client)
            check(await prepared.run())
            done = time.perf_counter() - start
    return {
        "initialize_s": initialized,
        "list_tools_s": listed,
        "first_result_s": done,
        "setup_retries": prepared.retries,
        "first_setup_error": prepared.first_error,
    }


async def nbstage_cold_setup(client: Client) -> Prepared:
    return await nbstage_setup(client, CALL_TIMEOUT - 10, patience=COLD_PATIENCE)


def cold_starts(
    work: Path, leaks: list[str], errors: Failures, jupymcp: bool
) -> dict[str, list[dict]]:
    """COLD_TRIES of each server, interleaved; each nbstage try on a fresh state dir."""
    results: dict[str, list[dict]] = {"nbstage": [], "jupymcp": []}
    for i in range(COLD_TRIES):
        if "cold nbstage" not in errors:
            state = work / f"cold-nbstage-{i}" / "state"
            spawn = nbstage_spawn("cold nbstage", state, state.parent)
            try:
                timing = anyio.run(cold_start, spawn, nbstage_cold_setup, check_nbstage_exec, leaks)
                results["nbstage"].append(timing)
            except Exception as exc:  # recorded; the run goes on
                errors.record("cold nbstage", exc, spawn.stderr)
            finally:
                stop_daemon(state, spawn.tag, leaks)
        if jupymcp and "cold jupymcp" not in errors:
            spawn = jupymcp_spawn("cold jupymcp", work / f"cold-jupymcp-{i}")
            try:
                timing = anyio.run(cold_start, spawn, jupymcp_setup, check_jupymcp_exec, leaks)
                results["jupymcp"].append(timing)
            except Exception as exc:
                errors.record("cold jupymcp", exc, spawn.stderr)
            reap({p.pid for p in tagged_processes(spawn.tag)}, "cold jupymcp", leaks)
    return results


# --- nbstage through the daemon socket ----------------------------------------------------


def daemon_latency(state: Path, runs: int) -> list[float]:
    deadline = time.monotonic() + budget(WARMUP + runs)
    with DaemonClient(state_paths(state).socket, timeout=CALL_TIMEOUT) as client:
        notebook = client.request("create")["notebook_id"]
        cell = client.request("create_cell", notebook_id=notebook, source="1+1")["cell_id"]
        samples = []
        for i in range(WARMUP + runs):
            if time.monotonic() > deadline:
                raise TimeoutError("the daemon-socket phase ran over its time budget")
            start = time.perf_counter()
            result = client.request("execute", notebook_id=notebook, cell_id=cell, wait_secs=30)
            elapsed = time.perf_counter() - start
            if result["execution"]["status"] != "done":
                raise RuntimeError(f"execute answered {str(result)[:300]}")
            if i >= WARMUP:
                samples.append(elapsed)
    return samples


def daemon_identity(state: Path) -> int:
    with DaemonClient(state_paths(state).socket, timeout=30) as client:
        return client.request("identity")["pid"]


def start_daemon(
    state: Path,
    tag: str,
    cli: Sequence[str] = NBSTAGE,
    extra_env: Mapping[str, str] | None = None,
) -> None:
    subprocess.run(
        [*cli, "daemon", "start", "--state-dir", str(state)],
        env=tagged_env(tag, extra_env),
        capture_output=True,
        check=True,
        timeout=120,
    )


# --- idle footprint of `nbstage mcp` ------------------------------------------------------


def mcp_tree(mcp_pid: int, daemon_pid: int) -> list[psutil.Process]:
    """`nbstage mcp` and its processes: descendants, and actors that name it as their edge;
    never the daemon or anything below or of it (its actors, its kernels)."""
    daemon_side = {daemon_pid, *(p.pid for p in descendants(daemon_pid))}
    found: dict[int, psutil.Process] = {}
    with contextlib.suppress(psutil.Error):
        found[mcp_pid] = psutil.Process(mcp_pid)
    for proc in descendants(mcp_pid):
        found[proc.pid] = proc
    for proc in psutil.process_iter():
        edge = environ_of(proc).get(EDGE_PID_ENV)
        if edge == str(mcp_pid):
            found[proc.pid] = proc
        elif edge == str(daemon_pid):
            daemon_side.add(proc.pid)
    mine = []
    for pid, proc in found.items():
        with contextlib.suppress(psutil.Error):
            if pid not in daemon_side and proc.status() != psutil.STATUS_ZOMBIE:
                mine.append(proc)
    return mine


def settled_tree(mcp_pid: int, daemon_pid: int) -> list[psutil.Process]:
    """The tree once its set of pids has stayed the same for SETTLE_SECS (bounded)."""
    deadline = time.monotonic() + SETTLE_LIMIT
    tree = mcp_tree(mcp_pid, daemon_pid)
    since = time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.25)
        now = mcp_tree(mcp_pid, daemon_pid)
        if {p.pid for p in now} != {p.pid for p in tree}:
            tree, since = now, time.monotonic()
        elif time.monotonic() - since >= SETTLE_SECS:
            break
    return tree


async def footprint(spawn: Spawn, daemon_pid: int, leaks: list[str]) -> dict[str, Any]:
    """Processes and summed RSS of an `nbstage mcp` after initialize and one tool call."""
    with anyio.fail_after(budget(5)):
        async with connected(spawn, leaks) as client:
            result = await client.call_tool("list_active_notebooks", {})
            check_ok("list_active_notebooks", result)
            pid = server_pid(spawn.tag)
            if pid is None:
                raise RuntimeError("the nbstage mcp process was not found among my children")
            tree = await anyio.to_thread.run_sync(settled_tree, pid, daemon_pid)
            processes = []
            for proc in tree:
                with contextlib.suppress(psutil.Error):
                    processes.append(
                        {
                            "pid": proc.pid,
                            "cmdline": " ".join(proc.cmdline())[:200],
                            "rss_mb": proc.memory_info().rss / 2**20,
                        }
                    )
    return {
        "processes": len(processes),
        "rss_mb": sum(p["rss_mb"] for p in processes),
        "detail": processes,
    }


# --- the run ------------------------------------------------------------------------------


class Failures:
    """What failed, one line each, with the end of the server's stderr when there is one."""

    def __init__(self) -> None:
        self.lines: dict[str, str] = {}
        self.stderr_tails: dict[str, list[str]] = {}

    def __contains__(self, name: str) -> bool:
        return name in self.lines

    def record(self, name: str, exc: BaseException, stderr: Path | None = None) -> None:
        while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
            exc = exc.exceptions[0]
        log(f"{name} failed:\n" + "".join(traceback.format_exception(exc)).rstrip())
        line = f"{type(exc).__name__}: {exc}"[:400]
        if stderr is not None and stderr.exists():
            text = stderr.read_text(errors="replace").splitlines()
            tail = [t.rstrip() for t in text if t.strip()][-STDERR_TAIL:]
            if tail:
                self.stderr_tails[name] = tail
                line += " | server stderr ends: " + tail[-1].strip()[:200]
        self.lines[name] = line


class ServerFailed(Exception):
    """A server's phase failed; its stderr file says why."""

    def __init__(self, error: BaseException, stderr: Path) -> None:
        super().__init__(str(error))
        self.error = error
        self.stderr = stderr


def execute_round(spawn: Spawn, runs: int, leaks: list[str]) -> dict[str, list[float]]:
    """``runs`` timed `execute(code)` calls on a server that takes jupymcp's tool."""
    try:
        samples = anyio.run(mcp_latency, spawn, jupymcp_setup, check_jupymcp_exec, runs, leaks)
    except Exception as exc:
        raise ServerFailed(exc, spawn.stderr) from exc
    finally:
        reap({p.pid for p in tagged_processes(spawn.tag)}, spawn.what, leaks)
    return {spawn.what: samples}


def nbstage_round(
    runs: int, work: Path, leaks: list[str], result: dict[str, Any]
) -> dict[str, list[float]]:
    """The daemon socket and then nbstage mcp, against one daemon; the idle footprint is
    taken in the first round."""
    state = work / "state"
    tag = uuid.uuid4().hex
    try:
        start_daemon(state, tag)
        daemon_pid = daemon_identity(state)
        found = {"daemon": daemon_latency(state, runs)}
    except Exception as exc:
        stop_daemon(state, tag, leaks)
        raise ServerFailed(exc, state / "logs" / "daemon.out") from exc
    try:
        spawn = nbstage_spawn("nbstage mcp", state, state.parent)
        try:
            found["nbstage"] = anyio.run(
                mcp_latency, spawn, nbstage_latency_setup, check_nbstage_exec, runs, leaks
            )
        except Exception as exc:
            raise ServerFailed(exc, spawn.stderr) from exc
        if "footprint" not in result:
            result["footprint"] = None  # taken once, whether or not it works
            spawn = nbstage_spawn("footprint nbstage mcp", state, state.parent)
            try:
                result["footprint"] = anyio.run(footprint, spawn, daemon_pid, leaks)
            except Exception as exc:  # reported as failed; the round's samples stand
                log(f"the idle footprint failed: {type(exc).__name__}: {exc}")
        return found
    finally:
        stop_daemon(state, tag, leaks)


def measure(runs: int, rounds: int, work: Path) -> dict[str, Any]:
    leaks: list[str] = []
    errors = Failures()
    latency: dict[str, list[float]] = {}
    result: dict[str, Any] = {"latency": {}, "leaks": leaks}
    try:
        ensure_jupymcp()
    except Exception as exc:
        errors.record("jupymcp install", exc)
    systems = [
        ("raw", lambda n, where: {"raw": raw_roundtrips(n, where)}),
        (
            "jupymcp",
            lambda n, where: execute_round(jupymcp_spawn("jupymcp", where), n, leaks),
        ),
        ("nbstage", lambda n, where: nbstage_round(n, where, leaks, result)),
        (
            "instant",
            lambda n, where: execute_round(instant_spawn("instant", where), n, leaks),
        ),
    ]
    if "jupymcp install" in errors:
        del systems[1]
    per_round = runs // rounds
    for number in range(rounds):
        order = systems if number % 2 == 0 else systems[::-1]
        for name, run_round in order:
            log(f"round {number + 1}/{rounds}: {name}, {WARMUP} + {per_round} calls")
            where = work / f"{name}-{number}"
            where.mkdir()
            try:
                for key, samples in run_round(per_round, where).items():
                    latency.setdefault(key, []).extend(samples)
            except ServerFailed as failed:  # recorded; the run goes on
                errors.record(name, failed.error, failed.stderr)
            except Exception as exc:
                errors.record(name, exc)

    log(f"cold starts: {COLD_TRIES} of each")
    cold = cold_starts(work, leaks, errors, "jupymcp install" not in errors)
    result["cold_start"] = {
        name: {
            "tries": tries,
            "median_first_result_ms": statistics.median(t["first_result_s"] for t in tries) * 1000,
            "median_initialize_ms": statistics.median(t["initialize_s"] for t in tries) * 1000,
            "median_list_tools_ms": statistics.median(t["list_tools_s"] for t in tries) * 1000,
            "setup_retries": sum(t["setup_retries"] for t in tries),
            "first_setup_error": next(
                (t["first_setup_error"] for t in tries if t["first_setup_error"]), None
            ),
        }
        for name, tries in cold.items()
        if tries
    }
    result["errors"] = errors.lines
    result["stderr_tails"] = errors.stderr_tails
    result["latency"] = {name: stats(samples) for name, samples in latency.items()}
    result["samples_ms"] = {name: [s * 1000 for s in v] for name, v in latency.items()}
    return result


NAMES = {
    "raw": "raw jupyter_client (IPC)",
    "jupymcp": f"jupymcp {JUPYMCP_VERSION} execute",
    "nbstage": "nbstage mcp execute_cell",
    "daemon": "nbstage daemon socket",
    "instant": "instant MCP server (floor)",
}


def report(result: dict[str, Any], runs: int) -> None:
    latency = result["latency"]
    print(f"1+1 latency, {runs} calls after {WARMUP} warm-up (client wall-clock, ms)")
    print(f"{'system':<30} {'median':>8} {'p90':>8} {'p99':>8}")
    for key, name in NAMES.items():
        if key in latency:
            s = latency[key]
            print(f"{name:<30} {s['median_ms']:8.2f} {s['p90_ms']:8.2f} {s['p99_ms']:8.2f}")
        else:
            print(f"{name:<30} {'failed':>8}")
    print()
    print(f"{'difference':<30} {'median':>8} {'p90':>8}")
    for key, label in (
        ("nbstage", "nbstage mcp - raw (ms)"),
        ("jupymcp", "jupymcp - raw (ms)"),
        ("daemon", "daemon socket - raw (ms)"),
    ):
        if key in latency and "raw" in latency:
            a, b = latency[key], latency["raw"]
            print(
                f"{label:<30} {a['median_ms'] - b['median_ms']:+8.2f}"
                f" {a['p90_ms'] - b['p90_ms']:+8.2f}"
            )
    for key, label in (("nbstage", "nbstage mcp"), ("jupymcp", "jupymcp")):
        if {key, "raw", "instant"} <= latency.keys():
            beyond = [
                latency[key][q] - latency["raw"][q] - latency["instant"][q]
                for q in ("median_ms", "p90_ms")
            ]
            print(f"{label + ' - raw - floor (ms)':<30} {beyond[0]:+8.2f} {beyond[1]:+8.2f}")
    if "nbstage" in latency and "jupymcp" in latency:
        a, b = latency["nbstage"], latency["jupymcp"]
        print(
            f"{'nbstage mcp / jupymcp (ratio)':<30} {a['median_ms'] / b['median_ms']:7.2f}x"
            f" {a['p90_ms'] / b['p90_ms']:7.2f}x"
        )
    print()
    print(f"cold start, spawn to first 1+1 result (median of {COLD_TRIES}; no daemon, fresh dirs)")
    print(f"{'system':<30} {'result':>8} {'init':>8} {'tools':>8}   tries  retries")
    for key, name in (("nbstage", "nbstage mcp"), ("jupymcp", f"jupymcp {JUPYMCP_VERSION}")):
        cold = result["cold_start"].get(key)
        if cold:
            print(
                f"{name:<30} {cold['median_first_result_ms']:8.0f}"
                f" {cold['median_initialize_ms']:8.0f} {cold['median_list_tools_ms']:8.0f}"
                f"   {len(cold['tries'])}/{COLD_TRIES}    {cold['setup_retries']:5d}"
            )
        else:
            print(f"{name:<30} {'failed':>8}")
    print("(ms from spawn to: the first result, the initialize answer, the list_tools answer;")
    print(" retries: create_notebook calls that failed and were repeated before one succeeded)")
    for key, cold in result["cold_start"].items():
        if cold["first_setup_error"]:
            print(f"{key} create_notebook first failed with: {cold['first_setup_error']}")
    fp = result.get("footprint")
    print()
    if fp:
        print(
            f"nbstage mcp idle footprint     {fp['processes']} process(es), "
            f"{fp['rss_mb']:.1f} MB RSS (without daemon and kernels)"
        )
    else:
        print("nbstage mcp idle footprint     failed")
    for name, error in result["errors"].items():
        print(f"FAILED {name}: {error}")
    for leak in result["leaks"]:
        print(f"LEAK {leak}")


def versions() -> dict[str, str]:
    found = {}
    for package in ("nbstage", "mcp", "jupyter_client", "ipykernel"):
        with contextlib.suppress(Exception):
            found[package] = installed_version(package)
    found["jupymcp"] = JUPYMCP_VERSION
    found["python"] = platform.python_version()
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=200, help="timed calls per system")
    parser.add_argument(
        "--rounds",
        type=int,
        default=4,
        help="split the calls into this many rounds, each system in turn (the order reversed "
        "every other round), so that a machine whose speed drifts weighs on every system alike",
    )
    parser.add_argument("--json", dest="json_file", default=None, help="also write results here")
    args = parser.parse_args()
    warm_client_library()
    if args.runs < 1 or not 1 <= args.rounds <= args.runs:
        parser.error("--runs must be at least 1, and --rounds between 1 and --runs")
    started = time.time()
    with tempfile.TemporaryDirectory(prefix="nbs-peers-") as tmp:
        result = measure(args.runs, args.rounds, Path(tmp))
    result["config"] = {
        "runs": args.runs,
        "rounds": args.rounds,
        "warmup": WARMUP,
        "cold_tries": COLD_TRIES,
        "cpus": os.cpu_count(),
        "load_average": os.getloadavg(),
        "started": started,
        "duration_s": time.time() - started,
        "versions": versions(),
    }
    report(result, args.runs)
    if args.json_file:
        Path(args.json_file).write_bytes(orjson.dumps(result, option=orjson.OPT_INDENT_2))
    if result["errors"]:
        sys.exit(1)


if __name__ == "__main__":
    main()
