"""Many `nbstage mcp` clients started at the same moment against one daemon (SPEC §11).

    .venv/bin/python bench/many_clients.py [--clients 32] [--cold] [--cpu-hog] [--json FILE]

A daemon starts in a temp state dir; once its session fork server listens (ADR 0009: a
daemon that has run a few seconds has one), ``--clients`` SDK clients (half legacy, half
2026-07-28) are released together from one event, each spawning its own `nbstage mcp`
(the SDK's imports for checking results are made before the release: ``warm_client_library``).
With ``--cold`` no daemon runs before: the clients start it (the first to take
``autostart.lock`` does, and starts its session child plainly; the others wait for the
daemon's fork server, ADR 0009). Each creates a notebook, adds a
`1+1` cell and executes it; once every client has its
first result (or has failed), all of them execute the cell again together. Reported:

- how many clients were served (both executes answered `2`), and why the rest were not;
- spawn → initialize answered (legacy clients; a 2026-07-28 client has no handshake) and
  spawn → first result, per client (p50 / p99 / max);
- the latency of create_notebook, of the first executes, and of the second, simultaneous
  ones (p50 / p99);
- the peak total RSS of the whole process tree (daemon, its actors and kernels, every
  `nbstage mcp` and its children), sampled every 100 ms with psutil, and once more
  when every client has its second result, before any of them closes.

``--cpu-hog`` runs one CPU-bound busy loop beside it for the duration. Everything is
bounded: the client phase by ``--budget`` seconds, the clean-up by fixed grace periods,
and every process this script started is gone (or killed by pid, and reported) at exit.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import anyio
import orjson
import psutil
from common import NBSTAGE, daemon, percentile, warm_client_library
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp_types import Implementation

from nbstage.entrypoints.common.statedir import state_paths

MODES = ("legacy", "2026-07-28")
RUN_TAG_ENV = "NBSTAGE_BENCH_RUN"
"""Set in the environment of the daemon and of every client: marks their process trees."""
CLIENT_TAG_ENV = "NBSTAGE_BENCH_CLIENT"
"""Set only for `nbstage mcp` processes (and so their children): the client side."""
SAMPLE_SECS = 0.1
UNSETTLED_SECS = 2.0
"""A process younger than this that is not tagged is looked at again: it may be a fork
that has not yet exec'd with the environment it was given."""
GONE_GRACE_SECS = 15.0
FORK_SERVER_WAIT_SECS = 30.0
EXECUTE_WAIT_SECS = 120.0


# --- statistics -----------------------------------------------------------------------------


def spread(samples: list[float]) -> dict[str, float | int | None]:
    """p50 / p99 / max in milliseconds, and how many samples there were."""
    ms = [s * 1000 for s in samples]
    return {
        "n": len(ms),
        "p50_ms": percentile(ms, 50),
        "p99_ms": percentile(ms, 99),
        "max_ms": max(ms) if ms else None,
    }


# --- memory of the process tree ---------------------------------------------------------------


class TreeSampler:
    """Samples the total RSS of every process of this run, every ``SAMPLE_SECS``.

    A process is of this run when its environment carries the run tag (the daemon,
    its actors and kernels, each `nbstage mcp` and its children inherit it), or when
    it descends from one that does. Which side it is on follows the client tag. A
    decision is cached per (pid, create time), so each process's environment is read
    once. Bounded: at most ``max_secs`` of sampling, whatever happens to ``stop``.
    """

    def __init__(self, run_tag: str, max_secs: float) -> None:
        self.run_tag = run_tag
        self.max_secs = max_secs
        self.me = os.getpid()
        self.known: dict[tuple[int, float], str | None] = {}
        self.peak_total = 0
        self.peak: dict[str, Any] = {}
        self.baseline: dict[str, Any] | None = None
        self.samples = 0
        self.all_pids: set[int] = set()
        self.kinds: dict[tuple[int, float], str] = {}
        self.cpu: dict[tuple[int, float], tuple[str, float]] = {}
        """The CPU seconds each process of this run had used when last sampled, by kind
        (read from its command line until it is ``UNSETTLED_SECS`` old: a kernel the
        zygote forks shows the zygote's for a moment)."""
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="rss-sampler", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _side(self, proc: psutil.Process) -> str | None:
        try:
            key = (proc.pid, proc.create_time())
        except psutil.Error:
            return None
        if key not in self.known:
            try:
                env = proc.environ()
            except psutil.AccessDenied:
                self.known[key] = None  # another user's
                return None
            except psutil.Error:
                return None  # gone, or in the middle of an exec: ask again next time
            side = None
            if env.get(RUN_TAG_ENV) == self.run_tag and proc.pid != self.me:
                side = "mcp" if CLIENT_TAG_ENV in env else "daemon"
            elif time.time() - key[1] < UNSETTLED_SECS:
                return None  # forked, perhaps not yet exec'd with its own environment
            self.known[key] = side
        return self.known[key]

    def ours(self) -> dict[int, tuple[psutil.Process, str]]:
        """Every live process of this run, with its side."""
        found: dict[int, tuple[psutil.Process, str]] = {}
        for proc in psutil.process_iter():
            side = self._side(proc)
            if side is not None:
                found[proc.pid] = (proc, side)
        for proc, side in list(found.values()):
            try:
                for child in proc.children(recursive=True):
                    found.setdefault(child.pid, (child, side))
            except psutil.Error:
                continue
        return found

    def sample(self) -> dict[str, Any]:
        rss = {"daemon": 0, "mcp": 0}
        count = {"daemon": 0, "mcp": 0}
        for pid, (proc, side) in self.ours().items():
            try:
                if proc.status() == psutil.STATUS_ZOMBIE:
                    continue
                rss[side] += proc.memory_info().rss
                times = proc.cpu_times()
                key = (pid, proc.create_time())
                kind = self.kinds.get(key) or kind_of(proc.cmdline())
                if time.time() - key[1] > UNSETTLED_SECS:
                    self.kinds[key] = kind
                self.cpu[key] = (kind, times.user + times.system)
            except psutil.Error:
                continue
            count[side] += 1
            self.all_pids.add(pid)
        return {"total": rss["daemon"] + rss["mcp"], "rss": rss, "count": count}

    def take(self) -> None:
        """One sample, kept as the peak if it is one; the timer thread and a caller that
        wants the moment it knows to be the peak (every client and kernel alive) share it."""
        with self._lock:
            taken = self.sample()
            taken["at"] = time.monotonic()
            self.samples += 1
            if self.baseline is None:
                self.baseline = taken
            if taken["total"] > self.peak_total:
                self.peak_total = taken["total"]
                self.peak = taken

    def cpu_by_kind(self) -> dict[str, dict[str, float]]:
        """CPU seconds and process count per kind of process, as last sampled."""
        kinds: dict[str, dict[str, float]] = {}
        for kind, secs in self.cpu.values():
            entry = kinds.setdefault(kind, {"cpu_s": 0.0, "processes": 0})
            entry["cpu_s"] += secs
            entry["processes"] += 1
        return dict(sorted(kinds.items()))

    def _run(self) -> None:
        deadline = time.monotonic() + self.max_secs
        while not self._stop.is_set() and time.monotonic() < deadline:
            self.take()
            self._stop.wait(SAMPLE_SECS)


KINDS = (
    ("mcp_main", "edge"),
    ("entrypoints.cli mcp", "edge"),
    ("session_main", "session child"),
    ("kernel_zygote", "kernel zygote"),
    ("session_zygote", "session zygote"),
    ("kernel_launcher", "kernel"),
    ("daemon", "daemon"),
    ("uv", "uv"),
)


def kind_of(cmdline: list[str]) -> str:
    """Which kind of process a command line is, by the first marker it holds."""
    line = " ".join(cmdline)
    return next((kind for marker, kind in KINDS if marker in line), "other")


def end_leftovers(sampler: TreeSampler, side: str | None, grace: float) -> list[dict[str, Any]]:
    """Wait up to ``grace`` for this run's processes (of one side, or all) to exit by
    themselves; SIGKILL, by pid, whatever is left. Returns what had to be killed."""
    deadline = time.monotonic() + grace
    while True:
        left = [proc for proc, where in sampler.ours().values() if side is None or where == side]
        left = [p for p in left if _alive(p)]
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    killed = []
    for proc in left:
        try:
            killed.append({"pid": proc.pid, "cmd": " ".join(proc.cmdline())[:160]})
            proc.kill()
        except psutil.Error:
            continue
    return killed


def _alive(proc: psutil.Process) -> bool:
    try:
        return proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


# --- the clients ------------------------------------------------------------------------------


@dataclass
class ClientRun:
    index: int
    mode: str
    stage: str = "waiting"
    served: bool = False
    error: str | None = None
    initialized_s: float | None = None
    create_notebook_s: float | None = None
    first_result_s: float | None = None
    execute_s: list[float] = field(default_factory=list)
    stderr_tail: str | None = None


@dataclass
class Barrier:
    """Opens once ``parties`` clients have arrived (served or failed)."""

    parties: int
    opened: anyio.Event = field(default_factory=anyio.Event)
    arrived: int = 0

    def arrive(self) -> None:
        self.arrived += 1
        if self.arrived >= self.parties:
            self.opened.set()


@dataclass
class Run:
    clients: int
    budget: float
    state: Path
    work: Path
    env: dict[str, str]
    go: anyio.Event = field(default_factory=anyio.Event)
    released_at: float = 0.0
    firsts: Barrier = field(init=False)
    """Every client has its first result: the second executes go out together."""
    seconds: Barrier = field(init=False)
    """Every client has its second result and is still open: the tree is sampled."""
    sampled: anyio.Event = field(default_factory=anyio.Event)
    own_cpu_s: float = 0.0
    """CPU seconds this script (its clients and its sampler) used from the release to the
    last first result: it shares the machine with what it measures."""

    def __post_init__(self) -> None:
        self.firsts = Barrier(self.clients)
        self.seconds = Barrier(self.clients)


def client_of(run: Run, one: ClientRun, errlog: Any) -> Client:
    params = StdioServerParameters(
        command=NBSTAGE[0],
        args=[*NBSTAGE[1:], "mcp", "--state-dir", str(run.state)],
        env={**run.env, CLIENT_TAG_ENV: str(one.index)},
        cwd=str(run.work),
    )
    info = Implementation(
        name=f"bench-{one.index:02d}", title=f"bench-{one.index:02d}", version="1"
    )
    return Client(stdio_client(params, errlog=errlog), mode=one.mode, client_info=info)


async def execute(client: Client, cell_id: str) -> float:
    """Execute the cell; the call must answer `2`. Returns its latency."""
    start = time.perf_counter()
    result = await client.call_tool(
        "execute_cell", {"cell_id": cell_id, "timeout_secs": EXECUTE_WAIT_SECS}
    )
    took = time.perf_counter() - start
    texts = [item.text for item in result.content if item.type == "text"]
    lines = [line.strip() for text in texts for line in text.splitlines()]
    if result.is_error or "2" not in lines:
        raise RuntimeError(f"execute_cell answered {'error' if result.is_error else ''} {texts}")
    return took


async def call(client: Client, name: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(name, arguments)
    if result.is_error:
        texts = [item.text for item in result.content if item.type == "text"]
        raise RuntimeError(f"{name} failed: {texts}")
    return result.structured_content or {}


def stderr_path(run: Run, one: ClientRun) -> Path:
    """Where the `nbstage mcp` of this client writes its stderr."""
    return run.work / f"client-{one.index:02d}.stderr"


async def one_client(
    run: Run, one: ClientRun, *, task_status: Any = anyio.TASK_STATUS_IGNORED
) -> None:
    first_reported = second_reported = False
    with stderr_path(run, one).open("w") as errlog:
        task_status.started()
        await run.go.wait()
        try:
            one.stage = "initialize"
            async with client_of(run, one, errlog) as client:
                one.initialized_s = time.perf_counter() - run.released_at
                one.stage = "create_notebook"
                start = time.perf_counter()
                await call(client, "create_notebook")
                one.create_notebook_s = time.perf_counter() - start
                one.stage = "create_cell"
                cell_id = (await call(client, "create_cell", source="1+1"))["cell_id"]
                one.stage = "execute #1"
                one.execute_s.append(await execute(client, cell_id))
                one.first_result_s = time.perf_counter() - run.released_at
                first_reported = True
                run.firsts.arrive()
                one.stage = "waiting for the others"
                await run.firsts.opened.wait()
                one.stage = "execute #2"
                one.execute_s.append(await execute(client, cell_id))
                second_reported = True
                run.seconds.arrive()
                one.stage = "waiting for the sample"
                await run.sampled.wait()
                one.stage = "closing"
            one.served = True
            one.stage = "done"
        except Exception as exc:
            one.error = f"{type(exc).__name__}: {exc}"[:400]
        finally:
            if not first_reported:
                run.firsts.arrive()
            if not second_reported:
                run.seconds.arrive()


def own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def time_own_cpu(run: Run) -> None:
    await run.go.wait()
    start = own_cpu()
    await run.firsts.opened.wait()
    run.own_cpu_s = own_cpu() - start


async def sample_at_the_peak(run: Run, sampler: TreeSampler) -> None:
    """Sample the tree while every client and every kernel is alive, which the sampler's
    timer alone can miss on a loaded machine, where one sample takes most of a second."""
    await run.seconds.opened.wait()
    await anyio.to_thread.run_sync(sampler.take)
    run.sampled.set()


async def drive(run: Run, runs: list[ClientRun], sampler: TreeSampler) -> bool:
    """All clients, released together; False when the budget ran out first."""
    with anyio.move_on_after(run.budget) as scope:
        async with anyio.create_task_group() as group:
            group.start_soon(sample_at_the_peak, run, sampler)
            group.start_soon(time_own_cpu, run)
            for one in runs:
                await group.start(one_client, run, one)
            run.released_at = time.perf_counter()
            run.go.set()
    for one in runs:
        if scope.cancelled_caught and not one.served and one.error is None:
            one.error = f"budget of {run.budget:.0f}s ran out during {one.stage}"
        if not one.served:
            tail = stderr_path(run, one).read_text(errors="replace").strip().splitlines()[-6:]
            one.stderr_tail = "\n".join(tail) or None
    return not scope.cancelled_caught


# --- the run ----------------------------------------------------------------------------------


def cpu_hog(secs: float) -> subprocess.Popen:
    """A busy loop on one core that ends by itself after ``secs`` (and is killed sooner)."""
    code = (
        f"import time\nend = time.monotonic() + {secs}\nwhile time.monotonic() < end:\n    pass\n"
    )
    return subprocess.Popen([sys.executable, "-c", code])


def daemon_pid(state: Path) -> int | None:
    done = subprocess.run(
        [*NBSTAGE, "daemon", "status", "--json", "--state-dir", str(state)],
        capture_output=True,
        timeout=30,
        check=False,
    )
    return orjson.loads(done.stdout)["pid"] if done.returncode == 0 else None


def measure(args: argparse.Namespace) -> dict[str, Any]:
    warm_client_library()
    run_tag = uuid.uuid4().hex
    hog = cpu_hog(args.budget + 120) if args.cpu_hog else None
    try:
        with tempfile.TemporaryDirectory(prefix="nbs-bench-") as tmp:
            work = Path(tmp)
            state = work / "state"
            env = {
                **os.environ,
                RUN_TAG_ENV: run_tag,
                "JUPYTER_RUNTIME_DIR": str(work / "jupyter-runtime"),
            }
            env.pop(CLIENT_TAG_ENV, None)
            sampler = TreeSampler(run_tag, max_secs=args.budget + 3 * GONE_GRACE_SECS + 60)
            runs = [ClientRun(i, MODES[i % len(MODES)]) for i in range(args.clients)]
            killed: dict[str, list[dict[str, Any]]] = {}
            try:
                with stopped_after(state, env) if args.cold else daemon(state, env):
                    pid = None if args.cold else daemon_pid(state)
                    forks_after = None if args.cold else fork_server_ready(state)
                    sampler.start()
                    run = Run(args.clients, args.budget, state, work, env)
                    started = time.perf_counter()
                    in_budget = anyio.run(drive, run, runs, sampler)
                    wall = time.perf_counter() - started
                    pid = pid or daemon_pid(state)
                    if args.cold:
                        # its daemon carries a client's tags: it goes first, by its own stop
                        stop_daemon(state, env)
                    killed["mcp"] = end_leftovers(sampler, "mcp", GONE_GRACE_SECS)
            finally:
                sampler.stop()
                killed["after daemon stop"] = end_leftovers(sampler, None, GONE_GRACE_SECS)
    finally:
        if hog is not None:
            hog.kill()
            hog.wait(timeout=10)
    return {
        **report(args, runs, sampler, pid, wall, in_budget, killed, run.own_cpu_s),
        "fork_server_after_s": forks_after,
        "cold": args.cold,
    }


@contextmanager
def stopped_after(state: Path, env: dict[str, str]) -> Iterator[None]:
    """For ``--cold``: no daemon now; the one the clients start is stopped at the end."""
    try:
        yield
    finally:
        stop_daemon(state, env)


def stop_daemon(state: Path, env: dict[str, str]) -> None:
    subprocess.run([*NBSTAGE, "daemon", "stop", "--state-dir", str(state)], env=env, check=False)


def fork_server_ready(state: Path) -> float | None:
    """Wait (at most ``FORK_SERVER_WAIT_SECS``) for the daemon's session fork server to
    listen, as it does on a daemon that has run a while (ADR 0009); returns how long that
    took after the daemon answered, or None."""
    socket_path = state_paths(state).session_zygote
    began = time.perf_counter()
    while not socket_path.exists():
        if time.perf_counter() - began > FORK_SERVER_WAIT_SECS:
            return None
        time.sleep(0.05)
    return time.perf_counter() - began


def report(
    args: argparse.Namespace,
    runs: list[ClientRun],
    sampler: TreeSampler,
    pid: int | None,
    wall: float,
    in_budget: bool,
    killed: dict[str, list[dict[str, Any]]],
    own_cpu_s: float,
) -> dict[str, Any]:
    mb = 1024 * 1024
    peak = sampler.peak or {"total": 0, "rss": {}, "count": {}}
    base = sampler.baseline or {"total": 0}
    return {
        "clients": args.clients,
        "modes": {mode: sum(r.mode == mode for r in runs) for mode in MODES},
        "cpu_hog": args.cpu_hog,
        "daemon_pid": pid,
        "served": sum(r.served for r in runs),
        "within_budget": in_budget,
        "wall_s": wall,
        # Only a legacy client waits for an answer (initialize) before its first call.
        "initialized": spread(
            [r.initialized_s for r in runs if r.initialized_s is not None and r.mode == "legacy"]
        ),
        "first_result": spread([r.first_result_s for r in runs if r.first_result_s is not None]),
        "create_notebook": spread(
            [r.create_notebook_s for r in runs if r.create_notebook_s is not None]
        ),
        "execute_first": spread([r.execute_s[0] for r in runs if r.execute_s]),
        "execute_together": spread([r.execute_s[1] for r in runs if len(r.execute_s) > 1]),
        "rss": {
            "peak_total_mb": peak["total"] / mb,
            "peak_daemon_side_mb": peak["rss"].get("daemon", 0) / mb,
            "peak_mcp_side_mb": peak["rss"].get("mcp", 0) / mb,
            "peak_processes": peak["count"],
            "idle_daemon_mb": base["total"] / mb,
            "samples": sampler.samples,
            "distinct_processes": len(sampler.all_pids),
        },
        "cpu_by_kind": sampler.cpu_by_kind(),
        "bench_cpu_to_first_results_s": own_cpu_s,
        "killed_leftovers": killed,
        "per_client": [asdict(r) for r in runs],
    }


def show(result: dict[str, Any]) -> None:
    def cell(value: float | None) -> str:
        return "      -" if value is None else f"{value:7.0f}"

    modes = ", ".join(f"{n} {mode}" for mode, n in result["modes"].items())
    hog = "with a CPU hog" if result["cpu_hog"] else "no CPU hog"
    print(f"nbstage: {result['clients']} clients started at once ({modes}), {hog}")
    print(f"  served                            {result['served']:4d} / {result['clients']}")
    print(f"  wall time                         {result['wall_s']:7.1f} s")
    forks = result["fork_server_after_s"]
    if result["cold"]:
        waited = "none yet: no daemon ran, the clients started it (--cold)"
    elif forks is None:
        waited = "never listened"
    else:
        waited = f"listened {forks:.1f} s after the daemon (ADR 0009); the clients came after"
    print(f"  session fork server               {waited}")
    print("                                       n      p50      p99      max   (ms)")
    rows = [
        ("spawn -> initialize (legacy)", "initialized"),
        ("create_notebook", "create_notebook"),
        ("spawn -> first result", "first_result"),
        ("execute #1 (as they arrive)", "execute_first"),
        ("execute #2 (all at once)", "execute_together"),
    ]
    for title, key in rows:
        s = result[key]
        print(
            f"  {title:<32}{s['n']:6d}  {cell(s['p50_ms'])}  {cell(s['p99_ms'])}  "
            f"{cell(s['max_ms'])}"
        )
    rss = result["rss"]
    count = rss["peak_processes"]
    print(
        f"  peak RSS, whole tree              {rss['peak_total_mb']:7.0f} MB"
        f"  (daemon side {rss['peak_daemon_side_mb']:.0f} MB in {count.get('daemon', 0)} procs,"
        f" nbstage mcp side {rss['peak_mcp_side_mb']:.0f} MB in {count.get('mcp', 0)} procs)"
    )
    print(
        f"  idle daemon before the clients    {rss['idle_daemon_mb']:7.0f} MB"
        f"  ({rss['samples']} samples, {rss['distinct_processes']} distinct processes)"
    )
    kinds = result["cpu_by_kind"]
    total = sum(entry["cpu_s"] for entry in kinds.values())
    print(f"  CPU used by this run's processes  {total:7.1f} s")
    own = result["bench_cpu_to_first_results_s"]
    print(f"    (this script, to the first results {own:5.1f} s)")
    for kind, entry in kinds.items():
        print(f"    {kind:<30}{entry['cpu_s']:7.1f} s in {entry['processes']:.0f} processes")
    if not result["within_budget"]:
        print("  the client phase ran out of its budget")
    for where, procs in result["killed_leftovers"].items():
        for proc in procs:
            print(f"  LEFTOVER killed ({where}): pid {proc['pid']} {proc['cmd']}")
    failed = [r for r in result["per_client"] if not r["served"]]
    if failed:
        print(f"  not served ({len(failed)}):")
    for r in failed:
        print(f"    client {r['index']:02d} [{r['mode']}] at {r['stage']}: {r['error']}")
        if r["stderr_tail"]:
            for line in r["stderr_tail"].splitlines():
                print(f"        | {line[:200]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--clients", type=int, default=32, help="how many, e.g. 32 or 64")
    parser.add_argument("--cpu-hog", action="store_true", help="run a busy loop beside it")
    parser.add_argument("--budget", type=float, default=300.0, help="client phase, seconds")
    parser.add_argument("--json", default=None, help="also write the results to this file")
    parser.add_argument(
        "--cold", action="store_true", help="no daemon first: the clients start it themselves"
    )
    args = parser.parse_args()
    if args.clients < 1:
        parser.error("--clients must be at least 1")
    result = measure(args)
    show(result)
    if args.json:
        Path(args.json).write_bytes(orjson.dumps(result, option=orjson.OPT_INDENT_2))


if __name__ == "__main__":
    main()
