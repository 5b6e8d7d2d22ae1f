"""A kernel's tree is found by its tag, even a child that left its session and parent."""

from __future__ import annotations

import os
import subprocess
import sys

from nbstage.actors.daemon.kernel.process_tree import (
    end_orphans_of,
    end_tree,
    kernel_tag,
    tagged,
    tagged_environ,
)
from tests.support import pid_gone, wait_until

ORPHAN = """
import os
import subprocess
quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
print(subprocess.Popen(["sleep", "300"], start_new_session=True, **quiet).pid)
"""


def test_an_orphan_in_its_own_session_is_found_by_its_tag_and_ended() -> None:
    tag = kernel_tag("test-tree")
    other = subprocess.Popen(["sleep", "300"], env=tagged_environ(kernel_tag("another")))
    try:
        started = subprocess.run(
            [sys.executable, "-c", ORPHAN],
            env=tagged_environ(tag),
            capture_output=True,
            text=True,
            timeout=30,
        )
        orphan = int(started.stdout)
        assert tagged(tag) == {orphan}
        assert end_tree(tag, None) == {orphan}
        wait_until(lambda: pid_gone(orphan), 5, "the orphan to end")
        assert not pid_gone(other.pid), "another kernel's tag is left alone"
    finally:
        end_tree(tag, None)
        other.kill()
        other.wait()


def test_the_root_and_its_descendants_end_even_without_the_tag() -> None:
    root = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import subprocess, time; subprocess.Popen(['sleep', '300']); time.sleep(300)",
        ],
    )
    try:
        import psutil

        children = wait_until(lambda: psutil.Process(root.pid).children(), 10, "the child")
        killed = end_tree(kernel_tag("untagged"), root.pid)
        assert killed == {root.pid, children[0].pid}
        root.wait(timeout=5)
        wait_until(lambda: pid_gone(children[0].pid), 5, "the child to end")
    finally:
        root.kill()
        root.wait()


def test_the_kernels_of_a_daemon_still_running_are_not_orphans() -> None:
    kernel = subprocess.Popen(["sleep", "300"], env=tagged_environ(kernel_tag("mine")))
    try:
        assert end_orphans_of(os.getpid()) == set()
        assert not pid_gone(kernel.pid)
    finally:
        kernel.kill()
        kernel.wait()
