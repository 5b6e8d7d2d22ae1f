"""The faults a harness script may inject (SPEC §9).

Each fault takes the run and its substituted parameters, returns a short detail for the
step's line (which pid it hit), and raises FaultError when it cannot be carried out. A
fault ends once its effect shows: a killed process is gone, a killed kernel is reported
dead by its room, a started daemon answers.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

import anyio

from nbstage.entrypoints.control.daemon_client import DaemonError, DaemonNotRunning
from nbstage.entrypoints.harness.clients import McpClient
from nbstage.entrypoints.harness.procs import FaultError, alive, sigkill, wait_gone
from nbstage.protocol.daemon.replies import ClientsListed, RoomsListed, RoomView
from nbstage.protocol.daemon.requests import ListClients, ListRooms
from nbstage.protocol.daemon_actors.kernel_facts import KernelState

if TYPE_CHECKING:
    from nbstage.entrypoints.harness.run import Run

FIND_SECS = 15.0
"""How long a fault waits for the daemon to report the process it is after."""
_T = TypeVar("_T")
_NOT_RUNNING = (KernelState.NONE, KernelState.STARTING, KernelState.DEAD)
Fault = Callable[["Run", dict[str, Any]], Awaitable[str | None]]


async def poll(probe: Callable[[], _T | None], what: str, timeout: float = FIND_SECS) -> _T:
    """Ask ``probe`` (blocking, run in a thread) until it returns something."""
    last_error = ""
    with anyio.move_on_after(timeout):
        while True:
            try:
                found = await anyio.to_thread.run_sync(probe)
                if found is not None:
                    return found
            except (DaemonNotRunning, DaemonError, ConnectionError, OSError) as exc:
                last_error = f" (last answer: {exc})"
            await anyio.sleep(0.05)
    raise FaultError(f"{what} did not show up within {timeout:g}s{last_error}")


# --- clients -----------------------------------------------------------------------------


def _client_entry(run: Run, client: McpClient) -> dict[str, Any] | None:
    """The daemon's report on this client's current session manager."""
    reports = run.daemon.call(ListClients(), ClientsListed).clients
    live = [r for r in reports if r.get("session_manager_pid") and alive(r["session_manager_pid"])]
    mine = [r for r in live if r.get("label") == client.spec.label]
    if len(mine) > 1:
        mine = [r for r in mine if r.get("supervisor_pid") == client.pid]
    return mine[0] if len(mine) == 1 else None


async def kill_child(run: Run, params: dict[str, Any]) -> str:
    client = run.clients[params["client"]]
    if not client.running:
        raise FaultError(f"client {client.spec.name} is not running")
    what = f"client {client.spec.name} (label {client.spec.label!r}) in the daemon's clients"
    entry = await poll(lambda: _client_entry(run, client), what)
    pid = entry["session_manager_pid"]
    sigkill(pid)
    await wait_gone(pid, "the killed session manager")
    return f"session manager pid {pid}"


async def stop_client(run: Run, params: dict[str, Any]) -> str:
    pid = await run.clients[params["client"]].stop()
    return f"nbstage mcp pid {pid}"


async def start_client(run: Run, params: dict[str, Any]) -> str:
    client = run.clients[params["client"]]
    if client.running and client.unusable():
        await client.stop()
    pid = await client.start(run.task_group, run.owned)
    return f"nbstage mcp pid {pid}"


# --- the daemon --------------------------------------------------------------------------


async def kill_daemon(run: Run, params: dict[str, Any]) -> str:
    return f"daemon pid {await run.daemon.kill()}"


async def start_daemon(run: Run, params: dict[str, Any]) -> str:
    identity = await run.daemon.start()
    return f"daemon pid {identity.pid}, version {identity.version}"


async def restart_daemon(run: Run, params: dict[str, Any]) -> str:
    old = await run.daemon.stop()
    identity = await run.daemon.start()
    before = "no daemon was running" if old is None else f"daemon pid {old}"
    return f"{before} → pid {identity.pid}, version {identity.version}"


async def upgrade_daemon(run: Run, params: dict[str, Any]) -> str:
    run.daemon.version = params["version"]
    return await restart_daemon(run, params)


# --- kernels -----------------------------------------------------------------------------


def _room(run: Run, notebook_id: str) -> RoomView | None:
    rooms = run.daemon.call(ListRooms(), RoomsListed).rooms
    return next((room for room in rooms if room.notebook_id == notebook_id), None)


def _running_kernel(run: Run, notebook_id: str) -> int | None:
    room = _room(run, notebook_id)
    if room is None or room.kernel_status in _NOT_RUNNING:
        return None
    return room.kernel_pid


def _noticed_dead(run: Run, notebook_id: str, pid: int) -> bool | None:
    room = _room(run, notebook_id)
    gone = room is None or room.kernel_status is KernelState.DEAD or room.kernel_pid != pid
    return True if gone else None


async def kill_kernel(run: Run, params: dict[str, Any]) -> str:
    notebook_id = params["notebook"]
    what = f"a running kernel for notebook {notebook_id} in the daemon's list_rooms"
    pid = await poll(lambda: _running_kernel(run, notebook_id), what)
    sigkill(pid)
    await poll(lambda: _noticed_dead(run, notebook_id, pid), f"kernel pid {pid} reported dead")
    return f"kernel pid {pid} of notebook {notebook_id[:8]}"


async def sleep(run: Run, params: dict[str, Any]) -> None:
    await anyio.sleep(params["secs"])


FAULTS: dict[str, Fault] = {
    "kill_child": kill_child,
    "kill_daemon": kill_daemon,
    "start_daemon": start_daemon,
    "restart_daemon": restart_daemon,
    "upgrade_daemon": upgrade_daemon,
    "kill_kernel": kill_kernel,
    "stop_client": stop_client,
    "start_client": start_client,
    "sleep": sleep,
}
