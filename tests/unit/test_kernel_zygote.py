"""The kernel zygote's pure parts, and the daemon's hold on a forked kernel (ADR 0005)."""

from __future__ import annotations

import ast
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from nbstage.actors.daemon.environment.environments import TEMPLATE_LINK
from nbstage.actors.daemon.kernel import kernel_zygote as zygote
from nbstage.actors.daemon.kernel.fork_server import (
    ENDED,
    ZYGOTE,
    ForkedKernel,
    Zygote,
    ZygoteUnavailable,
)
from nbstage.actors.daemon.kernel.forking_provisioner import has_packages_of_its_own
from nbstage.actors.daemon.kernel.kernel_zygote import site_packages


def stat_line(command: str, areas: tuple[int, int, int, int]) -> str:
    """A ``/proc/<pid>/stat`` line whose fields 48 to 51 are ``areas``."""
    fields = [str(n) for n in range(3, 48)] + [str(a) for a in areas] + ["0"]
    return f"4242 ({command}) {' '.join(fields)}"


@pytest.mark.parametrize("command", ["python", "a (b) c", "x)y"])
def test_the_command_line_and_environment_areas_are_read_after_the_command_name(
    command: str,
) -> None:
    line = stat_line(command, (100, 180, 180, 900))
    assert zygote.memory_areas(line) == ((100, 180), (180, 900))


@pytest.mark.parametrize(
    ("strings", "size", "expected"),
    [
        pytest.param(["ab", "c"], 6, b"ab\0c\0\0", id="padded with NULs"),
        pytest.param(["ab", "c"], 5, b"ab\0c\0", id="exactly full"),
        pytest.param(["ab", "c"], 4, None, id="does not fit"),
        pytest.param([], 2, b"\0\0", id="nothing"),
    ],
)
def test_packed_strings_fill_the_area_or_are_refused(strings, size, expected) -> None:
    assert zygote.packed(strings, size) == expected


def test_an_environment_is_shown_as_its_lines() -> None:
    assert zygote.environ_lines({"A": "1", "B": "x=y"}) == ["A=1", "B=x=y"]


def test_a_venv_is_found_from_its_interpreter_without_following_the_link(tmp_path: Path) -> None:
    env = tmp_path / "pool" / "k1"
    (env / "bin").mkdir(parents=True)
    (env / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (env / "bin" / "python").symlink_to(sys.executable)
    assert zygote.venv_of(str(env / "bin" / "python")) == str(env)
    assert zygote.venv_of(str(tmp_path / "bin" / "python")) is None


@pytest.mark.parametrize(
    ("paths", "expected"),
    [
        pytest.param(["/lib", "/t/sp", "/x"], ["/lib", "/k/sp", "/t/sp", "/x"], id="before"),
        pytest.param(["/lib"], ["/lib", "/k/sp"], id="appended without the template's"),
        pytest.param(["/k/sp", "/lib", "/t/sp"], ["/lib", "/k/sp", "/t/sp"], id="moved"),
    ],
)
def test_the_kernel_s_site_packages_come_just_before_the_template_s(paths, expected) -> None:
    assert zygote.path_for(paths, "/k/sp", "/t/sp") == expected


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        pytest.param("/t/share/jupyter", "/k/share/jupyter", id="inside"),
        pytest.param("/t", "/k", id="the prefix itself"),
        pytest.param("/usr/share/jupyter", "/usr/share/jupyter", id="outside"),
    ],
)
def test_paths_under_the_zygote_s_prefix_move_to_the_kernel_s(path, expected) -> None:
    assert zygote.retarget(path, "/t", "/k") == expected


def test_the_launcher_s_arguments_follow_the_interpreter() -> None:
    argv = ["/p/bin/python", "/n/kernel_launcher.py", "-f", "/k/c.json"]
    assert zygote.launcher_args(argv) == argv[1:]
    with pytest.raises(ValueError, match="not a launcher command line"):
        zygote.launcher_args(["/p/bin/python", "-m", "ipykernel_launcher"])


def test_the_zygote_imports_nothing_of_nbstage() -> None:
    tree = ast.parse(ZYGOTE.read_text())
    imported = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    imported += [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    assert "socket" in imported, "the scan found the zygote's imports"
    assert not [name for name in imported if name.split(".")[0] == "nbstage"]


def test_preloading_starts_no_thread_no_zmq_context_and_no_event_loop() -> None:
    """What the zygote holds when it forks: one thread, nothing zmq or asyncio made."""
    check = (
        "import os, sys, threading, asyncio, warnings\n"
        "import kernel_zygote\n"
        "launcher = kernel_zygote.preload()\n"
        "import zmq\n"
        "warnings.simplefilter('ignore')\n"
        "policy = asyncio.get_event_loop_policy()\n"
        "print(threading.active_count(), len(os.listdir('/proc/self/task')),"
        " zmq.Context._instance is None, policy._local._loop is None,"
        " 'ipykernel.kernelapp' in sys.modules, launcher.__name__)"
    )
    done = subprocess.run(
        [sys.executable, "-c", check],
        cwd=ZYGOTE.parent,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["1", "1", "True", "True", "True", "kernel_launcher"]


def test_a_forked_kernel_is_polled_signalled_and_waited_for_by_its_pidfd() -> None:
    child = subprocess.Popen(["sleep", "60"])
    try:
        kernel = ForkedKernel(child.pid, os.pidfd_open(child.pid))
        assert kernel.poll() is None
        with pytest.raises(subprocess.TimeoutExpired):
            kernel.wait(0.01)
        kernel.send_signal(signal.SIGKILL)
        assert kernel.wait(10) == ENDED
        assert kernel.poll() == ENDED
        kernel.kill()
        kernel.terminate()
    finally:
        child.kill()
        child.wait()


def test_a_zygote_that_cannot_start_is_not_tried_again(tmp_path: Path) -> None:
    missing = Zygote(tmp_path / "no-python")
    with pytest.raises(ZygoteUnavailable, match="did not start") as first:
        missing.fork(["python", "kernel_launcher.py"], {}, None)
    with pytest.raises(ZygoteUnavailable) as second:
        missing.fork(["python", "kernel_launcher.py"], {}, None)
    assert str(second.value) == str(first.value)


def test_a_pool_environment_with_packages_of_its_own_is_launched_the_plain_way(
    tmp_path: Path,
) -> None:
    env = tmp_path / "k1"
    site = Path(site_packages(str(env), sys.version_info[:2]))
    site.mkdir(parents=True)
    (env / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (site / TEMPLATE_LINK).write_text("/t/site-packages\n")
    python = str(env / "bin" / "python")
    assert not has_packages_of_its_own(python)
    (site / "mine").mkdir()
    assert has_packages_of_its_own(python)
    assert has_packages_of_its_own(str(tmp_path / "elsewhere" / "bin" / "python"))
