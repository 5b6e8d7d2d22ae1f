"""The session fork server's pure decisions, and how the edge reads a forked child's end
(ADR 0009)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
from pathlib import Path

import pytest

from nbstage.entrypoints.mcp.child_start import KILLED, ForkedSessionChild
from nbstage.entrypoints.session.session_zygote import (
    Interpreter,
    SessionZygote,
    changed_files,
    exit_status,
    library_dirs,
    loaded_sources,
    os_mtime,
    refusal,
    this_interpreter,
    unseen_after,
)

OWN = Interpreter("/py", "/pkg", ("-s",), None)
GOOD = {
    "argv": ["python", "-m", "x"],
    "env": {"A": "1"},
    "python": "/py",
    "package": "/pkg",
    "flags": ["-s"],
}


@pytest.mark.parametrize(
    ("request_", "refused"),
    [
        (GOOD, None),
        ({**GOOD, "argv": "python"}, "argv"),
        ({**GOOD, "argv": ["python", 1]}, "string"),
        ({**GOOD, "env": ["A=1"]}, "env"),
        ({**GOOD, "env": {"A": 1}}, "string"),
        ({**GOOD, "python": "/other"}, "/other"),
        ({**GOOD, "package": "/elsewhere"}, "/elsewhere"),
        ({k: v for k, v in GOOD.items() if k != "python"}, "None"),
        ({**GOOD, "flags": []}, "options"),
        ({**GOOD, "flags": ["-I"]}, "options"),
        ({**GOOD, "env": {"PYTHONPATH": "/elsewhere"}}, "PYTHONPATH"),
    ],
)
def test_refusal(request_: dict, refused: str | None) -> None:
    why = refusal(request_, OWN)
    if refused is None:
        assert why is None
    else:
        assert why is not None
        assert refused in why, why


def test_changed_files_names_changed_and_gone_files() -> None:
    now = {"same": 1, "newer": 2, "gone": 3}

    def mtime_of(path: str) -> int:
        if path == "gone":
            raise FileNotFoundError(path)
        return {"same": 1, "newer": 5}[path]

    assert changed_files(now, mtime_of) == ["newer", "gone"]


def test_a_source_changed_while_it_was_imported_counts_as_changed() -> None:
    seen = unseen_after({"before": 100, "during": 300}, began_ns=200)
    assert changed_files(seen, lambda path: {"before": 100, "during": 300}[path]) == ["during"]


def test_loaded_sources_are_the_modules_inside_the_package(tmp_path: Path) -> None:
    inside = tmp_path / "pkg" / "a.py"
    inside.parent.mkdir()
    inside.write_text("")
    outside = tmp_path / "other.py"
    outside.write_text("")

    class Module:
        def __init__(self, file: Path | None) -> None:
            self.__file__ = str(file) if file else None

    modules = {"a": Module(inside), "b": Module(outside), "c": Module(None)}
    found = loaded_sources(modules, tmp_path / "pkg")
    assert found == {str(inside): inside.stat().st_mtime_ns}


def test_library_dirs_are_the_import_path_entries_of_modules_outside_the_package(
    tmp_path: Path,
) -> None:
    """The deepest entry that holds a module counts (a venv's site-packages, not the
    folder above it); the package's own modules and entries nothing came from do not."""
    outer, site, unused = tmp_path / "lib", tmp_path / "lib" / "site-packages", tmp_path / "u"
    for folder in (site / "lib_a", unused, tmp_path / "pkg"):
        folder.mkdir(parents=True)

    class Module:
        def __init__(self, file: Path | None) -> None:
            self.__file__ = str(file) if file else None

    modules = {
        "lib_a": Module(site / "lib_a" / "__init__.py"),
        "lib_b": Module(site / "lib_b.py"),
        "stdlib_mod": Module(outer / "json.py"),
        "ours": Module(tmp_path / "pkg" / "a.py"),
        "builtin": Module(None),
    }
    search_path = [str(outer), str(site), str(unused), ""]
    found = library_dirs(modules, search_path, tmp_path / "pkg")
    assert found == {
        f"{site}{os.sep}": site.stat().st_mtime_ns,
        f"{outer}{os.sep}": outer.stat().st_mtime_ns,
    }


def test_a_distribution_installed_beside_the_loaded_ones_counts_as_a_change(
    tmp_path: Path,
) -> None:
    site = tmp_path / "site-packages"
    site.mkdir()
    (site / "lib_a.py").write_text("")

    class Module:
        __file__ = str(site / "lib_a.py")

    long_ago = 1_000_000_000
    os.utime(site, ns=(long_ago, long_ago))
    seen = library_dirs({"lib_a": Module()}, [str(site)], tmp_path / "pkg")
    assert seen == {f"{site}{os.sep}": long_ago}
    assert changed_files(seen, os_mtime) == []
    (site / "lib_a-2.0.dist-info").mkdir()
    assert changed_files(seen, os_mtime) == [f"{site}{os.sep}"]


def test_a_source_changed_on_disk_is_refused_and_ends_the_server(tmp_path: Path) -> None:
    source = tmp_path / "module.py"
    source.write_text("")
    listener, other = socket.socketpair()
    try:
        own = this_interpreter(None)
        server = SessionZygote(listener, None, own)
        server.sources = {str(source): source.stat().st_mtime_ns}
        request = {**GOOD, "python": own.python, "package": own.package, "flags": list(own.flags)}
        packet = json.dumps(request).encode()
        assert server.why_not(packet, [0, 1, 2]) is None
        os.utime(source, ns=(0, source.stat().st_mtime_ns + 10**9))
        why = server.why_not(packet, [0, 1, 2])
        assert why is not None
        assert "changed on disk" in why
        assert server.stale, "a stale server ends after this answer"
    finally:
        listener.close()
        other.close()


def forked(status: int | None) -> ForkedSessionChild:
    """A real child process that writes ``status`` to its exit pipe and exits, or (None)
    waits to be killed."""
    exits, exit_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(exits)
        if status is None:
            signal.pause()
        os.write(exit_w, str(status).encode())
        os._exit(status)
    os.close(exit_w)
    os.set_blocking(exits, False)
    return ForkedSessionChild(pid, os.pidfd_open(pid), exits)


@pytest.mark.parametrize("status", [0, 75, 3])
def test_a_forked_child_reports_the_status_it_wrote(status: int) -> None:
    child = forked(status)
    try:
        assert asyncio.run(child.wait()) == status
        assert child.returncode == status
    finally:
        os.waitpid(child.pid, 0)


def test_a_killed_forked_child_reports_sigkill() -> None:
    child = forked(None)

    async def kill_and_wait() -> int:
        child.kill()
        return await child.wait()

    try:
        assert asyncio.run(kill_and_wait()) == KILLED
    finally:
        os.waitpid(child.pid, 0)


@pytest.mark.parametrize(("code", "status"), [(None, 0), (0, 0), (75, 75), ("bye", 1)])
def test_exit_status_is_what_sys_exit_gives(code: object, status: int) -> None:
    assert exit_status(code) == status


def test_many_waiters_of_one_forked_child_all_hear_its_end() -> None:
    """The edge's stop and its reaper both wait for the same child."""
    child = forked(75)

    async def two_waiters() -> list[int]:
        return list(await asyncio.gather(child.wait(), child.wait()))

    try:
        assert asyncio.run(two_waiters()) == [75, 75]
    finally:
        os.waitpid(child.pid, 0)
