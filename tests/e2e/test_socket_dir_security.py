"""The socket dir and the daemon socket belong to their user alone (SPEC §3.3, §12; issue 13).

With a long state dir and no XDG_RUNTIME_DIR, the sockets go in ``/tmp/nbstage-<uid>-
<hash>``, a path any user can compute. A second user who creates it first (as a
directory or a symlink) and serves a fake daemon there would receive every request a
client sends, cell sources included. These tests create that second user for real and
plant the dir as them, run a fake daemon as them, and connect to the real daemon as
them; then the unit checks behind the refusals. nbstage leaves a planted dir alone and
serves from a fresh one it records (issue 20), and ``nbstage mcp`` answers even when no
dir can be had.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import psutil
import pytest

from nbstage.entrypoints.common import ownership, runtime_dir
from nbstage.entrypoints.common.ownership import Untrusted, check_private_dir, make_private_dir
from nbstage.entrypoints.common.statedir import (
    StatePaths,
    client_paths,
    prepare,
    record_socket_dir,
    state_paths,
)
from nbstage.entrypoints.control.daemon_client import DaemonClient
from nbstage.protocol.daemon.frames import WIRE_VERSION, encode_frame, recv_frame
from tests.support import (
    RunningDaemon,
    mcp_client,
    processes_of_daemon,
    run_bounded,
    run_cli,
    texts_of,
    wait_until,
)

pytestmark = pytest.mark.e2e

Report = Callable[[str], None]


@dataclass
class Child:
    """A forked child running as the intruder; the lines it reports arrive in ``lines``."""

    pid: int
    pipe: int
    lines: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        with os.fdopen(self.pipe, "rb") as pipe:
            for raw in pipe:
                self.lines.append(raw.decode().rstrip("\n"))

    def wait_for(self, line: str, timeout: float = 15) -> None:
        wait_until(lambda: line in self.lines, timeout, f"the intruder's child to report {line!r}")

    def exit_code(self, timeout: float = 15) -> int:
        statuses: list[int] = []

        def exited() -> bool:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            statuses.append(status)
            return pid != 0

        wait_until(exited, timeout, "the intruder's child to exit")
        self._reader.join(5)
        return os.waitstatus_to_exitcode(statuses[-1])

    def finish(self) -> list[str]:
        """End the child (it is ours, by pid) and return everything it reported."""
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self.pid, 0)
        self._reader.join(5)
        return list(self.lines)


@dataclass(frozen=True)
class Intruder:
    """A second, unprivileged user on this machine."""

    name: str
    uid: int
    gid: int

    def start(self, work: Callable[[Report], None]) -> Child:
        """Fork a child that becomes this user, then runs ``work(report)``."""
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            code = 1
            try:
                os.close(read_end)
                os.setgroups([])
                os.setgid(self.gid)
                os.setuid(self.uid)
                work(lambda line: os.write(write_end, line.encode() + b"\n"))
                code = 0
            except BaseException as exc:
                with contextlib.suppress(BaseException):
                    os.write(write_end, f"failed: {exc!r}\n".encode())
            finally:
                os._exit(code)
        os.close(write_end)
        return Child(pid, read_end)

    def do(self, action: Callable[[], object]) -> None:
        """Run one action as this user and wait for it; fail if it failed."""
        child = self.start(lambda report: action())
        assert child.exit_code() == 0, child.lines


def fake_daemon(path: Path | None = None, bound: socket.socket | None = None):
    """A fake daemon: listens (on ``path``, or on an already bound socket), accepts every
    connection and reports each one and every byte that arrives on it."""

    def work(report: Report) -> None:
        listener = bound or socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        if bound is None:
            listener.bind(str(path))
            os.chmod(path, 0o777)
        listener.listen()
        report("ready")
        while True:
            conn, _ = listener.accept()
            report("accepted")
            conn.settimeout(10)
            with contextlib.suppress(OSError):
                while data := conn.recv(65536):
                    report(f"data {data.hex()}")
            conn.close()
            report("closed")

    return work


@pytest.fixture(scope="module")
def intruder() -> Iterator[Intruder]:
    """A throwaway user made for these tests with useradd, removed with userdel -r."""
    if os.geteuid() != 0:
        pytest.skip("creating a second user (useradd) needs root")
    if not (shutil.which("useradd") and shutil.which("userdel")):
        pytest.skip("useradd/userdel are not available on this machine")
    name = f"nbsx{uuid.uuid4().hex[:10]}"
    made = subprocess.run(
        ["useradd", "--create-home", "--user-group", "--shell", "/usr/sbin/nologin", name],
        capture_output=True,
        text=True,
    )
    if made.returncode != 0:
        pytest.skip(f"useradd {name} failed: {made.stderr.strip()}")
    try:
        entry = pwd.getpwnam(name)
        yield Intruder(name, entry.pw_uid, entry.pw_gid)
    finally:
        removed = subprocess.run(["userdel", "-r", name], capture_output=True, text=True)
        assert removed.returncode == 0, removed.stderr
        with pytest.raises(KeyError):
            pwd.getpwnam(name)


@pytest.fixture
def long_state_dir(state_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A state dir too long for its sockets, with XDG_RUNTIME_DIR unset: the sockets would
    go in a predictable dir under the system temp dir. Afterwards, whatever was planted
    there is removed, and any daemon that started on it is stopped."""
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    long_dir = state_dir.parent / ("deliberately-long-state-dir-" * 3) / "state"
    socket_dir = state_paths(long_dir).socket_dir
    assert socket_dir.parent == Path(tempfile.gettempdir())
    assert socket_dir.name.startswith(f"nbstage-{os.getuid()}-")
    try:
        yield long_dir
    finally:
        _stop_daemons_of(long_dir)
        record = long_dir / "socket-dir"
        if record.exists():
            fresh = Path(record.read_text().strip())
            if fresh != socket_dir and fresh.name.startswith(f"nbstage-{os.getuid()}-"):
                shutil.rmtree(fresh, ignore_errors=True)
        if socket_dir.is_symlink() or socket_dir.is_file():
            socket_dir.unlink()
        else:
            shutil.rmtree(socket_dir, ignore_errors=True)


def _stop_daemons_of(state_dir: Path) -> None:
    """Safety net: kill (by pid) any daemon this test started on ``state_dir``."""
    for proc in psutil.process_iter():
        with contextlib.suppress(psutil.Error):
            if "--foreground" in proc.cmdline() and str(state_dir) in proc.cmdline():
                for part in processes_of_daemon(proc.pid):
                    with contextlib.suppress(psutil.Error):
                        part.kill()


def _daemons_of(state_dir: Path) -> list[int]:
    found = []
    for proc in psutil.process_iter():
        with contextlib.suppress(psutil.Error):
            if str(state_dir) in proc.cmdline() and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc.pid)
    return found


def one_line(text: str) -> str:
    """Text with its wrapping undone (the admin console fits messages to the terminal)."""
    return " ".join(text.split())


def _served_in_a_fresh_dir(state_dir: Path, planted: Path, start_with_cli: bool) -> Path:
    """The daemon (started by ``nbstage daemon start``, or by ``nbstage mcp`` itself)
    serves in a fresh private dir beside ``planted`` and records it; ``nbstage mcp``
    answers initialize and a tool call from it, and ``daemon status`` finds it too."""
    if start_with_cli:
        started = run_cli("daemon", "start", state_dir=state_dir, timeout=60)
        assert started.returncode == 0, started.stdout + started.stderr
    stand_in = RunningDaemon(state_paths(state_dir), {}, pid=-1)

    async def body() -> None:
        async with mcp_client(stand_in, "legacy", "fallback", tempfile.gettempdir()) as client:
            listed = await client.call_tool("list_active_notebooks", {})
            assert not listed.is_error, texts_of(listed)
            assert listed.structured_content["notebooks"] == []

    run_bounded(body, budget=90)
    fresh = client_paths(state_dir).socket_dir
    assert fresh != planted
    assert fresh.parent == planted.parent
    assert fresh.name.startswith(f"nbstage-{os.getuid()}-")
    check_private_dir(fresh)
    status = run_cli("daemon", "status", state_dir=state_dir)
    assert status.returncode == 0, status.stderr
    assert str(fresh / "daemon.sock") in status.stdout
    said = one_line((state_dir / "logs" / "daemon.log").read_text())
    assert str(planted) in said, said
    assert f"The sockets go in {fresh} instead." in said, said
    stopped = run_cli("daemon", "stop", state_dir=state_dir, timeout=60)
    assert stopped.returncode == 0, stopped.stderr
    return fresh


# --- the attack: a planted socket dir ------------------------------------------------------


def test_a_socket_dir_planted_by_another_user_is_left_for_a_fresh_one(
    intruder: Intruder, long_state_dir: Path
) -> None:
    planted = state_paths(long_state_dir).socket_dir
    intruder.do(lambda: os.mkdir(planted, 0o700))
    fake = intruder.start(fake_daemon(planted / "daemon.sock"))
    try:
        fake.wait_for("ready")
        assert planted.stat().st_uid == intruder.uid
        _served_in_a_fresh_dir(long_state_dir, planted, start_with_cli=False)
    finally:
        reported = fake.finish()
    assert "accepted" not in reported, "no client may even connect to the planted socket"
    assert planted.stat().st_uid == intruder.uid
    assert stat.S_IMODE(planted.stat().st_mode) == 0o700, "nbstage left the planted dir alone"


def test_a_socket_dir_planted_as_a_symlink_is_left_for_a_fresh_one(
    intruder: Intruder, long_state_dir: Path, tmp_path: Path
) -> None:
    """The symlink points at a dir of ours with mode 0700: only lstat tells them apart."""
    target = tmp_path / "ours"
    target.mkdir(mode=0o700)
    planted = state_paths(long_state_dir).socket_dir
    intruder.do(lambda: os.symlink(target, planted))
    assert planted.is_symlink()
    assert os.lstat(planted).st_uid == intruder.uid
    _served_in_a_fresh_dir(long_state_dir, planted, start_with_cli=True)
    assert list(target.iterdir()) == [], "nothing of the daemon went through the symlink"
    assert planted.is_symlink()


def test_a_socket_dir_of_ours_with_a_wider_mode_is_left_for_a_fresh_one(
    long_state_dir: Path,
) -> None:
    socket_dir = state_paths(long_state_dir).socket_dir
    socket_dir.mkdir(mode=0o700)
    os.chmod(socket_dir, 0o755)
    _served_in_a_fresh_dir(long_state_dir, socket_dir, start_with_cli=False)
    assert stat.S_IMODE(socket_dir.stat().st_mode) == 0o755, "left alone, not changed"
    assert list(socket_dir.iterdir()) == []


def test_with_no_dir_to_be_had_nbstage_mcp_answers_and_each_tool_call_says_why(
    long_state_dir: Path, tmp_path: Path
) -> None:
    """The runtime base is a file, so neither the short dir nor a fresh one can be made:
    before, ``nbstage mcp`` exited before it answered initialize."""
    base = tmp_path / "runtime-base-is-a-file"
    base.write_text("")
    stand_in = RunningDaemon(state_paths(long_state_dir), {"XDG_RUNTIME_DIR": str(base)}, -1)

    async def body() -> None:
        async with mcp_client(stand_in, "legacy", "stuck", tmp_path) as client:
            listed = await client.list_tools()
            assert "create_notebook" in [tool.name for tool in listed.tools]
            for name in ("create_notebook", "reconnect"):
                refused = await client.call_tool(name, {})
                assert refused.is_error
                said = one_line(" ".join(texts_of(refused)))
                assert "nbstage cannot use its sockets' dir: [Errno 20] Not a directory" in said
                assert str(base / state_paths(long_state_dir).socket_dir.name) in said
                assert f"No other dir could be made for the daemon's sockets in {base}" in said

    run_bounded(body, budget=60)
    started = run_cli("daemon", "start", state_dir=long_state_dir, env=stand_in.env)
    assert started.returncode == 1
    assert "No other dir could be made" in one_line(started.stderr), started.stderr
    assert _daemons_of(long_state_dir) == [], "no daemon was started to fail"


def test_a_state_dir_another_user_created_is_refused(intruder: Intruder) -> None:
    planted = Path(tempfile.gettempdir()) / f"nbs-planted-{uuid.uuid4().hex[:8]}"
    intruder.do(lambda: os.mkdir(planted, 0o700))
    try:
        for argv in (["daemon", "start"], ["daemon", "status"], ["admin", "status"]):
            result = run_cli(*argv, state_dir=planted, timeout=60)
            assert result.returncode == 1, result.stdout + result.stderr
            said = one_line(result.stderr)
            assert str(planted) in said, said
            assert f"owned by uid {intruder.uid}" in said, said
        assert _daemons_of(planted) == []
        assert list(planted.iterdir()) == [], "nothing was made inside the planted state dir"
    finally:
        _stop_daemons_of(planted)
        shutil.rmtree(planted)


def test_with_a_long_state_dir_the_daemon_makes_its_socket_dir_and_clients_read_the_record(
    long_state_dir: Path, tmp_path: Path
) -> None:
    """The record, not a recomputed path, is where clients go; it is checked like any dir."""
    from tests.support import daemon_running

    with daemon_running(long_state_dir) as daemon:
        socket_dir = daemon.paths.socket_dir
        info = os.lstat(socket_dir)
        assert stat.S_ISDIR(info.st_mode)
        assert info.st_uid == os.getuid()
        assert stat.S_IMODE(info.st_mode) == 0o700
        record = long_state_dir / "socket-dir"
        assert record.read_text().strip() == str(socket_dir)
        assert daemon.status()["socket"] == str(daemon.paths.socket)

        elsewhere = tmp_path / "moved"
        elsewhere.mkdir(mode=0o700)
        record.write_text(f"{elsewhere}\n")
        assert client_paths(long_state_dir).socket_dir == elsewhere
        status = run_cli("daemon", "status", state_dir=long_state_dir)
        assert status.returncode == 1, "the client went to the recorded dir, where none runs"
        os.chmod(elsewhere, 0o750)
        with pytest.raises(Untrusted, match="has mode 0750"):
            DaemonClient(client_paths(long_state_dir).socket)
        record.write_text(f"{socket_dir}\n")


# --- a socket served by another user -----------------------------------------------------


@contextlib.contextmanager
def _served_by(intruder: Intruder, state_dir: Path) -> Iterator[Child]:
    """Our own state dir (every check on it passes) whose socket file we bind, while the
    intruder listens on it: what a client meets when another uid serves the socket."""
    paths = state_paths(state_dir)
    prepare(paths)
    bound = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    bound.bind(str(paths.socket))
    fake = intruder.start(fake_daemon(bound=bound))
    bound.close()
    try:
        fake.wait_for("ready")
        yield fake
    finally:
        fake.finish()


def test_the_daemon_client_refuses_a_socket_served_by_another_user(
    intruder: Intruder, state_dir: Path
) -> None:
    with _served_by(intruder, state_dir) as fake:
        socket_path = state_paths(state_dir).socket
        with pytest.raises(Untrusted) as refused:
            DaemonClient(socket_path, timeout=5)
        assert str(socket_path) in str(refused.value)
        assert f"uid {intruder.uid}" in str(refused.value)
        fake.wait_for("closed")

        status = run_cli("daemon", "status", state_dir=state_dir)
        assert status.returncode == 1
        assert f"runs as uid {intruder.uid}" in status.stderr, status.stderr
        assert fake.lines.count("accepted") == 2
        wait_until(lambda: fake.lines.count("closed") == 2, 10, "the second client to close")
    assert not [line for line in fake.lines if line.startswith("data")], fake.lines


def test_nbstage_mcp_sends_nothing_to_a_socket_served_by_another_user(
    intruder: Intruder, state_dir: Path
) -> None:
    """The attack's payoff would be cell sources; the session child's links refuse first."""
    placeholder = RunningDaemon(state_paths(state_dir), {}, pid=-1)

    async def body() -> None:
        async with mcp_client(placeholder, "legacy", label="mal", no_autostart=True) as client:
            refused = await client.call_tool("create_notebook", {})
            assert refused.is_error
            assert "unreachable" in texts_of(refused)[-1]

    with _served_by(intruder, state_dir) as fake:
        run_bounded(body, budget=60)
        fake.wait_for("accepted")  # the links did connect, and stopped there
        fake.wait_for("closed")
    assert not [line for line in fake.lines if line.startswith("data")], fake.lines
    session_log = (state_dir / "logs" / "session.log").read_text()
    assert f"runs as uid {intruder.uid}" in session_log


def test_the_daemon_closes_a_connection_from_another_user_after_an_error_frame(
    intruder: Intruder, daemon: RunningDaemon, tmp_path: Path
) -> None:
    """The socket is 0600 in a 0700 dir, so the intruder reaches it only because the test
    lends them a hard link and a wider mode; the daemon's own check is what is left."""
    lobby = Path(tempfile.mkdtemp(prefix="nbs-lobby-"))
    os.chmod(lobby, 0o755)
    try:
        try:
            os.link(daemon.paths.socket, lobby / "daemon.sock")
        except OSError as exc:
            pytest.skip(f"cannot hard-link the daemon socket: {exc}")
        os.chmod(daemon.paths.socket, 0o666)

        def knock(report: Report) -> None:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                sock.settimeout(10)
                sock.connect(str(lobby / "daemon.sock"))
                frame = recv_frame(sock)
                report(f"frame {frame['type']} {frame['error']['message']}")
                try:
                    sock.sendall(encode_frame({"v": WIRE_VERSION, "type": "status", "id": 1}))
                    report(f"then {sock.recv(65536)!r}")
                except OSError as exc:
                    report(f"then {type(exc).__name__}")

        child = intruder.start(knock)
        assert child.exit_code() == 0, child.lines
    finally:
        os.chmod(daemon.paths.socket, 0o600)
        shutil.rmtree(lobby)
    refusal, after = child.lines
    assert refusal.startswith("frame error ")
    assert f"runs as uid {intruder.uid}" in refusal
    assert f"not as this user (uid {os.getuid()})" in refusal
    assert after in ("then b''", "then BrokenPipeError", "then ConnectionResetError")
    assert daemon.status()["pid"] == daemon.pid, "the daemon carries on for its own user"
    log = (daemon.paths.logs / "daemon.log").read_text()
    assert f"runs as uid {intruder.uid}" in log


# --- the checks themselves ---------------------------------------------------------------


def test_make_private_dir_creates_mode_0700_whatever_the_umask(tmp_path: Path) -> None:
    for umask in (0o000, 0o022, 0o077, 0o277):
        path = tmp_path / f"private-{umask:03o}"
        old = os.umask(umask)
        try:
            make_private_dir(path)
        finally:
            os.umask(old)
        assert stat.S_IMODE(os.lstat(path).st_mode) == 0o700
        make_private_dir(path)  # an existing dir of ours is accepted as it is
    make_private_dir(tmp_path / "new" / "parents" / "too")
    assert stat.S_IMODE(os.lstat(tmp_path / "new" / "parents" / "too").st_mode) == 0o700


@pytest.mark.parametrize(("mode", "shown"), [(0o755, "0755"), (0o770, "0770"), (0o500, "0500")])
def test_a_dir_with_another_mode_is_refused_and_left_alone(
    tmp_path: Path, mode: int, shown: str
) -> None:
    path = tmp_path / "dir"
    path.mkdir()
    os.chmod(path, mode)
    for check in (check_private_dir, make_private_dir):
        with pytest.raises(Untrusted, match=f"{path}.*has mode {shown}"):
            check(path)
    assert stat.S_IMODE(path.stat().st_mode) == mode


def test_a_dir_owned_by_another_uid_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "dir"
    path.mkdir(mode=0o700)
    real_lstat = os.lstat
    real = real_lstat(path)
    other = os.getuid() + 4242
    foreign = os.stat_result((*real[:4], other, *real[5:]))

    def lstat(target: object, *args: object, **kwargs: object) -> os.stat_result:
        return foreign if Path(target) == path else real_lstat(target, *args, **kwargs)

    monkeypatch.setattr(os, "lstat", lstat)
    for check in (check_private_dir, make_private_dir):
        with pytest.raises(Untrusted, match=f"owned by uid {other}, not by this user"):
            check(path)


def test_a_dir_chowned_to_the_intruder_is_refused(intruder: Intruder, tmp_path: Path) -> None:
    path = tmp_path / "dir"
    path.mkdir(mode=0o700)
    os.chown(path, intruder.uid, intruder.gid)
    with pytest.raises(Untrusted, match=f"owned by uid {intruder.uid}, not by this user"):
        make_private_dir(path)


def test_a_symlink_to_a_good_dir_and_a_file_are_refused(tmp_path: Path) -> None:
    good = tmp_path / "good"
    good.mkdir(mode=0o700)
    check_private_dir(good)
    (tmp_path / "link").symlink_to(good)
    (tmp_path / "file").write_text("")
    os.chmod(tmp_path / "file", 0o700)
    for check in (check_private_dir, make_private_dir):
        with pytest.raises(Untrusted, match="is a symlink"):
            check(tmp_path / "link")
        with pytest.raises(Untrusted, match="is not a directory"):
            check(tmp_path / "file")


def test_prepare_refuses_a_state_dir_that_is_not_private(state_dir: Path) -> None:
    state_dir.mkdir(mode=0o700)
    os.chmod(state_dir, 0o711)
    with pytest.raises(Untrusted, match=f"{state_dir}.*has mode 0711"):
        prepare(state_paths(state_dir))
    with pytest.raises(Untrusted, match="has mode 0711"):
        client_paths(state_dir)
    assert list(state_dir.iterdir()) == [], "nothing was created inside it"


def test_the_peer_check_passes_our_own_uid_and_names_a_foreign_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    me = os.getuid()
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    with ours, theirs:
        ownership.check_peer(ours, "the peer")
        assert ownership.peer_credentials(ours) == (os.getpid(), me, os.getgid())
        monkeypatch.setattr(os, "getuid", lambda: me + 4242)
        with pytest.raises(Untrusted, match=f"the peer runs as uid {me} .*uid {me + 4242}"):
            ownership.check_peer(ours, "the peer")


def _long_state_dir_in(base: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> StatePaths:
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(base))
    paths = state_paths(tmp_path / ("long-enough-for-a-short-socket-dir-" * 3) / "state")
    assert paths.socket_dir.parent == base
    prepare(paths)
    return paths


def test_settle_uses_the_short_dir_then_a_fresh_one_then_keeps_to_its_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = tmp_path / "runtime"
    base.mkdir(mode=0o700)
    paths = _long_state_dir_in(base, tmp_path, monkeypatch)
    assert runtime_dir.settle(paths) == paths
    check_private_dir(paths.kernel_dir)

    os.chmod(paths.socket_dir, 0o755)
    assert runtime_dir.client_problem(paths) is None
    fresh = runtime_dir.settle(paths)
    assert fresh.socket_dir.parent == base
    assert fresh.socket_dir != paths.socket_dir
    check_private_dir(fresh.kernel_dir)
    assert sorted(base.iterdir()) == sorted([paths.socket_dir, fresh.socket_dir])

    record_socket_dir(fresh)
    assert runtime_dir.settle(paths) == fresh, "a restarted daemon keeps to the dir it recorded"
    assert len(list(base.iterdir())) == 2


def test_settle_with_no_dir_to_be_had_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = tmp_path / "a-file"
    base.write_text("")
    paths = _long_state_dir_in(base, tmp_path, monkeypatch)
    problem = runtime_dir.client_problem(paths)
    assert problem is not None
    with pytest.raises(runtime_dir.NoRuntimeDir) as refused:
        runtime_dir.settle(paths)
    for said in (problem, str(refused.value)):
        assert "Not a directory" in said
        assert f"No other dir could be made for the daemon's sockets in {base}" in said
        assert f"no daemon can run for the state dir {paths.root}" in said
