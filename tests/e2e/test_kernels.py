"""Real ipykernel kernels behind the daemon socket (SPEC §4 "Execution", §5 "Kernels").

Each test gets its own daemon, records every kernel pid it sees, and ends by
stopping the daemon and proving that none of those kernels is still running.
Cells that must stay busy wait for a flag file the test creates, so every
"while it runs" below is a fact the test arranged, not a guess about timing.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import stat
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from nbstage.actors.daemon.kernel.kernel_backend import LAUNCHER
from nbstage.entrypoints.common.statedir import state_paths
from nbstage.entrypoints.control.daemon_client import DaemonClient, DaemonError
from tests.conftest import FAST_SETTINGS
from tests.support import (
    RunningDaemon,
    daemon_running,
    pid_gone,
    processes_of_daemon,
    room_view,
    run_cell,
    tcp_listeners,
    wait_until,
)

pytestmark = pytest.mark.e2e

WAIT = 30.0
"""Longest any execute or get_execution here waits; cells finish far sooner."""

PNG_1X1 = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJ"
    "AAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


# --- helpers ------------------------------------------------------------------------------


def kernel_pid(daemon: RunningDaemon, notebook_id: str, seen: set[int]) -> int:
    """The room's kernel pid once the kernel is ready; remembered in ``seen``."""
    pid = wait_until(
        lambda: (room_view(daemon, notebook_id) or {}).get("kernel_pid"),
        30,
        f"a kernel pid for {notebook_id}",
    )
    seen.add(pid)
    return pid


def stop_and_prove_no_kernel_left(daemon: RunningDaemon, seen: set[int]) -> None:
    assert seen, "the test should have seen at least one kernel"
    daemon.stop()
    wait_until(lambda: all(pid_gone(pid) for pid in seen), 10, f"kernels {sorted(seen)} to exit")


def touch_then(flag: Path, then: str) -> str:
    """Cell source that creates ``flag`` and then runs ``then``."""
    return f"import pathlib, time\npathlib.Path({str(flag)!r}).touch()\n{then}"


def wait_for_file(flag: Path, then: str = "") -> str:
    """Cell source that blocks until ``flag`` exists (at most a minute), then runs ``then``."""
    return (
        "import pathlib, time\n"
        "for _ in range(6000):\n"
        f"    if pathlib.Path({str(flag)!r}).exists():\n"
        "        break\n"
        "    time.sleep(0.01)\n"
        f"{then}"
    )


def get_execution(client: DaemonClient, notebook_id: str, execution_id: str) -> dict[str, Any]:
    answer = client.request(
        "get_execution", notebook_id=notebook_id, execution_id=execution_id, wait_secs=WAIT
    )
    return answer["execution"]


def stream_text(outputs: list[dict[str, Any]], name: str = "stdout") -> str:
    return "".join(
        "".join(out["text"]) if isinstance(out["text"], list) else out["text"]
        for out in outputs
        if out["output_type"] == "stream" and out["name"] == name
    )


def errors_of(execution: dict[str, Any]) -> list[tuple[str, str]]:
    return [
        (out["ename"], out["evalue"])
        for out in execution["outputs"]
        if out["output_type"] == "error"
    ]


# --- outputs ------------------------------------------------------------------------------


def test_the_kernel_runs_the_launcher_by_its_path_and_cannot_import_nbstage_s_modules(
    daemon: RunningDaemon,
) -> None:
    """The launcher file works in an environment without nbstage; run by its path, it
    must not leave its folder (nbstage's actors, journal.py among them) on the path."""
    probe = (
        "import importlib.util, sys\n"
        "print(sys.argv[0].rsplit('/', 1)[-1], importlib.util.find_spec('journal'),"
        " '' in sys.path)"
    )
    with daemon.client() as client:
        nid = client.request("create")["notebook_id"]
        ran = run_cell(client, nid, probe)
        command = psutil.Process(room_view(daemon, nid)["kernel_pid"]).cmdline()
    assert ran["status"] == "done", ran
    assert ran["outputs"][0]["text"] == "kernel_launcher.py None True\n"
    assert str(LAUNCHER) in command
    assert "-m" not in command


def test_values_prints_images_and_exceptions_come_back_as_nbformat_outputs(
    daemon: RunningDaemon,
) -> None:
    seen: set[int] = set()
    with daemon.client() as client:
        nid = client.request("create")["notebook_id"]

        value = run_cell(client, nid, "1+1")
        assert value["status"] == "done"
        assert value["execution_count"] == 1
        assert [out["output_type"] for out in value["outputs"]] == ["execute_result"]
        assert value["outputs"][0]["data"]["text/plain"] == "2"
        assert value["outputs"][0]["execution_count"] == 1

        printed = run_cell(client, nid, "print('hello from the kernel')")
        assert printed["status"] == "done"
        assert printed["execution_count"] == 2
        assert printed["outputs"] == [
            {"output_type": "stream", "name": "stdout", "text": "hello from the kernel\n"}
        ]

        image = run_cell(
            client,
            nid,
            "import base64\nfrom IPython.display import Image, display\n"
            f"display(Image(data=base64.b64decode({PNG_1X1!r}), format='png'))",
        )
        assert image["status"] == "done"
        assert [out["output_type"] for out in image["outputs"]] == ["display_data"]
        png = image["outputs"][0]["data"]["image/png"]
        assert base64.b64decode(png) == base64.b64decode(PNG_1X1)

        failed = run_cell(client, nid, "print('before')\nraise ValueError('boom')")
        assert failed["status"] == "error"
        assert failed["execution_count"] == 4
        assert stream_text(failed["outputs"]) == "before\n"
        assert errors_of(failed) == [("ValueError", "boom")]
        assert failed["error"] == "ValueError: boom"

        cell = client.request("get_cell", notebook_id=nid, cell_id=value["cell_id"])["cell"]
        assert cell["execution_count"] == 1
        assert cell["outputs"][0]["data"]["text/plain"] == "2"
        kernel_pid(daemon, nid, seen)
    stop_and_prove_no_kernel_left(daemon, seen)


# --- interrupt, stop-on-error, one execution per live cell --------------------------------


def test_interrupt_ends_a_long_sleep_with_keyboard_interrupt(
    daemon: RunningDaemon, tmp_path: Path
) -> None:
    seen: set[int] = set()
    sleeping = tmp_path / "sleeping"
    with daemon.client() as client:
        nid = client.request("create")["notebook_id"]
        began = time.monotonic()
        first = run_cell(client, nid, touch_then(sleeping, "time.sleep(30)"), wait_secs=0)
        assert first["status"] in ("queued", "running")
        wait_until(sleeping.exists, 30, "the cell to start sleeping")

        assert client.request("interrupt", notebook_id=nid) == {"interrupted": True}
        ended = get_execution(client, nid, first["execution_id"])
        assert time.monotonic() - began < 20, "the interrupt should end the 30 s sleep early"
        assert ended["status"] == "error"
        assert [name for name, _ in errors_of(ended)] == ["KeyboardInterrupt"]

        after = run_cell(client, nid, "40 + 2")
        assert after["status"] == "done", "the kernel should survive an interrupt"
        assert after["outputs"][0]["data"]["text/plain"] == "42"
        kernel_pid(daemon, nid, seen)
    stop_and_prove_no_kernel_left(daemon, seen)


def test_an_error_cancels_the_cells_queued_behind_it(daemon: RunningDaemon, tmp_path: Path) -> None:
    seen: set[int] = set()
    release = tmp_path / "release"
    with daemon.client() as client:
        nid = client.request("create")["notebook_id"]
        sources = [
            wait_for_file(release, "raise RuntimeError('first cell fails')"),
            "second = 2",
            "third = 3",
        ]
        queued = [run_cell(client, nid, source, wait_secs=0) for source in sources]
        assert [q["status"] for q in queued[1:]] == ["queued", "queued"]
        release.touch()

        first, second, third = (get_execution(client, nid, q["execution_id"]) for q in queued)
        assert first["status"] == "error"
        assert errors_of(first) == [("RuntimeError", "first cell fails")]
        assert (second["status"], third["status"]) == ("cancelled", "cancelled")
        assert second["outputs"] == third["outputs"] == []

        never_ran = run_cell(client, nid, "'second' in dir()")
        assert never_ran["outputs"][0]["data"]["text/plain"] == "False"
        kernel_pid(daemon, nid, seen)
    stop_and_prove_no_kernel_left(daemon, seen)


def test_executing_a_queued_or_running_cell_returns_its_execution_id(
    daemon: RunningDaemon, tmp_path: Path
) -> None:
    seen: set[int] = set()
    started, release = tmp_path / "started", tmp_path / "release"
    with daemon.client() as client:
        nid = client.request("create")["notebook_id"]
        source = touch_then(started, wait_for_file(release, "'finished'"))
        cell_id = client.request("create_cell", notebook_id=nid, source=source)["cell_id"]

        def execute(wait_secs: float = 0) -> dict[str, Any]:
            answer = client.request(
                "execute", notebook_id=nid, cell_id=cell_id, wait_secs=wait_secs
            )
            return answer["execution"]

        first = execute()
        assert first["status"] in ("queued", "running")
        assert execute()["execution_id"] == first["execution_id"]

        wait_until(started.exists, 30, "the cell to start running")
        again = execute()
        assert (again["execution_id"], again["status"]) == (first["execution_id"], "running")

        release.touch()
        done = get_execution(client, nid, first["execution_id"])
        assert done["status"] == "done"
        assert done["outputs"][0]["data"]["text/plain"] == "'finished'"

        rerun = execute(WAIT)
        assert rerun["execution_id"] != first["execution_id"], "a finished cell runs anew"
        assert rerun["status"] == "done"
        kernel_pid(daemon, nid, seen)
    stop_and_prove_no_kernel_left(daemon, seen)


# --- restart and death --------------------------------------------------------------------


def test_restart_clears_state_and_replaces_the_kernel_process(daemon: RunningDaemon) -> None:
    seen: set[int] = set()
    with daemon.client() as client:
        nid = client.request("create")["notebook_id"]
        assert run_cell(client, nid, "x = 1")["status"] == "done"
        old = kernel_pid(daemon, nid, seen)

        restarted = client.request("restart_kernel", notebook_id=nid)
        assert restarted["restarted"] is True
        new = restarted["kernel_pid"]
        seen.add(new)
        assert new not in (None, old)
        wait_until(lambda: pid_gone(old), 10, f"the old kernel pid {old} to exit")

        lost = run_cell(client, nid, "x")
        assert lost["status"] == "error"
        assert [name for name, _ in errors_of(lost)] == ["NameError"]
        assert lost["execution_count"] == 1, "a fresh kernel counts from one again"
        room = room_view(daemon, nid)
        assert (room["kernel_pid"], room["kernel_status"]) == (new, "idle")
    stop_and_prove_no_kernel_left(daemon, seen)


def test_a_killed_kernel_fails_its_cell_and_the_next_execute_until_restart(
    daemon: RunningDaemon, tmp_path: Path
) -> None:
    seen: set[int] = set()
    sleeping = tmp_path / "sleeping"
    with daemon.client() as client:
        nid = client.request("create")["notebook_id"]
        in_flight = run_cell(client, nid, touch_then(sleeping, "time.sleep(30)"), wait_secs=0)
        wait_until(sleeping.exists, 30, "the cell to start sleeping")
        doomed = kernel_pid(daemon, nid, seen)

        os.kill(doomed, signal.SIGKILL)
        wait_until(
            lambda: room_view(daemon, nid)["kernel_status"] == "dead",
            10,
            "list_rooms to show the kernel dead",
        )
        lost = get_execution(client, nid, in_flight["execution_id"])
        assert lost["status"] == "error"
        assert "died" in lost["error"]

        with pytest.raises(DaemonError) as died:
            run_cell(client, nid, "1+1")
        assert died.value.code == "kernel_died"
        assert "restart_kernel" in died.value.message
        assert str(doomed) in died.value.message

        restarted = client.request("restart_kernel", notebook_id=nid)
        assert restarted["restarted"] is True
        assert restarted["kernel_pid"] not in (None, doomed)
        seen.add(restarted["kernel_pid"])
        works = run_cell(client, nid, "1+1")
        assert works["status"] == "done"
        assert works["outputs"][0]["data"]["text/plain"] == "2"
        assert room_view(daemon, nid)["kernel_pid"] == restarted["kernel_pid"]
    stop_and_prove_no_kernel_left(daemon, seen)


# --- records and big outputs --------------------------------------------------------------


def test_a_finished_execution_is_read_from_disk_after_a_daemon_restart(
    daemon: RunningDaemon,
) -> None:
    seen: set[int] = set()
    with daemon.client() as client:
        nid = client.request("create", ephemeral=False)["notebook_id"]
        finished = run_cell(client, nid, "print('kept')\n6 * 7")
        assert finished["status"] == "done"
        kernel_pid(daemon, nid, seen)
    stop_and_prove_no_kernel_left(daemon, seen)
    record = daemon.paths.executions / f"{finished['execution_id']}.json"
    assert json.loads(record.read_bytes()) == finished

    with daemon_running(daemon.paths.root, daemon.env) as again:
        with again.client() as client:
            client.request("attach", notebook_id=nid)
            stored = client.request(
                "get_execution", notebook_id=nid, execution_id=finished["execution_id"]
            )["execution"]
            kernel_pid(again, nid, seen)
        assert stored == finished
        assert stored["status"] == "done"
        assert stream_text(stored["outputs"]) == "kept\n"
        assert stored["outputs"][-1]["data"]["text/plain"] == "42"
        stop_and_prove_no_kernel_left(again, seen)


def test_ten_thousand_lines_are_stored_whole_while_another_notebook_answers(
    daemon: RunningDaemon, tmp_path: Path
) -> None:
    seen: set[int] = set()
    printed, release = tmp_path / "printed", tmp_path / "release"
    source = "for i in range(10_000):\n    print(i)\n" + touch_then(printed, wait_for_file(release))
    with daemon.client() as busy, daemon.client(timeout=5) as other:
        quiet = other.request("create", runtime=None)["notebook_id"]
        quiet_cell = other.request("create_cell", notebook_id=quiet, source="'quiet'")["cell_id"]
        nid = busy.request("create")["notebook_id"]
        loud = run_cell(busy, nid, source, wait_secs=0)

        for moment in ("while printing", "after printing"):
            if moment == "after printing":
                wait_until(printed.exists, 30, "the cell to print its 10,000 lines")
            cells = other.request("get_cells", notebook_id=quiet)
            assert cells["total"] == 1, moment
            assert cells["cells"][0]["cell_id"] == quiet_cell, moment
        release.touch()

        done = get_execution(busy, nid, loud["execution_id"])
        assert done["status"] == "done"
        assert [out["output_type"] for out in done["outputs"]] == ["stream"]
        assert stream_text(done["outputs"]).splitlines() == [str(i) for i in range(10_000)]
        cell = busy.request("get_cell", notebook_id=nid, cell_id=loud["cell_id"])["cell"]
        assert stream_text(cell["outputs"]).count("\n") == 10_000
        kernel_pid(daemon, nid, seen)
    stop_and_prove_no_kernel_left(daemon, seen)


# --- processes, files and sockets ---------------------------------------------------------


def test_a_sigkilled_daemon_takes_its_actors_and_kernel_with_it(daemon: RunningDaemon) -> None:
    seen: set[int] = set()
    with daemon.client() as client:
        nid = client.request("create")["notebook_id"]
        assert run_cell(client, nid, "1+1")["status"] == "done"
        pid = kernel_pid(daemon, nid, seen)
        family = processes_of_daemon(daemon.pid)
        assert pid in {proc.pid for proc in family}, "the kernel should count as the daemon's"

        daemon.kill()
        wait_until(
            lambda: all(pid_gone(proc.pid) for proc in family),
            10,
            "every process of the killed daemon, kernel included, to exit",
        )
    assert processes_of_daemon(daemon.pid) == []


def test_kernel_connection_files_are_private_and_nothing_listens_on_tcp(
    daemon: RunningDaemon,
) -> None:
    seen: set[int] = set()
    with daemon.client() as client:
        nid = client.request("create")["notebook_id"]
        assert run_cell(client, nid, "1+1")["status"] == "done"
        pid = kernel_pid(daemon, nid, seen)

        kernel_dir = daemon.paths.kernel_dir
        # jupyter_client adds the sticky bit to a connection file's dir; access stays 0700.
        assert stat.S_IMODE(kernel_dir.stat().st_mode) & 0o777 == 0o700
        connection_files = list(kernel_dir.glob("*.json"))
        assert len(connection_files) == 1, connection_files
        assert stat.S_IMODE(connection_files[0].stat().st_mode) == 0o600
        assert json.loads(connection_files[0].read_text())["transport"] == "ipc"

        family = processes_of_daemon(daemon.pid)
        assert pid in {proc.pid for proc in family}
        assert tcp_listeners(family) == []
    stop_and_prove_no_kernel_left(daemon, seen)


def test_an_unknown_runtime_is_refused_with_the_available_kernelspecs(
    daemon: RunningDaemon,
) -> None:
    with pytest.raises(DaemonError) as refused:
        daemon.request("create", runtime="nope")
    assert refused.value.code == "unknown_runtime"
    assert "python3" in refused.value.message
    assert daemon.request("list_rooms")["rooms"] == []


def test_a_long_state_dir_puts_sockets_in_a_short_runtime_dir(state_dir: Path) -> None:
    long_dir = state_dir.parent / ("a-rather-deep-directory-" * 3) / ("nested-" * 6) / "state"
    assert len(str(long_dir)) > 108
    seen: set[int] = set()
    try:
        with daemon_running(long_dir, FAST_SETTINGS) as daemon:
            paths = daemon.paths
            assert paths.root == long_dir
            assert paths.socket_dir != paths.root
            assert paths.socket.is_socket()
            assert len(str(paths.socket)) <= 107
            assert (long_dir / "socket-dir").read_text().strip() == str(paths.socket_dir)
            with daemon.client() as client:
                nid = client.request("create")["notebook_id"]
                value = run_cell(client, nid, "1+1")
                assert value["status"] == "done"
                assert value["outputs"][0]["data"]["text/plain"] == "2"
                kernel_pid(daemon, nid, seen)
            assert list(paths.kernel_dir.glob("*.json")), "the kernel's files live by the socket"
            stop_and_prove_no_kernel_left(daemon, seen)
            assert not paths.socket_dir.exists(), "a stopped daemon removes the dir it made"
            assert not (long_dir / "socket-dir").exists()
    finally:
        shutil.rmtree(state_paths(long_dir).socket_dir, ignore_errors=True)
