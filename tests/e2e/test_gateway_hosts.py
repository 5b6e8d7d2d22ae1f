"""Three kernel hosts (issue 26): three real `jupyter kernelgateway` processes, on
127.0.0.1, 127.0.0.2 and 127.0.0.3 (loopback aliases), each with a token of its own, the
third on https with a certificate from a test CA (tests/gateway_support.py). One set of
three serves the whole session; they start side by side.

The last test kills the gateway on 127.0.0.2 outright, so it stays last in this file.
No test reaches an address other than these hosts and a silent socket of its own.
"""

from __future__ import annotations

import signal
import socket
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from nbstage.actors.daemon.kernel.gateway_backend import ANSWER_SECS
from nbstage.entrypoints.control.daemon_client import DaemonClient, DaemonError
from tests.conftest import FAST_SETTINGS
from tests.gateway_support import Gateway, gateways_running, notebook_wishing
from tests.support import (
    call_ok,
    daemon_running,
    mcp_client,
    room_view,
    run_bounded,
    run_cell,
    texts_of,
    wait_until,
)

pytestmark = pytest.mark.e2e

NAMES = ("a", "b", "c")
"""The hosts as config.toml names them: a on 127.0.0.1, b on 127.0.0.2, c (https) on .3."""


@pytest.fixture(scope="session")
def hosts() -> Iterator[dict[str, Gateway]]:
    wanted = [("127.0.0.1", False), ("127.0.0.2", False), ("127.0.0.3", True)]
    with gateways_running(wanted) as running:
        yield dict(zip(NAMES, running, strict=True))


def table(
    name: str, url: str, token: str, ca_file: Path | None = None, most: int = 0, silence: int = 0
) -> str:
    lines = ["[[kernel_hosts]]", f'name = "{name}"', f'url = "{url}"', f'token = "{token}"']
    lines += [f'ca_file = "{ca_file}"'] if ca_file is not None else []
    lines += [f"max_kernels = {most}"] if most else []
    lines += [f"silence_secs = {silence}"] if silence else []
    return "\n".join(lines) + "\n\n"


def three_hosts(hosts: dict[str, Gateway], most: int = 0, silence: int = 0) -> str:
    return "".join(table(n, g.url, g.token, g.ca_file, most, silence) for n, g in hosts.items())


def daemon_with(state_dir: Path, tables: str, env: dict[str, str] = FAST_SETTINGS) -> Any:
    state_dir.mkdir(mode=0o700, parents=True)
    (state_dir / "config.toml").write_text(tables)
    return daemon_running(state_dir, env)


def opened(client: DaemonClient, path: Path) -> str:
    return client.request("open", path=str(path))["notebook_id"]


def finished(client: DaemonClient, nid: str, execution: dict[str, Any]) -> dict[str, Any]:
    answer = client.request(
        "get_execution", notebook_id=nid, execution_id=execution["execution_id"], wait_secs=60
    )
    return answer["execution"]


def stdout_of(execution: dict[str, Any]) -> str:
    return "".join(out["text"] for out in execution["outputs"] if out["output_type"] == "stream")


PARENT = "import os\nprint(os.getppid())"


def host_of(hosts: dict[str, Gateway], execution: dict[str, Any]) -> str:
    """The host whose gateway is the parent of the kernel that ran ``PARENT``."""
    assert execution["status"] == "done", (execution.get("error"), execution["outputs"])
    by_pid = {str(g.process.pid): name for name, g in hosts.items()}
    return by_pid[stdout_of(execution).strip()]


def test_a_kernel_on_each_host_runs_streams_interrupts_restarts_and_stops(
    hosts: dict[str, Gateway], state_dir: Path, tmp_path: Path
) -> None:
    with daemon_with(state_dir, three_hosts(hosts)) as daemon, daemon.client() as client:
        nids = {
            name: opened(client, notebook_wishing(tmp_path / f"{name}.ipynb", name))
            for name in NAMES
        }
        # The three kernels start side by side: each run is queued before any is awaited.
        first = {name: run_cell(client, nid, PARENT, wait_secs=0) for name, nid in nids.items()}
        for name, nid in nids.items():
            assert host_of(hosts, finished(client, nid, first[name])) == name
            assert room_view(daemon, nid)["environment"] == {"source": "host", "host": name}

        loop = "import time\nfor i in range(4):\n    print(i, flush=True)\n    time.sleep(0.02)"
        for nid in nids.values():
            streamed = run_cell(client, nid, loop)
            assert stdout_of(streamed) == "0\n1\n2\n3\n", streamed

        sleeping = {}
        for name, nid in nids.items():
            flag = tmp_path / f"sleeping-{name}"
            code = f"import pathlib, time\npathlib.Path({str(flag)!r}).touch()\ntime.sleep(60)"
            sleeping[name] = (flag, run_cell(client, nid, code, wait_secs=0))
        began = time.monotonic()
        for name, nid in nids.items():
            flag, run = sleeping[name]
            wait_until(flag.exists, 30, f"the cell on {name} to start sleeping")
            assert client.request("interrupt", notebook_id=nid) == {"interrupted": True}
            ended = finished(client, nid, run)
            errors = [o["ename"] for o in ended["outputs"] if o["output_type"] == "error"]
            assert errors == ["KeyboardInterrupt"], ended
        assert time.monotonic() - began < 30, "the interrupts end the 60 s sleeps early"

        for name, nid in nids.items():
            run_cell(client, nid, "x = 1")
            assert client.request("restart_kernel", notebook_id=nid)["restarted"] is True
            after = run_cell(client, nid, "x")
            assert after["status"] == "error", f"the kernel on {name} kept its variables"
            client.request("shutdown_kernel", notebook_id=nid)
            gateway = hosts[name]
            wait_until(lambda g=gateway: g.kernels() == [], 15, f"{name}'s kernel to be deleted")


def test_32_notebooks_asking_for_any_host_at_once_spread_and_each_runs_a_cell(
    hosts: dict[str, Gateway], state_dir: Path, tmp_path: Path
) -> None:
    """Each host takes at most 11: the 32 starts are asked for in one burst, before any
    kernel runs, so only the daemon's ledger keeps them apart. (A gateway starting 11
    kernels on a loaded 2-core machine can be silent for seconds: the hosts are given
    30 s of silence, since what a silence means is another test's.)"""
    tables = three_hosts(hosts, most=11, silence=30)
    with daemon_with(state_dir, tables) as daemon, daemon.client() as client:
        nids = [
            opened(client, notebook_wishing(tmp_path / f"n{at}.ipynb", "*")) for at in range(32)
        ]
        runs = [run_cell(client, nid, PARENT, wait_secs=0) for nid in nids]
        served = [
            host_of(hosts, finished(client, nid, run)) for nid, run in zip(nids, runs, strict=True)
        ]
        spread = Counter(served)
        assert sum(spread.values()) == 32, "every notebook was served"
        assert set(spread) == set(NAMES), spread
        assert max(spread.values()) <= 11, spread
        assert min(spread.values()) >= 10, f"spread by load: {spread}"
        for nid, name in zip(nids, served, strict=True):
            assert room_view(daemon, nid)["environment"]["host"] == name
        assert {name: len(g.kernels()) for name, g in hosts.items()} == dict(spread)


def failure_of(client: DaemonClient, nid: str) -> str:
    """Why a run fails on a notebook whose kernel cannot start: the run's error, or, once
    the start has failed, the refusal of the run (``kernel_died: …``)."""
    try:
        run = run_cell(client, nid, "1+1", wait_secs=0)
    except DaemonError as refused:
        return f"{refused.code}: {refused.message}"
    failed = finished(client, nid, run)
    assert failed["status"] == "error", failed
    return failed["error"]


@pytest.fixture
def silent_host() -> Iterator[str]:
    """A host that takes connections (the kernel completes the handshake from the listen
    backlog) and never says a word."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.2", 0))
        listener.listen(16)
        yield f"http://127.0.0.2:{listener.getsockname()[1]}"


def test_a_wrong_token_an_untrusted_certificate_and_a_silent_host_fail_clearly_in_time(
    hosts: dict[str, Gateway], silent_host: str, state_dir: Path, tmp_path: Path
) -> None:
    a, c = hosts["a"], hosts["c"]
    tables = (
        table("a", a.url, a.token)
        + table("wrongtoken", a.url, "not-the-token")
        + table("untrusted", c.url, c.token)
        + table("silent", silent_host, "t")
    )
    # The watch probes once, at the start: a start meets each host's own error.
    slow_checks = {**FAST_SETTINGS, "NBSTAGE_KERNEL_HOST_CHECK_SECS": "3600"}
    expected = {
        "wrongtoken": "was refused (HTTP 401): check its token",
        "untrusted": "its certificate is not trusted",
        "silent": "asking its version failed: no answer",
    }
    with daemon_with(state_dir, tables, slow_checks) as daemon, daemon.client() as client:
        served = opened(client, notebook_wishing(tmp_path / "served.ipynb", "a"))
        assert run_cell(client, served, "1+1")["status"] == "done"
        began = time.monotonic()
        bad = {
            name: opened(client, notebook_wishing(tmp_path / f"{name}.ipynb", name))
            for name in expected
        }
        # Their kernels start as they open; meanwhile the daemon serves the others.
        assert run_cell(client, served, "print('meanwhile')")["status"] == "done"
        local = client.request("create")["notebook_id"]
        assert run_cell(client, local, "40 + 2")["status"] == "done"
        for name, nid in bad.items():
            said = failure_of(client, nid)
            assert f"kernel host {name!r}" in said, said
            assert expected[name] in said, said
            assert a.token not in said
            assert "not-the-token" not in said
        assert time.monotonic() - began < ANSWER_SECS + 5, "each failed within its bound"
        assert daemon.request("identity")["pid"] == daemon.pid


def test_a_killed_host_its_rooms_are_told_the_others_run_on_and_a_restart_moves_the_kernel(
    hosts: dict[str, Gateway], state_dir: Path, tmp_path: Path
) -> None:
    """Kills host b's gateway outright (SIGKILL): it must stay the last test here."""
    b = hosts["b"]

    async def body(daemon: Any) -> None:
        async with mcp_client(daemon, "legacy", cwd=tmp_path) as agent:
            await call_ok(agent, "create_notebook", kernel_host="b")
            cell = await call_ok(agent, "create_cell", source="x = 1\nprint('on b')")
            ran = await call_ok(agent, "execute_cell", cell_id=cell["cell_id"])
            assert ran["execution"]["outputs"][0]["text"] == "on b\n", ran
            (notebook,) = (await call_ok(agent, "list_active_notebooks"))["notebooks"]
            assert notebook["kernel_host"] == "b"
            nid = notebook["notebook_id"]

            with daemon.client() as client:
                others = {
                    name: opened(client, notebook_wishing(tmp_path / f"{name}.ipynb", name))
                    for name in ("a", "c")
                }
                for name, other in others.items():
                    assert host_of(hosts, run_cell(client, other, PARENT)) == name
                orphans = psutil.Process(b.process.pid).children(recursive=True)
                killed_at = time.monotonic()
                try:
                    b.process.send_signal(signal.SIGKILL)
                    b.process.wait(10)
                    wait_until(
                        lambda: room_view(daemon, nid)["kernel_status"] == "dead",
                        5,
                        "the kernel on the killed host to be reported dead",
                    )
                    told = time.monotonic() - killed_at
                    died = await agent.call_tool("execute_cell", {"cell_id": cell["cell_id"]})
                    assert died.is_error
                    assert died.structured_content["code"] == "kernel_died", died
                    said = " ".join(texts_of(died))
                    assert "on kernel host 'b' died" in said, said
                    assert "restart_kernel" in said, said

                    for name, other in others.items():
                        assert host_of(hosts, run_cell(client, other, PARENT)) == name

                    restarted = await agent.call_tool("restart_kernel", {})
                    assert not restarted.is_error, texts_of(restarted)
                    moved = restarted.structured_content["moved"]
                    assert moved["from"] == "b", moved
                    assert moved["to"] in ("a", "c"), moved
                    text = " ".join(texts_of(restarted))
                    assert f"kernel moved from b to {moved['to']}" in text, text
                    assert f"kernel host 'b' is lost: the kernel runs on '{moved['to']}'" in (
                        text
                    ), "the agent hears why"
                    again = await call_ok(agent, "create_cell", source=PARENT)
                    now = await call_ok(agent, "execute_cell", cell_id=again["cell_id"])
                    assert host_of(hosts, now["execution"]) == moved["to"]
                    assert room_view(daemon, nid)["environment"]["host"] == moved["to"]
                finally:
                    for orphan in orphans:
                        if orphan.is_running():
                            orphan.kill()
                assert told < 5, f"the room was told {told:.1f} s after the kill"

    with daemon_with(state_dir, three_hosts(hosts)) as daemon:
        run_bounded(body, daemon, budget=90)
