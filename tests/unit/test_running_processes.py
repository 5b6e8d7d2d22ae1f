"""What /proc says of running processes (actors/daemon/kernel/running_processes.py)."""

from __future__ import annotations

import os
import subprocess

from nbstage.actors.daemon.kernel.running_processes import each_process, exists, running


def test_each_process_reads_the_file_of_every_running_process() -> None:
    mine = dict(each_process("cmdline", os.getuid()))
    assert os.getpid() in mine
    assert b"pytest" in mine[os.getpid()] or b"python" in mine[os.getpid()]
    assert os.getpid() not in dict(each_process("cmdline", os.getuid() + 1))


def test_a_zombie_exists_but_does_not_run() -> None:
    child = subprocess.Popen(["true"])
    try:
        os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)
        assert exists(child.pid)
        assert not running(child.pid)
    finally:
        child.wait()
    assert not exists(child.pid)
    assert running(os.getpid())
