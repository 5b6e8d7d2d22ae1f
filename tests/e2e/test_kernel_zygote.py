"""Pool kernels forked by the zygote (ADR 0005) are what a plain launch would have made:
their own pool environment, command line, environment tag and random state; a zygote
that dies takes no kernel with it, and the next kernel gets a new one."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import psutil

from nbstage.actors.daemon.kernel.fork_server import ZYGOTE
from nbstage.actors.daemon.kernel.process_tree import TAG_ENV
from tests.support import RunningDaemon, pid_gone, printed, room_view, run_cell, wait_until

PROBE = (
    "import json, os, random, sys\n"
    "site = [p for p in sys.path if p.endswith('site-packages')]\n"
    "print(json.dumps({'prefix': sys.prefix, 'executable': sys.executable, 'site': site,"
    " 'pid': os.getpid(), 'random': random.random(), 'cwd': os.getcwd()}))"
)


def zygote_of(pid: int) -> psutil.Process:
    parent = psutil.Process(pid).parent()
    assert parent is not None
    assert str(ZYGOTE) in parent.cmdline(), parent
    return parent


def probe(client: object, nid: str) -> dict:
    ran = run_cell(client, nid, PROBE)
    assert ran["status"] == "done", ran
    return json.loads(printed(ran))


def test_a_forked_kernel_runs_in_its_own_pool_environment_and_shows_as_launched(
    daemon: RunningDaemon,
) -> None:
    with daemon.client() as client:
        nids = [client.request("create")["notebook_id"] for _ in range(2)]
        seen = [probe(client, nid) for nid in nids]
        pids = [room_view(daemon, nid)["kernel_pid"] for nid in nids]
        zygotes = {zygote_of(pid).pid for pid in pids}
        kernels = [psutil.Process(pid) for pid in pids]
        shown = [(kernel.cmdline(), kernel.environ()) for kernel in kernels]
    assert len(zygotes) == 1, "one zygote forks every pool kernel"
    for facts, pid, (command, environ) in zip(seen, pids, shown, strict=True):
        prefix = Path(facts["prefix"])
        assert facts["pid"] == pid
        assert prefix.parent == daemon.paths.root / "envs" / "pool", prefix
        assert facts["executable"] == str(prefix / "bin" / "python")
        assert Path(facts["site"][0]).is_relative_to(prefix), facts["site"]
        assert len(facts["site"]) == 2, "its own site-packages, then the template's"
        assert command[0] == facts["executable"]
        assert "-f" in command
        assert command[command.index("-f") + 1].endswith(".json")
        assert environ[TAG_ENV].startswith(f"{daemon.pid}-"), environ[TAG_ENV]
        assert not environ[TAG_ENV].endswith("zygote"), "a kernel carries a tag of its own"
    assert shown[0][1][TAG_ENV] != shown[1][1][TAG_ENV]
    assert seen[0]["random"] != seen[1]["random"], "each fork seeds random anew"


def test_a_killed_zygote_leaves_its_kernels_running_and_the_next_kernel_gets_a_new_one(
    daemon: RunningDaemon,
) -> None:
    with daemon.client() as client:
        first = client.request("create")["notebook_id"]
        assert run_cell(client, first, "x = 41")["status"] == "done"
        kernel = room_view(daemon, first)["kernel_pid"]
        zygote = zygote_of(kernel).pid
        os.kill(zygote, signal.SIGKILL)
        wait_until(lambda: pid_gone(zygote), 10, "the killed zygote to end")

        assert printed(run_cell(client, first, "print(x + 1)")) == "42\n"
        second = client.request("create")["notebook_id"]
        assert run_cell(client, second, "y = 1")["status"] == "done"
        fresh = zygote_of(room_view(daemon, second)["kernel_pid"]).pid
        assert fresh != zygote

        restarted = client.request("restart_kernel", notebook_id=first)
        assert restarted["restarted"] is True
        assert zygote_of(restarted["kernel_pid"]).pid == fresh
        assert printed(run_cell(client, first, "print('again')")) == "again\n"


def test_a_kernel_that_installed_into_its_environment_restarts_the_plain_way(
    daemon: RunningDaemon,
) -> None:
    """The zygote holds the template's packages imported; a restart after an install into
    the kernel's own environment (``%pip install``) must import what was installed."""
    install = (
        "import os, sys\n"
        "site = [p for p in sys.path if p.startswith(sys.prefix + '/')][0]\n"
        "open(os.path.join(site, 'installed_here.py'), 'w').write('WHERE = 1')\n"
    )
    with daemon.client() as client:
        nid = client.request("create")["notebook_id"]
        assert run_cell(client, nid, install)["status"] == "done"
        zygote = zygote_of(room_view(daemon, nid)["kernel_pid"]).pid
        restarted = client.request("restart_kernel", notebook_id=nid)
        plain = psutil.Process(restarted["kernel_pid"])
        assert plain.ppid() != zygote
        assert (
            printed(run_cell(client, nid, "import installed_here; print(installed_here.WHERE)"))
            == "1\n"
        )
