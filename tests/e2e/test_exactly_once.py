"""Exactly once for every tool that changes something (issue 11 §1), through real processes.

The session child is made to SIGKILL itself the moment the daemon's answer to the
tool's request arrives (``entrypoints/session/fault_points.py``): the daemon has carried the
request out and nobody upstream knows. The supervisor then retries the call, under the
same idempotency key, on a successor child. Each test checks that the daemon holds one
result: one new room, one restart, one save, one deletion; and that a departure stays.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from nbstage.entrypoints.session.fault_points import FAULT_ENV
from tests.support import (
    RunningDaemon,
    call_ok,
    client_record,
    daemon_running,
    mcp_client,
    room_view,
    run_bounded,
    texts_of,
    wait_until,
)

pytestmark = pytest.mark.e2e

KERNEL_STARTS = "kernel-starts.txt"
RESTARTED = "[nbstage] Session server restarted"


@pytest.fixture
def counted(tmp_path: Path) -> Iterator[RunningDaemon]:
    """A daemon whose kernels each add a line to ``KERNEL_STARTS`` as they start (an
    IPython startup file), so a test can count kernel starts and restarts."""
    startup = tmp_path / "ipython" / "profile_default" / "startup"
    startup.mkdir(parents=True)
    starts = tmp_path / KERNEL_STARTS
    (startup / "00-count.py").write_text(
        f"with open({str(starts)!r}, 'a') as f:\n    f.write('start\\n')\n"
    )
    with daemon_running(tmp_path / "state", {"IPYTHONDIR": str(tmp_path / "ipython")}) as daemon:
        yield daemon


@pytest.fixture
def marker(tmp_path: Path) -> Path:
    return tmp_path / "the-child-died"


def die_after(monkeypatch: pytest.MonkeyPatch, wire_type: str, marker: Path) -> None:
    monkeypatch.setenv(FAULT_ENV, f"{wire_type}:{marker}")


def kernel_starts(tmp_path: Path) -> int:
    return len((tmp_path / KERNEL_STARTS).read_text().splitlines())


async def retried(client: Any, marker: Path, name: str, **arguments: Any) -> dict[str, Any]:
    """Call a tool whose first attempt kills its session child; the retry must succeed."""
    result = await call_ok(client, name, **arguments)
    assert marker.exists(), "the fault point never fired: the test proved nothing"
    return result


def rooms(daemon: RunningDaemon) -> list[dict[str, Any]]:
    return daemon.request("list_rooms")["rooms"]


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
def test_create_notebook_retried_after_a_kill_makes_one_room(
    counted: RunningDaemon, marker: Path, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    die_after(monkeypatch, "create", marker)

    async def body() -> None:
        async with mcp_client(counted, mode, label="ada") as client:
            made = await retried(client, marker, "create_notebook")
            assert [room["notebook_id"] for room in rooms(counted)] == [made["notebook_id"]]
            assert client_record(counted, "ada")["active"] == made["notebook_id"]
            ran = await call_ok(client, "create_cell", source="1 + 1", and_run=True)
            assert ran["execution"]["outputs"][0]["text"] == "2"

    run_bounded(body)


def test_restart_kernel_retried_after_a_kill_restarts_once(
    counted: RunningDaemon, marker: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    die_after(monkeypatch, "restart_kernel", marker)

    async def body() -> None:
        async with mcp_client(counted, "legacy", label="bo") as client:
            await call_ok(client, "create_notebook")
            await call_ok(client, "create_cell", source="before = 1", and_run=True)
            assert kernel_starts(tmp_path) == 1
            await retried(client, marker, "restart_kernel")
            ran = await call_ok(client, "create_cell", source="'before' in dir()", and_run=True)
            assert ran["execution"]["outputs"][0]["text"] == "False"
            assert kernel_starts(tmp_path) == 2, "the kernel was restarted more than once"

    run_bounded(body)


def test_interrupt_kernel_retried_after_a_kill_succeeds_and_the_kernel_goes_on(
    counted: RunningDaemon, marker: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    die_after(monkeypatch, "interrupt", marker)

    async def body() -> None:
        async with mcp_client(counted, "legacy", label="cy") as client:
            await call_ok(client, "create_notebook")
            await call_ok(client, "create_cell", source="x = 40", and_run=True)
            await retried(client, marker, "interrupt_kernel")
            ran = await call_ok(client, "create_cell", source="x + 2", and_run=True)
            assert ran["execution"]["outputs"][0]["text"] == "42"

    run_bounded(body)


def test_save_notebook_retried_after_a_kill_writes_once(
    counted: RunningDaemon, marker: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    die_after(monkeypatch, "save", marker)
    target = tmp_path / "once.ipynb"

    async def body() -> None:
        async with mcp_client(counted, "legacy", label="di") as client:
            made = await call_ok(client, "create_notebook")
            await call_ok(client, "create_cell", source="kept = True")
            saved = await retried(client, marker, "save_notebook", path=str(target))
            assert saved["path"] == str(target)
            # The marker is created after the daemon answered the one save; a second
            # write of the retry would leave the file newer than the marker.
            assert target.stat().st_mtime_ns <= marker.stat().st_mtime_ns
            assert room_view(counted, made["notebook_id"])["path"] == str(target)

    run_bounded(body)


def test_delete_cell_retried_after_a_kill_deletes_once(
    counted: RunningDaemon, marker: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    die_after(monkeypatch, "delete_cell", marker)

    async def body() -> None:
        async with mcp_client(counted, "legacy", label="ed") as client:
            await call_ok(client, "create_notebook")
            ids = [(await call_ok(client, "create_cell", source=s))["cell_id"] for s in "abc"]
            deleted = await retried(client, marker, "delete_cell", cell_id=ids[1])
            assert deleted["deleted"] == ids[1]
            left = await call_ok(client, "get_all_cells")
            assert [cell["cell_id"] for cell in left["cells"]] == [ids[0], ids[2]]

    run_bounded(body)


def test_disconnect_notebook_then_a_kill_does_not_bring_the_session_back(
    counted: RunningDaemon, marker: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """disconnect_notebook answers without waiting for the daemon, so the kill lands just
    after the answer, once the daemon has let the peer go: the successor child must not
    rejoin the notebook the agent left."""
    die_after(monkeypatch, "leave", marker)

    async def body() -> None:
        async with mcp_client(counted, "legacy", label="flo") as client:
            made = await call_ok(client, "create_notebook", ephemeral=False)
            await call_ok(client, "disconnect_notebook")
            await anyio.to_thread.run_sync(wait_until, marker.exists, 20, "the child to die")
            listed = await client.call_tool("list_active_notebooks", {})
            assert not listed.is_error, texts_of(listed)
            notebooks = listed.structured_content["notebooks"]
            assert [n["notebook_id"] for n in notebooks] == [made["notebook_id"]]
            assert not any(n["active"] or n["parked"] for n in notebooks)
            assert room_view(counted, made["notebook_id"])["peers"] == []

    run_bounded(body)


def test_retry_not_double_applied(
    counted: RunningDaemon, marker: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SPEC §14: a create_cell in flight, the session child killed, the call retried under
    the same key: the notebook has the cell once."""
    die_after(monkeypatch, "create_cell", marker)

    async def body() -> None:
        async with mcp_client(counted, "legacy", label="gus") as client:
            await call_ok(client, "create_notebook")
            made = await retried(client, marker, "create_cell", source="once = 1")
            cells = (await call_ok(client, "get_all_cells"))["cells"]
            assert [cell["cell_id"] for cell in cells] == [made["cell_id"]]

    run_bounded(body)
