"""Session children forked by the daemon's session fork server (ADR 0009): what a plain
start would have made, with the plain start when there is no fork server, a fork server
that refuses bad requests and serves on, and the clients of a cold burst that wait for
it."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import socket
import stat
from dataclasses import dataclass
from pathlib import Path

import anyio
import psutil
import pytest

from nbstage.entrypoints.common.lifelines import EDGE_PID_ENV
from nbstage.entrypoints.common.statedir import prepare, state_paths
from nbstage.entrypoints.control.daemon_launch import daemon_answers
from nbstage.entrypoints.mcp.child_start import FORK_SERVER_WAIT_SECS
from nbstage.entrypoints.session.session_zygote import PACKAGE
from nbstage.protocol.common.safe_files import open_private
from tests.conftest import FAST_SETTINGS
from tests.support import (
    RunningDaemon,
    assert_daemon_gone,
    call_ok,
    mcp_client,
    pid_gone,
    run_bounded,
    session_manager_pid,
    start_daemon,
    wait_until,
)

pytestmark = pytest.mark.e2e

SESSION_ZYGOTE = "nbstage.entrypoints.session.session_zygote"
SESSION_MAIN = "nbstage.entrypoints.session.session_main"


def fork_server(daemon: RunningDaemon) -> psutil.Process:
    """The daemon's session fork server, once it listens."""

    def listening() -> psutil.Process | None:
        if not daemon.paths.session_zygote.exists():
            return None
        for child in psutil.Process(daemon.pid).children():
            if SESSION_ZYGOTE in child.cmdline():
                return child
        return None

    return wait_until(listening, 30, "the session fork server to listen")


def ask(daemon: RunningDaemon, packet: bytes, fds: list[int]) -> dict:
    with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as channel:
        channel.settimeout(10)
        channel.connect(str(daemon.paths.session_zygote))
        socket.send_fds(channel, [packet], fds)
        reply, got, _, _ = socket.recv_fds(channel, 4096, 1)
    for fd in got:
        os.close(fd)
    return json.loads(reply)


@dataclass
class Seen:
    """A session child as it looked while it served, and its edge."""

    server: int
    pid: int
    ppid: int
    cmdline: list[str]
    environ: dict[str, str]
    cwd: str


def served_child(daemon: RunningDaemon, label: str, cwd: Path) -> Seen:
    """Run a cell through a fresh `nbstage mcp` and look at its session child meanwhile."""
    seen: list[Seen] = []

    async def body() -> None:
        session = mcp_client(daemon, "legacy", label=label, cwd=cwd)
        async with session as client:
            await call_ok(client, "create_notebook")
            made = await call_ok(client, "create_cell", source="6 * 7", and_run=True)
            assert made["execution"]["outputs"][0]["text"] == "42", made
            child = psutil.Process(session_manager_pid(daemon, label))
            server = session.server_pid
            assert server is not None
            seen.append(
                Seen(server, child.pid, child.ppid(), child.cmdline(), child.environ(), child.cwd())
            )

    run_bounded(body)
    return seen[0]


def test_a_forked_child_shows_what_a_plain_start_makes_and_serves(
    daemon: RunningDaemon, tmp_path: Path
) -> None:
    forker = fork_server(daemon)
    mode = stat.S_IMODE(os.stat(daemon.paths.session_zygote).st_mode)
    assert mode == 0o600, oct(mode)
    seen = served_child(daemon, "forked", tmp_path)
    assert seen.ppid == forker.pid, "forked by the daemon's fork server"
    assert SESSION_MAIN in seen.cmdline, seen.cmdline
    assert seen.environ[EDGE_PID_ENV] == str(seen.server), "its edge, in /proc"
    assert seen.cwd == str(tmp_path), "the edge's folder"
    assert pid_gone(seen.pid), "the child ended with its client"


def test_with_no_fork_server_the_child_is_started_the_plain_way(
    daemon: RunningDaemon, tmp_path: Path
) -> None:
    forker = fork_server(daemon)
    forker.send_signal(signal.SIGKILL)
    wait_until(lambda: pid_gone(forker.pid), 10, "the fork server to end")
    seen = served_child(daemon, "plain", tmp_path)
    assert seen.ppid == seen.server, "started by its edge"
    assert SESSION_MAIN in seen.cmdline, seen.cmdline


def test_the_fork_server_refuses_bad_requests_and_serves_on(
    daemon: RunningDaemon, tmp_path: Path
) -> None:
    forker = fork_server(daemon)
    read, write = os.pipe()
    ours, theirs = socket.socketpair()
    fds = [theirs.fileno(), 2, write]
    good = {
        "argv": ["python"],
        "env": {},
        "python": forker.cmdline()[0],
        "package": str(PACKAGE),
        "flags": [],
    }
    try:
        cases = {
            b"not json": fds,
            b"[1, 2]": fds,
            json.dumps({**good, "env": {"A": 1}}).encode(): fds,
            json.dumps({**good, "python": "/usr/bin/other"}).encode(): fds,
            json.dumps({**good, "package": "/elsewhere"}).encode(): fds,
            json.dumps({**good, "flags": ["-I"]}).encode(): fds,
            json.dumps(good).encode(): fds[:2],
            b"[" * 200_000: fds,
        }
        for packet, sent in cases.items():
            answer = ask(daemon, packet, sent)
            assert set(answer) == {"refused"}, (packet, answer)
            assert answer["refused"], packet
    finally:
        for fd in (read, write):
            os.close(fd)
        ours.close()
        theirs.close()
    with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as silent:
        silent.connect(str(daemon.paths.session_zygote))
        assert ask(daemon, json.dumps({**good, "flags": ["-I"]}).encode(), []), "served after it"
    assert forker.is_running()
    seen = served_child(daemon, "after", tmp_path)
    assert seen.ppid == forker.pid, "the fork server serves on"


def test_a_client_that_finds_the_daemon_starting_forks_its_first_child(
    state_dir: Path,
) -> None:
    """Many clients at once on a state dir with no daemon: one launches it (and holds
    autostart.lock until it answers); the others launch none, ask for the fork server and
    wait for it rather than start their children beside the daemon's start."""
    paths = state_paths(state_dir)
    prepare(paths)
    launching = open_private(paths.root / "autostart.lock", os.O_RDWR | os.O_CREAT)
    fcntl.flock(launching, fcntl.LOCK_EX)
    not_yet = RunningDaemon(paths, dict(FAST_SETTINGS), pid=0)
    started: list[RunningDaemon] = []
    seen: list[int] = []

    async def body() -> None:
        async with mcp_client(not_yet, "legacy", label="second") as client:
            await anyio.to_thread.run_sync(
                wait_until, paths.forks_wanted.exists, 30, "the client to ask for forks"
            )
            assert not daemon_answers(paths), "the client launched a daemon of its own"
            daemon = await anyio.to_thread.run_sync(start_daemon, state_dir, FAST_SETTINGS)
            started.append(daemon)
            await call_ok(client, "create_notebook")
            child = psutil.Process(session_manager_pid(daemon, "second"))
            seen.extend([child.ppid(), fork_server(daemon).pid])
            assert not paths.forks_wanted.exists(), "the daemon took the request"

    try:
        run_bounded(body)
    finally:
        os.close(launching)
        for daemon in started:
            daemon.stop()
            assert_daemon_gone(daemon)
    forked_by, server = seen
    assert forked_by == server, "the first child came from the fork server"


def test_a_client_waiting_on_a_launch_that_came_to_nothing_waits_no_longer(
    state_dir: Path,
) -> None:
    """The launcher's autostart.lock goes with a daemon that dies before it listens: a
    client that found it held and waits for the fork server sees it free with no daemon
    answering, and starts its child the plain way at once, not after the wait's limit."""
    paths = state_paths(state_dir)
    prepare(paths)
    launching = open_private(paths.root / "autostart.lock", os.O_RDWR | os.O_CREAT)
    fcntl.flock(launching, fcntl.LOCK_EX)
    not_yet = RunningDaemon(paths, dict(FAST_SETTINGS), pid=0)
    edge_log = paths.logs / "mcp.log"

    def said_gone() -> bool:
        return edge_log.exists() and "launched is gone" in edge_log.read_text()

    async def body() -> None:
        async with mcp_client(not_yet, "legacy", label="left waiting"):
            await anyio.to_thread.run_sync(
                wait_until, paths.forks_wanted.exists, 30, "the client to ask for forks"
            )
            assert not said_gone()
            os.close(launching)  # the launched daemon died before it listened
            await anyio.to_thread.run_sync(
                wait_until, said_gone, FORK_SERVER_WAIT_SECS / 2, "the client to stop waiting"
            )
            assert not daemon_answers(paths)

    run_bounded(body)
