"""Questions about code (``ask_kernel``: a completion, an inspection) put to a room's
kernel over the daemon socket, as the Lab edge puts them: a local kernel and one on a
real Jupyter Kernel Gateway answer alike; a busy kernel or none is not asked, at once;
a question out of shape is refused. (Through Lab itself: test_lab_edge.py.)"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import nbformat
import pytest

from nbstage.entrypoints.control.daemon_client import DaemonClient, DaemonError
from tests.e2e.test_gateway_kernels import configured_daemon, notebook_on
from tests.gateway_support import Gateway, gateway_running
from tests.support import RunningDaemon, run_cell, wait_until

pytestmark = pytest.mark.e2e


def ask(client: DaemonClient, nid: str, question: str, code: str, **more: Any) -> dict:
    more.setdefault("cursor_pos", len(code))
    return client.request("ask_kernel", notebook_id=nid, question=question, code=code, **more)


def completes_and_inspects(client: DaemonClient, nid: str) -> None:
    run_cell(client, nid, "a_long_name = 3")
    completed = ask(client, nid, "complete", "a_long_n")
    assert completed["asked"] is True
    assert "a_long_name" in completed["content"]["matches"]
    inspected = ask(client, nid, "inspect", "a_long_name", detail_level=0)
    assert inspected["content"]["found"] is True
    assert "int" in inspected["content"]["data"]["text/plain"]


def test_a_local_kernel_answers_and_a_busy_or_absent_one_is_not_asked(
    daemon: RunningDaemon, tmp_path: Path
) -> None:
    with daemon.client() as client:
        path = tmp_path / "q.ipynb"
        nbformat.write(nbformat.v4.new_notebook(), path)
        nid = client.request("open", path=str(path))["notebook_id"]
        before = ask(client, nid, "complete", "pri")
        assert before["asked"] is False
        assert before["reason"].startswith(("the kernel is starting", "no kernel is running"))
        completes_and_inspects(client, nid)
        flag = tmp_path / "sleeping"
        sleeper = f"import pathlib, time\npathlib.Path({str(flag)!r}).touch()\ntime.sleep(30)"
        run_cell(client, nid, sleeper, wait_secs=0)
        wait_until(flag.exists, 30, "the cell to start sleeping")
        started = time.monotonic()
        busy = ask(client, nid, "complete", "a_long_n")
        assert busy["asked"] is False
        assert "running a cell" in busy["reason"]
        assert time.monotonic() - started < 5, "a busy kernel is not waited for"
        client.request("interrupt", notebook_id=nid)
        with pytest.raises(DaemonError, match="cursor_pos"):
            ask(client, nid, "complete", "abc", cursor_pos=9)


def test_a_kernel_on_a_gateway_answers_too(state_dir: Path, tmp_path: Path) -> None:
    gateway: Gateway
    with (
        gateway_running() as gateway,
        configured_daemon(state_dir, gateway) as daemon,
        daemon.client() as client,
    ):
        nid = client.request("open", path=str(notebook_on(tmp_path, "kg")))["notebook_id"]
        completes_and_inspects(client, nid)
        client.request("shutdown_kernel", notebook_id=nid)
