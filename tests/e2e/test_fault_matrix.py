"""The fault matrix (issue 11, §10): every fault the harness knows, in every phase of work.

Each cell drives a real ``nbstage mcp`` with the SDK client on a file-backed notebook
with a kernel, injects its fault while idle, during an edit, during an execution or
during a save, and then checks three things:

- the agent keeps working on the same notebook: it is listed, and an edit and a run work;
- every edit acknowledged before the fault is still in the notebook and, once saved, in
  its file, which is a valid notebook after every fault (and holds a save that answered);
- what is lost is reported: a session server's restart is announced, a running
  execution lost to a SIGKILLed daemon is ``execution_lost`` ("run the cell again"), one
  ended by a graceful stop is an error saying "daemon stopping", a killed kernel is
  reported with "restart_kernel", an upgrade with "Daemon upgraded", and after the daemon
  or the kernel ended the old kernel's variables are gone. That the agent is told
  so after a daemon restart, with the next step, is the last test of this file.

In mid_edit and mid_save an edit is acknowledged just before the fault, then a second
edit or the save is in flight while it lands; the in-flight edit counts only if it was
acknowledged. These are e2e tests rather than ``examples/`` scenarios because a harness
step has a fixed expectation and cannot say "present if it was acknowledged". The cells
share one daemon; each starts its own client and evicts its room (and so its kernel) at
the end. An ephemeral notebook lost to a daemon restart is covered by
``examples/ephemeral-lost.toml`` and ``tests/e2e/test_rejoin.py``.
"""

from __future__ import annotations

import itertools
import os
import signal
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from nbstage.entrypoints.control.daemon_client import DaemonNotRunning
from tests.conftest import FAST_SETTINGS
from tests.e2e.test_rejoin import first_answer_after_recovery
from tests.support import (
    RunningDaemon,
    assert_daemon_gone,
    call_ok,
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

FAULTS = [
    "kill_child",
    "kill_daemon_then_start",
    "restart_daemon",
    "upgrade_daemon",
    "kill_kernel",
    "stop_and_start_client",
]
PHASES = ["idle", "mid_edit", "mid_execute", "mid_save"]
ENDS_THE_KERNEL = {"kill_daemon_then_start", "restart_daemon", "upgrade_daemon", "kill_kernel"}
ENDS_THE_DAEMON = ENDS_THE_KERNEL - {"kill_kernel"}
PREVIEW_CHARS = 120
"""A cell's source_preview is its first line up to this long; the checks compare each
acknowledged source with it, so every source here is one line that fits."""


def slow_cell(release: Path) -> str:
    """A cell that runs until ``release`` exists, a minute at most: the fault lands while
    it runs however long the machine takes to inject it, and it ends once the test has
    seen the fault (a fixed sleep of 3 s lost the race to a slow daemon restart)."""
    source = (
        f"import os, time; any(os.path.exists({str(release)!r}) or time.sleep(0.02)"
        " for _ in range(3000))"
    )
    assert len(source) <= PREVIEW_CHARS, f"the release path is too long: {release}"
    return source


_versions = itertools.count(1)


def cell_params() -> Iterator[Any]:
    for fault in FAULTS:
        for phase in PHASES:
            yield pytest.param(fault, phase, id=f"{fault}-{phase}")


@pytest.fixture(scope="module")
def shared_daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningDaemon]:
    """One daemon for the whole matrix; a cell that ends it starts the next one itself.

    Autosave waits a minute, so an edit acknowledged just before a SIGKILL survives only
    by the room's journal, never by an autosave that happened to come first."""
    jupyter = tmp_path_factory.mktemp("matrix-jupyter")
    env = {
        **FAST_SETTINGS,
        "NBSTAGE_AUTOSAVE_DELAY_SECS": "60",
        "NBSTAGE_AUTOSAVE_MAX_DELAY_SECS": "120",
        "JUPYTER_RUNTIME_DIR": str(jupyter / "runtime"),
        "IPYTHONDIR": str(jupyter / "ipython"),
        "JUPYTER_PLATFORM_DIRS": "1",
    }
    with tempfile.TemporaryDirectory(prefix="nbs-") as tmp:
        daemon = start_daemon(Path(tmp) / "state", env)
        try:
            yield daemon
        finally:
            assert_daemon_gone(daemon)


@pytest.fixture
def release() -> Iterator[Path]:
    """Where a cell's slow cell is released: a path short enough for a one-line cell."""
    with tempfile.TemporaryDirectory(prefix="nbs-") as short:
        yield Path(short) / "go"


# --- faults ---------------------------------------------------------------------------------


def kill_and_start(daemon: RunningDaemon) -> None:
    old = daemon.pid
    daemon.kill()
    wait_until(lambda: not processes_of_daemon(old), 15, f"daemon {old} and its kernels to end")
    daemon.pid = start_daemon(daemon.paths.root, daemon.env).pid


def restart(daemon: RunningDaemon) -> None:
    result = run_cli("daemon", "restart", state_dir=daemon.paths.root, env=daemon.env)
    assert result.returncode == 0, result.stderr
    daemon.pid = daemon.request("identity")["pid"]


def upgrade(daemon: RunningDaemon) -> str:
    version = f"99.{next(_versions)}.0"
    daemon.stop()
    daemon.env = {**daemon.env, "NBSTAGE_DAEMON_VERSION": version}
    daemon.pid = start_daemon(daemon.paths.root, daemon.env).pid
    return version


def kill_kernel(daemon: RunningDaemon, notebook_id: str) -> None:
    pid = room_view(daemon, notebook_id)["kernel_pid"]
    os.kill(pid, signal.SIGKILL)

    def reported_dead() -> bool:
        room = room_view(daemon, notebook_id)
        return room["kernel_status"] == "dead" or room["kernel_pid"] != pid

    wait_until(reported_dead, 15, f"kernel {pid} reported dead")


def kill_child(daemon: RunningDaemon, label: str) -> None:
    pid = session_manager_pid(daemon, label)
    os.kill(pid, signal.SIGKILL)
    wait_until(lambda: pid_gone(pid), 10, f"session manager {pid} to die")


def end_room(daemon: RunningDaemon, notebook_id: str | None) -> None:
    """Evict a cell's room, so its kernel ends with the cell rather than with the module.

    A cell that failed with its daemon down starts one for the next cell instead."""
    if notebook_id is None:
        return
    try:
        room = room_view(daemon, notebook_id)
    except (DaemonNotRunning, ConnectionError):
        daemon.pid = start_daemon(daemon.paths.root, daemon.env).pid
        return
    if room is None:
        return
    daemon.request("evict", notebook_id=notebook_id)
    if room["kernel_pid"] is not None:
        pid = room["kernel_pid"]
        wait_until(lambda: pid_gone(pid), 15, f"kernel {pid} of the evicted room to exit")


# --- one cell -------------------------------------------------------------------------------


class Cell:
    def __init__(
        self, daemon: RunningDaemon, fault: str, phase: str, work: Path, release: Path
    ) -> None:
        self.daemon, self.fault, self.phase, self.work = daemon, fault, phase, work
        self.label = f"matrix-{fault}-{phase}"
        self.acknowledged: list[str] = []
        self.execution_id: str | None = None
        self.upgraded_to: str | None = None
        self.path = work / "matrix.ipynb"
        self.release = release
        """Created once the fault has landed, to end the slow cell of mid_execute."""
        self.notebook_id: str | None = None
        self.save_answered = False
        self.seen: list[str] = []
        """The text of every answer the in-flight call got."""
        self.before_save: str | None = None

    async def edit(self, client: Any, source: str) -> dict[str, Any]:
        created = await call_ok(client, "create_cell", source=source)
        self.acknowledged.append(source)
        return created

    async def prepare(self, client: Any) -> str:
        created = await call_ok(client, "create_notebook", ephemeral=False)
        await call_ok(client, "create_cell", source="x = 41", and_run=True)
        self.acknowledged.append("x = 41")
        await call_ok(client, "save_notebook", path=str(self.path))
        if self.phase == "mid_execute":
            slow = await self.edit(client, slow_cell(self.release))
            started = await call_ok(
                client, "execute_cell", cell_id=slow["cell_id"], timeout_secs=0.5
            )
            assert started["execution"]["status"] == "running", started
            self.execution_id = started["execution"]["execution_id"]
        self.notebook_id = created["notebook_id"]
        return self.notebook_id

    async def in_flight_call(self, client: Any) -> None:
        """The call the fault lands on: its edit counts only if it was acknowledged."""
        source = f"edit during {self.fault}"
        if self.phase == "mid_edit":
            result = await client.call_tool("create_cell", {"source": source})
            if not result.is_error:
                self.acknowledged.append(source)
        else:
            result = await client.call_tool("save_notebook", {})
            self.save_answered = not result.is_error
        self.seen += texts_of(result)

    async def inject(self, notebook_id: str) -> None:
        daemon = self.daemon
        if self.fault == "kill_child":
            await anyio.to_thread.run_sync(kill_child, daemon, self.label)
        elif self.fault == "kill_daemon_then_start":
            await anyio.to_thread.run_sync(kill_and_start, daemon)
        elif self.fault == "restart_daemon":
            await anyio.to_thread.run_sync(restart, daemon)
        elif self.fault == "upgrade_daemon":
            self.upgraded_to = await anyio.to_thread.run_sync(upgrade, daemon)
        elif self.fault == "kill_kernel":
            await anyio.to_thread.run_sync(kill_kernel, daemon, notebook_id)

    async def edit_before_fault(self, client: Any) -> None:
        """mid_edit: an edit acknowledged just before the fault, while the next one is in
        flight. mid_save: an acknowledged edit whose save is in flight."""
        if self.phase == "mid_edit":
            await self.edit(client, f"acknowledged before {self.fault}")
        else:
            self.before_save = f"saved during {self.fault}"
            await self.edit(client, self.before_save)

    async def fault_during_phase(self, client: Any, notebook_id: str) -> None:
        if self.phase not in ("mid_edit", "mid_save"):
            await self.inject(notebook_id)
            return
        await self.edit_before_fault(client)
        async with anyio.create_task_group() as group:
            group.start_soon(self.in_flight_call, client)
            await self.inject(notebook_id)

    async def stop_during_phase(self, client: Any) -> None:
        """Leaving the client's block stops it; a call still in flight 5 ms after it was
        sent is cancelled, unanswered."""
        if self.phase in ("mid_edit", "mid_save"):
            await self.edit_before_fault(client)
            with anyio.move_on_after(0.005):
                await self.in_flight_call(client)

    async def check(self, client: Any, notebook_id: str, first: Any) -> None:
        # The fault has landed: a slow cell whose kernel survived may finish now.
        self.release.touch()
        assert not first.is_error, texts_of(first)
        listed = await call_ok(client, "list_active_notebooks")
        assert notebook_id in str(listed), listed
        if self.upgraded_to:
            assert f"→ {self.upgraded_to})" in "\n".join(texts_of(first)), texts_of(first)
        if self.fault == "kill_child":
            told = self.seen + texts_of(first)
            assert any(t.startswith("[nbstage] Session server restarted") for t in told), told
        await self.check_losses(client)
        await self.edit(client, "after = 1")
        ran = await call_ok(client, "create_cell", source="print(40 + 2)", and_run=True)
        assert ran["execution"]["status"] == "done", ran
        self.check_file()
        cells = await call_ok(client, "get_all_cells")
        sources = [cell["source_preview"] for cell in cells["cells"]]
        missing = [s for s in self.acknowledged if s not in sources]
        assert not missing, f"acknowledged edits lost: {missing}; the notebook has {sources}"
        await call_ok(client, "save_notebook")
        on_disk = [cell.source for cell in self.check_file().cells]
        assert [s for s in self.acknowledged if s not in on_disk] == [], on_disk

    def check_file(self) -> Any:
        """The notebook's file is whole after the fault, and holds an answered save."""
        import nbformat

        notebook = nbformat.read(self.path, as_version=4)
        nbformat.validate(notebook)
        if self.save_answered:
            assert self.before_save in [cell.source for cell in notebook.cells]
        return notebook

    async def check_losses(self, client: Any) -> None:
        if self.fault == "kill_kernel":
            refused = await client.call_tool("create_cell", {"source": "x", "and_run": True})
            self.acknowledged.append("x")
            text = "\n".join(texts_of(refused))
            assert refused.is_error, text
            assert "restart_kernel" in text, text
            assert "variables are lost" in text, text
            await call_ok(client, "restart_kernel")
        if self.execution_id is not None:
            result = await client.call_tool("get_results", {"execution_id": self.execution_id})
            text = "\n".join(texts_of(result))
            if self.fault == "kill_daemon_then_start":
                assert result.is_error, text
                assert "run the cell again" in text, text
            elif self.fault in ENDS_THE_DAEMON:
                assert result.structured_content["execution"]["status"] == "error", text
                assert "kernel stopped: daemon stopping" in text, text
            elif self.fault == "kill_kernel":
                assert "the kernel died" in text, text
            else:
                assert not result.is_error, text
                assert result.structured_content["execution"]["status"] in ("running", "done")
        if self.fault in ENDS_THE_KERNEL:
            probe = await call_ok(client, "create_cell", source="'x' in dir()", and_run=True)
            self.acknowledged.append("'x' in dir()")
            assert "False" in str(probe), f"the old kernel's variables survived: {probe}"


@pytest.mark.timeout(120)
@pytest.mark.parametrize(("fault", "phase"), list(cell_params()))
def test_fault_matrix_cell(
    shared_daemon: RunningDaemon, tmp_path: Path, release: Path, fault: str, phase: str
) -> None:
    cell = Cell(shared_daemon, fault, phase, tmp_path, release)

    async def body() -> None:
        async with mcp_client(shared_daemon, "legacy", label=cell.label, cwd=tmp_path) as client:
            notebook_id = await cell.prepare(client)
            if fault != "stop_and_start_client":
                await cell.fault_during_phase(client, notebook_id)
                await cell.check(client, notebook_id, await first_answer_after_recovery(client))
                return
            await cell.stop_during_phase(client)
        async with mcp_client(shared_daemon, "legacy", label=cell.label, cwd=tmp_path) as client:
            connected = await client.call_tool("connect_notebook", {"notebook_id": notebook_id})
            await cell.check(client, notebook_id, connected)

    try:
        run_bounded(body, budget=100)
    finally:
        end_room(shared_daemon, cell.notebook_id)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("fault", ["kill_daemon_then_start", "restart_daemon", "upgrade_daemon"])
def test_what_a_daemon_restart_loses_is_reported_with_a_next_step(
    shared_daemon: RunningDaemon, tmp_path: Path, release: Path, fault: str
) -> None:
    """The matrix cells check that the old kernel's variables and its running execution
    are gone; this checks that the agent is told so, with what to do next."""
    cell = Cell(shared_daemon, fault, "mid_execute", tmp_path, release)

    async def body() -> None:
        async with mcp_client(shared_daemon, "legacy", label=cell.label, cwd=tmp_path) as client:
            notebook_id = await cell.prepare(client)
            await cell.inject(notebook_id)
            first = await first_answer_after_recovery(client)
            lost = await client.call_tool("get_results", {"execution_id": cell.execution_id})
            said = "\n".join(texts_of(lost))
            assert 'run the cell again with execute_cell(cell_id="' in said, said
            ran = await client.call_tool("create_cell", {"source": "x", "and_run": True})
            told = "\n".join(texts_of(first) + texts_of(ran))
            assert "variables" in told, told

    try:
        run_bounded(body, budget=100)
    finally:
        end_room(shared_daemon, cell.notebook_id)
