"""A client's revival of the daemon (the Lab edge's, a session child's): when it starts
one (tables), how it reads the socket (a real Unix socket, listening, left behind,
missing), and the page config the Lab edge hands the front end."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from pathlib import Path

import orjson
import psutil
import pytest

from nbstage.entrypoints.common.revival_rest import REST_SECS
from nbstage.entrypoints.common.statedir import StatePaths, record_socket_dir
from nbstage.entrypoints.control.daemon_revival import (
    Asker,
    Revived,
    SocketState,
    daemon_environ,
    probe,
    rests_after_start,
    should_start,
)
from nbstage.entrypoints.daemon.alive_stamp import ALIVE_FILE
from nbstage.entrypoints.lab.page_config import ANNOUNCEMENTS, DISABLED, install
from nbstage.entrypoints.session.revival import Why, wants_revival
from nbstage.protocol.common.safe_files import write_private

DECISIONS = [
    (SocketState.ANSWERS, Asker.LINK_LOST, False),
    (SocketState.ANSWERS, Asker.PAGE, False),
    (SocketState.DEAD, Asker.LINK_LOST, True),
    (SocketState.DEAD, Asker.PAGE, True),
    (SocketState.ABSENT, Asker.LINK_LOST, False),
    (SocketState.ABSENT, Asker.PAGE, True),
    (SocketState.PENDING, Asker.LINK_LOST, False),
    (SocketState.PENDING, Asker.PAGE, False),
]


@pytest.mark.parametrize(("state", "asker", "start"), DECISIONS)
def test_when_the_edge_starts_a_daemon(state, asker, start) -> None:
    assert should_start(state, asker) is start


@pytest.mark.parametrize("asker", list(Asker))
@pytest.mark.parametrize("state", list(SocketState))
def test_a_client_at_rest_starts_no_daemon(state, asker) -> None:
    assert should_start(state, asker, resting=True) is False


@pytest.mark.parametrize(
    ("state", "rests"),
    [
        (SocketState.ANSWERS, False),
        (SocketState.PENDING, False),
        (SocketState.DEAD, True),
        (SocketState.ABSENT, True),
    ],
)
def test_which_ends_of_a_started_daemons_wait_rest_its_client(state, rests) -> None:
    """Up, or still coming up: no rest. Dead again, or gone before it listened (a page
    started it from no socket): rest."""
    assert rests_after_start(state) is rests


def test_a_socket_that_answers_nothing_is_dead_and_a_missing_one_absent(tmp_path: Path) -> None:
    """A listener that takes the connection but answers no request (a SIGKILLed daemon's,
    for a moment) is as dead as one nobody listens on. (One that answers: the e2e tests.)"""
    root = tmp_path / "state"
    root.mkdir(mode=0o700)
    paths = StatePaths(root, root)
    assert probe(paths) is SocketState.ABSENT
    record_socket_dir(paths)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        listener.bind(str(paths.socket))
        listener.listen()
        assert probe(paths) is SocketState.DEAD
    assert probe(paths) is SocketState.DEAD
    paths.socket.unlink()
    assert probe(paths) is SocketState.ABSENT


def test_a_socket_whose_stamped_daemon_still_runs_is_pending(tmp_path: Path) -> None:
    """A daemon stopping or being torn down: its process is there, its socket answers
    nothing. Once the process is gone (or the pid is another process's), it is not."""
    root = tmp_path / "state"
    root.mkdir(mode=0o700)
    paths = StatePaths(root, root)
    record_socket_dir(paths)
    me = psutil.Process()
    stamp = {"pid": me.pid, "started_at": me.create_time() + 0.5}
    write_private(root / ALIVE_FILE, orjson.dumps(stamp))
    assert probe(paths) is SocketState.PENDING
    stamp["started_at"] = me.create_time() - 60
    write_private(root / ALIVE_FILE, orjson.dumps(stamp))
    assert probe(paths) is SocketState.ABSENT


def test_the_page_config_turns_the_announcements_off_and_runs_cells_on_the_server() -> None:
    settings: dict = {"page_config_hook": lambda handler, config: {**config, "earlier": 1}}
    install(settings)
    assert settings["page_config_data"]["serverSideExecution"] is True
    config = settings["page_config_hook"](None, {"disabledExtensions": ["some:plugin"]})
    assert config["disabledExtensions"] == ["some:plugin", *DISABLED]
    assert ANNOUNCEMENTS in DISABLED
    assert config["serverSideExecution"] is True
    assert config["earlier"] == 1
    again = settings["page_config_hook"](None, config)
    assert again["disabledExtensions"].count(ANNOUNCEMENTS) == 1


SESSION_CHILD = [
    (ConnectionRefusedError(), True, False, False, False, Why.DIED),
    (ConnectionRefusedError(), True, True, False, False, None),
    (ConnectionRefusedError(), True, False, True, False, None),
    (ConnectionRefusedError(), False, False, False, False, None),
    (FileNotFoundError(), True, False, False, False, None),
    (PermissionError(), True, False, False, False, None),
    (FileNotFoundError(), True, False, False, True, Why.MENDED),
    (ConnectionRefusedError(), True, False, True, True, Why.MENDED),
    (FileNotFoundError(), True, True, False, True, None),
    (FileNotFoundError(), False, False, False, True, None),
]


@pytest.mark.parametrize(
    ("refusal", "autostart", "reviving", "resting", "mended", "why"), SESSION_CHILD
)
def test_which_refused_links_make_a_session_child_look_at_the_daemon(
    refusal, autostart, reviving, resting, mended, why
) -> None:
    """With autostart on and no revival under way: a socket that refuses (a daemon that
    may have died) unless a revival failed lately; settings a daemon refused at its start
    that read again (whatever the socket). A missing socket is a daemon stopped on
    purpose."""
    assert wants_revival(refusal, autostart, reviving, resting, mended) is why


def test_a_daemon_a_client_starts_inherits_neither_labs_token_nor_the_clients_marks() -> None:
    environ = {
        "JUPYTER_TOKEN": "secret",
        "NBSTAGE_EDGE_PID": "41",
        "NBSTAGE_LINK_STATE_DIR": "/s",
        "NBSTAGE_SESSION_FD": "3",
        "NBSTAGE_STATE_DIR": "/s",
        "PATH": "/bin",
    }
    assert daemon_environ(environ) == {"NBSTAGE_STATE_DIR": "/s", "PATH": "/bin"}


@pytest.mark.parametrize("rest", [False, True])
def test_a_session_child_rests_after_a_revival_that_says_so(
    monkeypatch: pytest.MonkeyPatch, rest: bool
) -> None:
    from nbstage.entrypoints.control import daemon_revival
    from nbstage.entrypoints.session.revival import Revival

    monkeypatch.setattr(daemon_revival, "revive", lambda paths, asker: Revived(False, rest))
    loop = asyncio.new_event_loop()
    try:
        revival = Revival(loop)
        revival.running = True
        revival._run("/nowhere/state")
        loop.call_soon(loop.stop)
        loop.run_forever()
        assert not revival.running
        assert revival.resting is rest
        assert revival.rest.until - loop.time() <= REST_SECS
    finally:
        loop.close()


def test_the_lab_edge_rests_after_a_daemon_that_did_not_come_up(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The first page's revival starts one that dies at its start; the pages after it, for
    REST_SECS, start none (revive is told the edge rests), but find one that answers."""
    from nbstage.entrypoints.lab import daemon_revival
    from nbstage.entrypoints.lab.daemon_revival import DaemonRevival

    asked: list[bool] = []
    answers = Revived(alive=True, rest=False)
    outcomes = [Revived(alive=False, rest=True), Revived(alive=False, rest=False), answers]

    def revive(paths, asker, resting, stopping):
        asked.append(resting)
        return outcomes.pop(0)

    monkeypatch.setattr(daemon_revival, "revive", revive)
    revival = DaemonRevival()
    assert asyncio.run(revival.ensure(Asker.PAGE)) is False
    assert revival.rest.on
    assert asyncio.run(revival.ensure(Asker.PAGE)) is False
    revival.rest.until = 0.0  # the rest is over
    monkeypatch.setattr(daemon_revival, "reopen", _reopened)
    assert asyncio.run(revival.ensure(Asker.PAGE)) is True
    assert asked == [False, True, False]


async def _reopened(notebooks) -> None:
    assert list(notebooks) == []


def test_a_revival_stops_waiting_once_its_client_stops(monkeypatch: pytest.MonkeyPatch) -> None:
    """A daemon that stays pending would keep revive polling for a minute: the Lab edge's
    stop ends that wait (its thread would hold Lab's exit), and no page after the stop
    starts a revival."""
    from nbstage.entrypoints.control import daemon_revival
    from nbstage.entrypoints.lab.daemon_revival import DaemonRevival

    polled = threading.Event()

    def pending(paths):
        polled.set()
        return SocketState.PENDING

    monkeypatch.setattr(daemon_revival, "probe", pending)
    revival = DaemonRevival()

    async def stopped_mid_wait() -> bool:
        asked = asyncio.ensure_future(revival.ensure(Asker.PAGE))
        await asyncio.to_thread(polled.wait, 10)
        started = time.monotonic()
        await revival.stop()
        assert time.monotonic() - started < 5
        return await asked

    assert asyncio.run(stopped_mid_wait()) is False
    started: list[object] = []
    monkeypatch.setattr(daemon_revival, "probe", lambda paths: SocketState.DEAD)
    monkeypatch.setattr(daemon_revival, "start_daemon_unless_running", lambda *a: started.append(a))
    assert asyncio.run(revival.ensure(Asker.PAGE)) is False
    assert started == []
