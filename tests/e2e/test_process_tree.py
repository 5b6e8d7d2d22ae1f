"""The process tree, counted on the OS (SPEC §2, §11 "an idle nbstage mcp", §12).

Processes exist only at crash boundaries: ``nbstage mcp`` and its session child, one
daemon, and one ipykernel per room that has run a cell. These tests count them with
psutil, kill each boundary with SIGKILL, and require that nothing it owned outlives it
by more than ``ORPHAN_SECS``. Every "gone" below is an OS fact polled with
``wait_until``, never a sleep.

Each test records what it started in a ``Sweep``; the sweep's teardown SIGKILLs
whatever is still running (so a failing test leaves nothing behind) and fails the
test if it had anything to kill.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import psutil
import pytest

from nbstage.actors.daemon.environment import environments
from nbstage.actors.daemon.kernel.fork_server import ZYGOTE
from nbstage.entrypoints.common.lifelines import EDGE_PID_ENV
from nbstage.entrypoints.common.statedir import state_paths
from nbstage.entrypoints.control.daemon_client import DaemonClient, DaemonNotRunning
from tests.conftest import FAST_SETTINGS
from tests.support import (
    RunningDaemon,
    assert_daemon_gone,
    call_ok,
    client_record,
    mcp_client,
    pid_gone,
    processes_of_daemon,
    room_view,
    run_bounded,
    run_cli,
    session_manager_pid,
    start_daemon,
    texts_of,
    wait_until,
)

pytestmark = pytest.mark.e2e

ORPHAN_SECS = 2.0
"""How long anything may outlive the process that owned it."""

CLIENT_TAG_ENV = "NBSTAGE_TEST_CLIENT_TAG"
KERNEL_WAIT_SECS = 60.0
"""Longest a first cell may wait for its kernel; ten kernels start at once on 2 cores."""
BODY_BUDGET_SECS = 60.0


# --- process accounting ---------------------------------------------------------------------


def alive(proc: psutil.Process) -> bool:
    """True while ``proc`` (this very process, not a reuse of its pid) runs."""
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def tree_of(pid: int) -> dict[int, psutil.Process]:
    """A process, every live descendant of it, and every process whose env names it as
    its edge (``NBSTAGE_EDGE_PID``): what it owns, however it was started."""
    found = {proc.pid: proc for proc in processes_of_daemon(pid)}
    with contextlib.suppress(psutil.NoSuchProcess):
        root = psutil.Process(pid)
        for proc in [root, *root.children(recursive=True)]:
            if alive(proc):
                found.setdefault(proc.pid, proc)
    return found


SESSION_ZYGOTE = "nbstage.entrypoints.session.session_zygote"


def session_forker_of(daemon: RunningDaemon) -> int:
    """The daemon's session fork server (ADR 0009), once it listens: the daemon starts it
    a second after it begins to serve, and it listens once its imports are done."""

    def found() -> int | None:
        if not daemon.paths.session_zygote.exists():
            return None
        for pid, proc in tree_of(daemon.pid).items():
            with contextlib.suppress(psutil.Error):
                if SESSION_ZYGOTE in proc.cmdline() and proc.ppid() == daemon.pid:
                    return pid
        return None

    return wait_until(found, 30, f"the session fork server of daemon {daemon.pid}")


def assert_forked_by_the_daemon(child: psutil.Process, daemon: RunningDaemon) -> None:
    """While the daemon runs, a session child is forked by its session fork server."""
    assert child.ppid() == session_forker_of(daemon), describe([child])


def zygotes_in(tree: dict[int, psutil.Process]) -> list[int]:
    """The kernel fork servers among ``tree`` (ADR 0005)."""
    found = []
    for pid, proc in tree.items():
        with contextlib.suppress(psutil.Error):
            if any(arg.endswith(ZYGOTE.name) for arg in proc.cmdline()):
                found.append(pid)
    return found


def describe(procs: dict[int, psutil.Process] | list[psutil.Process]) -> str:
    """pid, parent and command line of each process, for failure messages."""
    rows = []
    for proc in procs.values() if isinstance(procs, dict) else procs:
        try:
            rows.append(f"pid {proc.pid} ppid {proc.ppid()}: {' '.join(proc.cmdline())[:160]}")
        except psutil.Error:
            rows.append(f"pid {proc.pid}: (gone)")
    return "; ".join(rows) or "(none)"


def still_running(procs: dict[int, psutil.Process]) -> dict[int, psutil.Process]:
    return {pid: proc for pid, proc in procs.items() if alive(proc)}


class Sweep:
    """What a test started: processes by identity, edges and client tags by env."""

    def __init__(self) -> None:
        self.procs: dict[int, psutil.Process] = {}
        self.owners: set[int] = set()
        self.tags: set[str] = set()

    def note(self, procs: dict[int, psutil.Process]) -> None:
        self.procs.update(procs)

    def own(self, pid: int) -> None:
        """Remember ``pid`` and everything that names it as its edge."""
        self.owners.add(pid)
        self.note(tree_of(pid))

    def leftovers(self) -> list[psutil.Process]:
        found = {pid: proc for pid, proc in self.procs.items() if alive(proc)}
        for proc in psutil.process_iter():
            try:
                env = proc.environ()
                ours = env.get(CLIENT_TAG_ENV) in self.tags or (
                    env.get(EDGE_PID_ENV, "").isdigit() and int(env[EDGE_PID_ENV]) in self.owners
                )
                if (ours or proc.pid in self.owners) and alive(proc):
                    found.setdefault(proc.pid, proc)
            except psutil.Error:
                continue
        found.pop(os.getpid(), None)
        return list(found.values())

    def kill_leftovers(self) -> list[str]:
        """SIGKILL whatever still runs; return a description of what that was."""
        left = self.leftovers()
        killed = [describe([proc]) for proc in left]
        for proc in left:
            with contextlib.suppress(psutil.Error):
                proc.kill()
        psutil.wait_procs(left, timeout=5)
        return killed


@pytest.fixture
def sweep() -> Iterator[Sweep]:
    record = Sweep()
    yield record
    killed = record.kill_leftovers()
    assert not killed, f"teardown had to SIGKILL processes the test left running: {killed}"


@pytest.fixture
def tree_daemon(state_dir: Path, sweep: Sweep) -> Iterator[RunningDaemon]:
    """A real daemon for one test; stopped afterwards (it may already be dead), and
    whatever of it survives is killed by the sweep, which tears down after this."""
    running = start_daemon(state_dir, dict(FAST_SETTINGS))
    sweep.own(running.pid)
    try:
        yield running
    finally:
        with contextlib.suppress(DaemonNotRunning, OSError):
            sweep.own(running.request("identity")["pid"])
        assert_daemon_gone(running)


def tagged(sweep: Sweep, session: Any) -> Any:
    """Put an ``mcp_client`` session's processes (all carry its tag) in the sweep."""
    sweep.tags.add(session.tag)
    return session


def carrying_tag(tag: str) -> dict[int, psutil.Process]:
    """Every live process whose env holds this client tag: whatever that client's
    ``nbstage mcp`` started, directly or not, inherits it."""
    found = {}
    for proc in psutil.process_iter():
        try:
            if proc.environ().get(CLIENT_TAG_ENV) == tag and alive(proc):
                found[proc.pid] = proc
        except psutil.Error:
            continue
    return found


def only_session_child(server_pid: int) -> psutil.Process:
    """The one process besides ``nbstage mcp`` itself in its tree: its session child."""
    others = [proc for pid, proc in tree_of(server_pid).items() if pid != server_pid]
    assert len(others) == 1, f"nbstage mcp {server_pid} owns {describe(others)}"
    return others[0]


def open_rooms_with_kernels(
    client: DaemonClient, daemon: RunningDaemon, count: int
) -> dict[str, int]:
    """``count`` rooms, each of which has run ``1+1``; returns notebook id → kernel pid.

    Every cell is queued before any is waited for, so the kernels start together.
    """
    notebooks = [client.request("create")["notebook_id"] for _ in range(count)]
    queued = {}
    for nid in notebooks:
        cell_id = client.request("create_cell", notebook_id=nid, source="1+1")["cell_id"]
        answer = client.request("execute", notebook_id=nid, cell_id=cell_id, wait_secs=0)
        queued[nid] = answer["execution"]["execution_id"]
    for nid, execution_id in queued.items():
        done = client.request(
            "get_execution",
            notebook_id=nid,
            execution_id=execution_id,
            wait_secs=KERNEL_WAIT_SECS,
        )["execution"]
        assert done["status"] == "done", f"1+1 in {nid}: {done}"
        assert done["outputs"][0]["data"]["text/plain"] == "2"
    return {
        nid: wait_until(
            lambda nid=nid: (room_view(daemon, nid) or {}).get("kernel_pid"),
            10,
            f"the kernel pid of {nid}",
        )
        for nid in notebooks
    }


def gone_within(procs: dict[int, psutil.Process], secs: float, what: str) -> float:
    """Wait until none of ``procs`` runs; return how long that took after the call."""
    began = time.monotonic()
    try:
        wait_until(lambda: not still_running(procs), secs, what)
    except AssertionError as exc:
        raise AssertionError(f"{exc}; still running: {describe(still_running(procs))}") from None
    return time.monotonic() - began


async def in_thread(func: Any, *args: Any) -> Any:
    return await anyio.to_thread.run_sync(func, *args)


# --- 1. an idle nbstage mcp ------------------------------------------------------------------


def test_an_idle_nbstage_mcp_is_itself_and_its_session_child(
    tree_daemon: RunningDaemon, sweep: Sweep
) -> None:
    session_forker_of(tree_daemon)

    async def body() -> None:
        session = tagged(sweep, mcp_client(tree_daemon, "legacy", label="idle"))
        async with session as client:
            server = session.server_pid
            sweep.own(server)
            listed = await call_ok(client, "list_active_notebooks")
            assert listed is not None
            child = only_session_child(server)
            tree = tree_of(server)
            sweep.note(tree)
            assert sorted(tree) == sorted([server, child.pid]), describe(tree)
            assert_forked_by_the_daemon(child, tree_daemon)
            assert "nbstage.entrypoints.session.session_main" in child.cmdline()
            # The process the client launched is the edge itself: one interpreter, which read
            # its command line without click (entrypoints/cli.py, tests/unit/test_lean_start.py).
            launched = psutil.Process(server).cmdline()
            assert launched[launched.index("nbstage.entrypoints.cli") + 1] == "mcp"
            reported = await in_thread(session_manager_pid, tree_daemon, "idle")
            assert reported == child.pid, "the daemon knows a different session manager"
            rss = {pid: proc.memory_info().rss for pid, proc in tree.items()}
            total = sum(rss.values())
            print(
                f"\nidle nbstage mcp: {len(tree)} processes, RSS "
                f"{total / 2**20:.1f} MiB together (nbstage mcp pid {server} "
                f"{rss[server] / 2**20:.1f} MiB, session child pid {child.pid} "
                f"{rss[child.pid] / 2**20:.1f} MiB, of which its own "
                f"{child.memory_full_info().uss / 2**20:.1f} MiB: the rest it shares with "
                "the session fork server)"
            )

    run_bounded(body, budget=BODY_BUDGET_SECS)


# --- 2. a daemon ------------------------------------------------------------------------------


def test_a_daemon_is_one_process_its_zygote_and_one_more_per_room_that_ran_a_cell(
    tree_daemon: RunningDaemon, sweep: Sweep
) -> None:
    rooms = 3
    forker = session_forker_of(tree_daemon)
    alone = tree_of(tree_daemon.pid)
    assert sorted(alone) == sorted([tree_daemon.pid, forker]), describe(alone)
    with tree_daemon.client() as client:
        kernels = open_rooms_with_kernels(client, tree_daemon, rooms)
        tree = tree_of(tree_daemon.pid)
        sweep.note(tree)
        assert len(set(kernels.values())) == rooms, kernels
        zygotes = zygotes_in(tree)
        assert len(zygotes) == 1, describe(tree)
        expected = [tree_daemon.pid, forker, *zygotes, *kernels.values()]
        assert sorted(tree) == sorted(expected), describe(tree)
        assert len(tree) == 3 + rooms


# --- 3. no orphans ----------------------------------------------------------------------------


def test_sigkill_of_nbstage_mcp_takes_its_session_child_within_2s(
    tree_daemon: RunningDaemon, sweep: Sweep
) -> None:
    async def body() -> None:
        session = tagged(sweep, mcp_client(tree_daemon, "legacy", label="edge"))
        async with session as client:
            server = session.server_pid
            sweep.own(server)
            await call_ok(client, "list_active_notebooks")
            child = only_session_child(server)
            tree = tree_of(server)
            sweep.note(tree)
            os.kill(server, signal.SIGKILL)
            took = await in_thread(
                gone_within, tree, ORPHAN_SECS, f"session child {child.pid} to exit"
            )
            print(f"\nsession child {child.pid} gone {took * 1000:.0f} ms after the kill")
        # Leaving the block closed the SDK client on the dead server; the OS has the rest.
        assert pid_gone(server)
        assert not tree_of(server), describe(tree_of(server))

    run_bounded(body, budget=BODY_BUDGET_SECS)


def test_sigkill_of_the_session_child_is_served_by_a_new_child_and_the_old_is_gone(
    tree_daemon: RunningDaemon, sweep: Sweep
) -> None:
    session_forker_of(tree_daemon)

    async def body() -> None:
        session = tagged(sweep, mcp_client(tree_daemon, "legacy", label="child"))
        async with session as client:
            server = session.server_pid
            sweep.own(server)
            created = await call_ok(client, "create_notebook")
            notebook = created["notebook_id"]
            await call_ok(client, "create_cell", source="x = 20", and_run=True)
            old = only_session_child(server)
            sweep.note(tree_of(server))
            os.kill(old.pid, signal.SIGKILL)
            await in_thread(gone_within, {old.pid: old}, ORPHAN_SECS, f"old child {old.pid}")

            began = time.monotonic()
            result = await client.call_tool("create_cell", {"source": "x * 2 + 2", "and_run": True})
            served = time.monotonic() - began
            assert not result.is_error, texts_of(result)
            execution = result.structured_content["execution"]
            assert execution["status"] == "done", execution
            assert execution["outputs"][0]["text"] == "42", "the kernel lost its state"
            record = await in_thread(client_record, tree_daemon, "child")
            assert record is not None
            assert record["active"] == notebook, "the call was served on another notebook"

            def two_again() -> dict[int, psutil.Process] | None:
                tree = tree_of(server)
                return tree if len(tree) == 2 and old.pid not in tree else None

            try:
                tree = await in_thread(wait_until, two_again, ORPHAN_SECS, "a tree of 2 again")
            except AssertionError as exc:
                raise AssertionError(f"{exc}: {describe(tree_of(server))}") from None
            sweep.note(tree)
            new = only_session_child(server)
            assert new.pid != old.pid
            assert_forked_by_the_daemon(new, tree_daemon)
            print(
                f"\nafter SIGKILL of child {old.pid}: next call served in "
                f"{served * 1000:.0f} ms by child {new.pid}"
            )

    run_bounded(body, budget=BODY_BUDGET_SECS)


def test_sigkill_of_the_daemon_takes_its_zygote_and_three_kernels_within_2s(
    tree_daemon: RunningDaemon, sweep: Sweep
) -> None:
    with tree_daemon.client() as client:
        kernels = open_rooms_with_kernels(client, tree_daemon, 3)
        forker = session_forker_of(tree_daemon)
        tree = tree_of(tree_daemon.pid)
        sweep.note(tree)
        zygotes = zygotes_in(tree)
        assert len(zygotes) == 1, describe(tree)
        expected = [tree_daemon.pid, forker, *zygotes, *kernels.values()]
        assert sorted(tree) == sorted(expected), describe(tree)
        tree_daemon.kill()
        took = gone_within(tree, ORPHAN_SECS, f"daemon {tree_daemon.pid}, its zygote and kernels")
    print(f"\ndaemon SIGKILLed: its zygote and 3 kernels gone after {took * 1000:.0f} ms")
    assert not tree_of(tree_daemon.pid), describe(tree_of(tree_daemon.pid))


def test_daemon_stop_with_ten_kernels_leaves_nothing_2s_after_it_returns(
    tree_daemon: RunningDaemon, sweep: Sweep
) -> None:
    with tree_daemon.client() as client:
        kernels = open_rooms_with_kernels(client, tree_daemon, 10)
        forker = session_forker_of(tree_daemon)
        tree = tree_of(tree_daemon.pid)
        sweep.note(tree)
        expected = [tree_daemon.pid, forker, *zygotes_in(tree), *kernels.values()]
        assert sorted(tree) == sorted(expected), describe(tree)
        assert len(tree) == 3 + len(kernels), describe(tree)
        began = time.monotonic()
        stopped = run_cli("daemon", "stop", state_dir=tree_daemon.paths.root, env=tree_daemon.env)
        stop_secs = time.monotonic() - began
        assert stopped.returncode == 0, stopped.stdout + stopped.stderr
        left_at_return = describe(still_running(tree))
        took = gone_within(tree, ORPHAN_SECS, "the daemon and its 10 kernels after stop")
    print(
        f"\nnbstage daemon stop with 10 kernels took {stop_secs:.2f} s; at its return "
        f"still running: {left_at_return}; all gone {took * 1000:.0f} ms later"
    )
    assert not tree_of(tree_daemon.pid), describe(tree_of(tree_daemon.pid))


# --- 4. the first call with no daemon running -------------------------------------------------


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
def test_the_first_call_with_no_daemon_running_autostarts_one_and_is_served(
    state_dir: Path, sweep: Sweep, mode: str
) -> None:
    paths = state_paths(state_dir)
    assert not paths.socket.exists(), "the state dir should be fresh"
    # What mcp_client needs of a daemon is its paths and env; nothing is started here.
    daemon = RunningDaemon(paths, dict(FAST_SETTINGS), pid=0)
    session = tagged(sweep, mcp_client(daemon, mode, label=f"cold-{mode}"))

    async def body() -> None:
        async with session as client:
            sweep.own(session.server_pid)
            created = await client.call_tool("create_notebook", {})
            assert not created.is_error, f"the very first call failed: {texts_of(created)}"
            assert created.structured_content["notebook_id"], created.structured_content
            made = await call_ok(client, "create_cell", source="1+1")
            ran = await call_ok(client, "execute_cell", cell_id=made["cell_id"])
            execution = ran["execution"]
            assert execution["status"] == "done", execution
            assert execution["outputs"][0]["text"] == "2", execution
            daemon.pid = (await in_thread(daemon.request, "identity"))["pid"]
            sweep.own(daemon.pid)
            await in_thread(session_forker_of, daemon)

    try:
        run_bounded(body, budget=BODY_BUDGET_SECS)
    finally:
        if not daemon.pid:
            with contextlib.suppress(DaemonNotRunning, OSError):
                daemon.pid = daemon.request("identity")["pid"]
                sweep.own(daemon.pid)
        tree = tree_of(daemon.pid) if daemon.pid else {}
        sweep.note(tree)
        started_by_client = carrying_tag(session.tag)
        stopped = run_cli("daemon", "stop", "--state-dir", str(state_dir), state_dir=state_dir)
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr
    assert daemon.pid in tree, "the autostarted daemon was not found"
    assert len(tree) == 3, (
        f"an autostarted daemon with one kernel and its session fork server: {describe(tree)}"
    )
    assert sorted(started_by_client) == sorted(tree), (
        f"with nbstage mcp gone, what it started should be the daemon and its kernel: "
        f"{describe(started_by_client)}"
    )
    gone_within({**tree, **started_by_client}, ORPHAN_SECS, "the autostarted daemon and its kernel")
    left = sweep.leftovers()
    assert not left, f"left after stop: {describe(left)}"


def spare_kernel_pid(paths: Any) -> int:
    """The pid the autostarted daemon logged for its spare kernel."""
    logged = (paths.logs / "daemon.log").read_text()
    found = re.search(r"spare kernel spare-\w+ launched \(pid (\d+)\)", logged)
    assert found, f"the autostarted daemon launched no spare kernel: {logged[-2000:]}"
    return int(found.group(1))


def test_the_first_notebook_of_an_autostarted_daemon_runs_on_its_spare_kernel(
    state_dir: Path, sweep: Sweep, tmp_path: Path
) -> None:
    """The spare moves to the notebook's folder, interrupts as a kernel does, and a restart
    replaces it with a kernel of its own in the same folder."""
    paths = state_paths(state_dir)
    environments.ensure_template(environments.envs_dir(state_dir))
    daemon = RunningDaemon(paths, dict(FAST_SETTINGS), pid=0)
    session = tagged(sweep, mcp_client(daemon, "legacy", label="warm"))
    folder = tmp_path / "a folder"
    folder.mkdir()
    where = "import os\nprint(os.getcwd())\nprint(os.getpid())"

    async def run(client: Any, cell_id: str) -> list[str]:
        ran = await call_ok(client, "execute_cell", cell_id=cell_id)
        assert ran["execution"]["status"] == "done", ran
        return ran["execution"]["outputs"][0]["text"].splitlines()

    async def body() -> None:
        async with session as client:
            sweep.own(session.server_pid)
            await call_ok(client, "create_notebook", working_dir=str(folder))
            daemon.pid = (await in_thread(daemon.request, "identity"))["pid"]
            sweep.own(daemon.pid)
            await in_thread(session_forker_of, daemon)
            cell = (await call_ok(client, "create_cell", source=where))["cell_id"]
            cwd, pid = await run(client, cell)
            assert (cwd, int(pid)) == (str(folder.resolve()), spare_kernel_pid(paths))

            sleeper = await call_ok(client, "create_cell", source="import time\ntime.sleep(60)")
            started = await call_ok(
                client, "execute_cell", cell_id=sleeper["cell_id"], timeout_secs=0.5
            )
            assert started["execution"]["status"] == "running", started
            await call_ok(client, "interrupt_kernel")
            execution_id = started["execution"]["execution_id"]
            with anyio.fail_after(10):
                while True:
                    stopped = await call_ok(client, "get_results", execution_id=execution_id)
                    if stopped["execution"]["status"] != "running":
                        break
            assert stopped["execution"]["status"] == "error", stopped
            assert "KeyboardInterrupt" in str(stopped["execution"]["outputs"]), stopped

            await call_ok(client, "restart_kernel")
            cwd, restarted = await run(client, cell)
            assert cwd == str(folder.resolve())
            assert int(restarted) not in (int(pid), 0)

    try:
        run_bounded(body, budget=BODY_BUDGET_SECS)
    finally:
        sweep.note(tree_of(daemon.pid) if daemon.pid else {})
        stopped = run_cli("daemon", "stop", "--state-dir", str(state_dir), state_dir=state_dir)
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr
    assert not list((state_dir / "envs" / "pool").glob("spare-*"))
    left = sweep.leftovers()
    assert not left, f"left after stop: {describe(left)}"
