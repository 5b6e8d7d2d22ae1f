"""Nothing doubles, nothing is lost (issue 24 §5): a real `nbstage lab` and its daemon,
a headless Y client on the room's websocket, and the daemon killed, restarted and
handed over, Lab restarted, the file changed behind the room's back.

An agent's edit is acknowledged when the daemon answers it. A person's edit over the
daemon socket (``SocketPerson``, the bridge the Lab edge uses) is acknowledged when the
Room answers its message, which it does once the records are durable. The websocket
carries no answers; an edit typed there counts once the agent reads it and a later
agent edit was answered (the Room journals on one lane, in order).

The daemon keeps edits unsaved for a minute here, so what survives a kill survives
through the journal.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import nbformat
import psutil
import pytest
from pycrdt import YMessageType, YSyncMessageType
from tornado.httpclient import HTTPRequest
from tornado.websocket import websocket_connect

from nbstage.entrypoints.control.daemon_client import DaemonNotRunning
from tests.e2e.test_bad_settings import MALFORMED, PROBLEM
from tests.lab_support import RunningLab, WsPerson, lab_running, stop_lab
from tests.support import McpClientSession, call_ok, pid_gone, run_bounded, start_daemon, wait_until
from tests.y_person import SocketPerson

pytestmark = pytest.mark.e2e

SETTINGS = {
    "NBSTAGE_FILE_CHECK_SECS": "0.2",
    "NBSTAGE_AUTOSAVE_DELAY_SECS": "60",
    "NBSTAGE_AUTOSAVE_MAX_DELAY_SECS": "120",
}
Shape = list[tuple[str, str]]
SYNC_STEP1 = bytes((YMessageType.SYNC, YSyncMessageType.SYNC_STEP1))


@pytest.fixture(scope="module")
def lab() -> Iterator[RunningLab]:
    """A Lab of this module's own: its daemon is killed and Lab restarted here."""
    with lab_running(SETTINGS) as running:
        yield running


def kill_and_restart(lab: RunningLab) -> None:
    """SIGKILL the daemon while a client is on a room's websocket: the Lab edge starts
    another (entrypoints/lab/daemon_revival.py); back once that one answers."""
    pid = lab.daemon.request("identity")["pid"]
    lab.daemon.pid = pid
    lab.daemon.kill()
    wait_until(lambda: pid_gone(pid), 15, "the killed daemon to be gone")
    lab.daemon.pid = wait_until(lambda: _other_daemon(lab, pid), 60, "the edge's new daemon")


def _other_daemon(lab: RunningLab, killed: int) -> int | None:
    with contextlib.suppress(DaemonNotRunning, OSError):
        pid = int(lab.daemon.request("identity")["pid"])
        return pid if pid != killed else None
    return None


def hand_over(lab: RunningLab) -> None:
    """What `nbstage daemon restart` does: stop (saving everything), start again."""
    lab.daemon.stop()
    lab.daemon.pid = start_daemon(lab.daemon.paths.root, lab.daemon.env).pid


def agent_shape(lab: RunningLab, path: Any) -> Shape:
    notebook_id = lab.daemon.request("open", path=str(path))["notebook_id"]
    cells = lab.daemon.request("get_cells", notebook_id=notebook_id, format="json")["cells"]
    return [(c["id"], c["source"]) for c in cells]


def y_shape(person: Any) -> Shape:
    """The Y cells as they are, duplicates included (YNotebook.get hides exact ones)."""
    return [(c.get("id"), str(c.get("source"))) for c in person.notebook.ycells.to_py()]


def settle(person: WsPerson, expected: Callable[[], Shape], lab: RunningLab, path: Any) -> None:
    """Until the client and the agent both hold ``expected``; ids unique in both. (A
    person's edit sent over the websocket reaches the agent in its own time.)"""
    person.wait_until(lambda: y_shape(person) == expected(), 20)
    wait_until(lambda: agent_shape(lab, path) == expected(), 20, f"the agent to hold {expected()}")
    ids = [cell_id for cell_id, _ in y_shape(person)]
    assert len(ids) == len(set(ids))


def told_to_reload(person: WsPerson) -> None:
    with pytest.raises(ConnectionError, match=r"1003.*reloadable"):
        person.wait_until(lambda: False, 30)
    person.close()


def reconnect(person: WsPerson, lab: RunningLab, name: str) -> None:
    """The front end's own reconnection: the same Y history on a new websocket; back
    once the room's sync step 1 is answered (with what the client has and it lacks)."""
    session = lab.session(name)["sessionId"]
    url = (
        f"ws://127.0.0.1:{lab.port}/api/collaboration/room/json:notebook:{person.notebook_id}"
        f"?sessionId={session}"
    )
    request = HTTPRequest(url, headers={"Authorization": f"token {lab.token}"})
    person.ws.close()
    person.ws = person._run(lambda: websocket_connect(request))
    person.outbox.clear()
    person._send(person.greeting())
    asked: list[bytes] = []
    hear = person.hear
    person.hear = lambda message: (asked.append(message[:2]), hear(message))[1]  # type: ignore[method-assign]
    person.wait_until(lambda: SYNC_STEP1 in asked)
    person.hear = hear  # type: ignore[method-assign]


def typed_and_taken(lab: RunningLab, person: WsPerson, path: Any, cell_id: str) -> str:
    """Type into a cell until the agent reads it; then an agent edit, answered once the
    typing's records are durable too. The source expected."""
    person.type_into(cell_id, " # typed")
    person.flush()
    source = person.cell(cell_id)["source"]
    notebook_id = person.notebook_id
    wait_until(lambda: dict(agent_shape(lab, path)).get(cell_id) == source, 20, "typing")
    lab.daemon.request("create_cell", notebook_id=notebook_id, source="flushed = 1", index=0)
    return str(source)


@pytest.mark.parametrize("restart", [kill_and_restart, hand_over], ids=["sigkill", "handover"])
def test_a_daemon_restart_tells_the_client_to_reload_and_loses_nothing(lab, restart) -> None:
    name = f"daemon-{restart.__name__}.ipynb"
    path = lab.notebook(name, "a = 1", "b = 2")
    person = WsPerson(lab, name)
    person.synced()
    made = lab.daemon.request("create_cell", notebook_id=person.notebook_id, source="agent = 1")
    a_id = person.cells()[0]["id"]
    typed = typed_and_taken(lab, person, path, a_id)
    before = agent_shape(lab, path)
    assert (a_id, typed) in before
    assert (made["cell_id"], "agent = 1") in before
    restart(lab)
    told_to_reload(person)

    stale = WsPerson(lab, name, held="0" * 32)
    told_to_reload(stale)
    fresh = WsPerson(lab, name)
    try:
        settle(fresh, lambda: before, lab, path)
    finally:
        fresh.close()


def test_a_lab_restart_loses_nothing_and_the_client_comes_back_with_its_edits(lab) -> None:
    """The browser was cut off while Lab restarted and typed meanwhile: on its way
    back it keeps its history (the room's is the same), and its offline edit arrives."""
    name = "lab-restart.ipynb"
    path = lab.notebook(name, "a = 1", "b = 2")
    person = WsPerson(lab, name)
    try:
        person.synced()
        lab.daemon.request("attach", notebook_id=person.notebook_id, peer_label="agent")
        made = lab.daemon.request("create_cell", notebook_id=person.notebook_id, source="c = 3")
        person.wait_until(lambda: person.cell(made["cell_id"]) is not None)
        lab.restart()
        with pytest.raises(ConnectionError):
            person.wait_until(lambda: False, 30)
        b_id = person.cells()[1]["id"]
        person.type_into(b_id, " # offline")
        expected = [(c["id"], c["source"]) for c in person.cells()]
        reconnect(person, lab, name)
        settle(person, lambda: expected, lab, path)
    finally:
        person.close()


def test_a_persons_acknowledged_edit_survives_a_sigkill(lab) -> None:
    path = lab.notebook("person-kill.ipynb", "a = 1")
    notebook_id = lab.daemon.request("open", path=str(path))["notebook_id"]
    watcher = WsPerson(lab, "person-kill.ipynb")
    # joined before the kill: a join the kill cuts off is refused, not told to reload
    watcher.synced()
    with lab.daemon.client() as client:
        person = SocketPerson(client, notebook_id)
        cell_id = person.cells()[0]["id"]
        person.type_into(cell_id, " + 41")
        person.notebook.append_cell(
            {"id": "added", "cell_type": "markdown", "source": "hi", "metadata": {}}
        )
        person.flush()
        kill_and_restart(lab)
    told_to_reload(watcher)
    assert agent_shape(lab, path) == [(cell_id, "a = 1 + 41"), ("added", "hi")]


def test_an_outside_change_is_merged_by_cell_id_and_the_client_sees_it(lab) -> None:
    name = "outside.ipynb"
    path = lab.notebook(name, "a = 1", "b = 2")
    person = WsPerson(lab, name)
    try:
        person.synced()
        lab.daemon.request("save", notebook_id=person.notebook_id)
        nb = nbformat.read(path, as_version=4)
        nb.cells[1].source = "b = 'outside'"
        added = nbformat.v4.new_code_cell("c = 3")
        nb.cells.insert(0, added)
        nbformat.write(nb, path)
        expected = [(c.id, c.source) for c in nb.cells]
        settle(person, lambda: expected, lab, path)
    finally:
        person.close()


class Mix:
    """A seeded run of agent edits, person edits and daemon kills, with a model of what
    was acknowledged: after every step the client and the agent hold exactly it."""

    def __init__(self, lab: RunningLab, seed: int) -> None:
        self.lab, self.rng, self.name = lab, random.Random(seed), f"mix-{seed}.ipynb"
        self.path = lab.notebook(self.name, "a = 0", "b = 0", "c = 0")
        self.watcher = WsPerson(lab, self.name)
        self.watcher.synced()
        self.model: Shape = y_shape(self.watcher)
        self.client = lab.daemon.client()
        self.person = SocketPerson(self.client, self.watcher.notebook_id)

    KINDS = ("agent_create", "agent_set", "agent_delete", "agent_move")
    KINDS += ("type", "insert", "remove", "shift")

    def step(self, n: int) -> None:
        """Every tenth step kills the daemon; the others are drawn from KINDS."""
        getattr(self, "kill" if n % 10 == 9 else self.rng.choice(self.KINDS))(n)
        settle(self.watcher, lambda: self.model, self.lab, self.path)

    def _agent(self, kind: str, **fields: Any) -> dict[str, Any]:
        return self.lab.daemon.request(kind, notebook_id=self.watcher.notebook_id, **fields)

    def _any(self) -> int:
        return self.rng.randrange(len(self.model))

    def agent_create(self, n: int) -> None:
        at = self.rng.randrange(len(self.model) + 1)
        made = self._agent("create_cell", source=f"agent {n}", index=at)
        self.model.insert(at, (made["cell_id"], f"agent {n}"))

    def agent_set(self, n: int) -> None:
        at = self._any()
        cell_id, source = self.model[at]
        self._agent("set_cell", cell_id=cell_id, source=f"{source} s{n}")
        self.model[at] = (cell_id, f"{source} s{n}")

    def agent_delete(self, n: int) -> None:
        if len(self.model) > 1:
            self._agent("delete_cell", cell_id=self.model.pop(self._any())[0])

    def agent_move(self, n: int) -> None:
        cell = self.model.pop(self._any())
        after = self.rng.randrange(len(self.model) + 1)
        after_id = self.model[after - 1][0] if after else None
        self._agent("move_cell", cell_id=cell[0], after_cell_id=after_id)
        self.model.insert(after, cell)

    def _person(self, edit: Callable[[Any], None]) -> None:
        """The person's view brought up to date first, then their edit, acknowledged."""
        self.person.send_all([self.person.greeting()])
        assert y_shape(self.person) == self.model
        with self.person.notebook.ydoc.transaction():
            edit(self.person.notebook)
        self.person.flush()

    def type(self, n: int) -> None:
        at = self._any()
        self._person(lambda nb: nb.ycells[at]["source"].__iadd__(f" p{n}"))
        self.model[at] = (self.model[at][0], f"{self.model[at][1]} p{n}")

    def insert(self, n: int) -> None:
        at, cell_id = self.rng.randrange(len(self.model) + 1), uuid.uuid4().hex[:12]
        cell = {"id": cell_id, "cell_type": "code", "source": f"person {n}", "metadata": {}}
        self._person(lambda nb: nb.ycells.insert(at, nb.create_ycell(cell)))
        self.model.insert(at, (cell_id, f"person {n}"))

    def remove(self, n: int) -> None:
        if len(self.model) > 1:
            at = self._any()
            self._person(lambda nb: nb.ycells.pop(at))
            self.model.pop(at)

    def shift(self, n: int) -> None:
        """As Lab moves a cell: out of the array, and a copy in at its new place."""
        source, target = self._any(), self._any()

        def move(nb: Any) -> None:
            copied = nb.get_cell(source)
            nb.ycells.pop(source)
            nb.ycells.insert(target, nb.create_ycell(copied))

        self._person(move)
        self.model.insert(target, self.model.pop(source))

    def kill(self, n: int) -> None:
        self.client.close()
        kill_and_restart(self.lab)
        told_to_reload(self.watcher)
        self.watcher = WsPerson(self.lab, self.name)
        self.client = self.lab.daemon.client()
        self.person = SocketPerson(self.client, self.watcher.notebook_id)

    def close(self) -> None:
        self.client.close()
        self.watcher.close()


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_nothing_doubles_and_nothing_acknowledged_is_lost_over_a_seeded_mix(lab, seed) -> None:
    mix = Mix(lab, seed)
    try:
        for n in range(24):
            mix.step(n)
    finally:
        mix.close()


def test_the_edge_revives_a_killed_daemon_and_the_persons_edit_then_reaches_the_agent(
    lab,
) -> None:
    """The agent is a real `nbstage mcp`, with autostart off so that nothing but the Lab
    edge starts the daemon again (an autostarting client's session child would too:
    test_rejoin.py). The page is told to reload, its reload finds the room back, and what the
    person types there reaches the agent's get_cell."""
    name = "revived.ipynb"
    path = lab.notebook(name, "a = 1")
    person = WsPerson(lab, name)
    person.synced()
    cell_id = person.cells()[0]["id"]

    def kill_and_type() -> str:
        kill_and_restart(lab)
        assert "JUPYTER_TOKEN" not in psutil.Process(lab.daemon.pid).environ(), "Lab's token"
        with pytest.raises(ConnectionError, match=r"1003.*restarted.*reloadable"):
            person.wait_until(lambda: False, 60)
        person.close()
        reloaded = WsPerson(lab, name)
        try:
            reloaded.synced()
            reloaded.type_into(cell_id, " # after the kill")
            reloaded.flush()
            return str(reloaded.cell(cell_id)["source"])
        finally:
            reloaded.close()

    async def body() -> None:
        async with McpClientSession(
            lab.daemon, "legacy", "agent", lab.root, no_autostart=True
        ) as agent:
            await call_ok(agent, "connect_notebook", path=str(path))
            typed = await anyio.to_thread.run_sync(kill_and_type)
            deadline = time.monotonic() + 60
            while True:
                result = await agent.call_tool("get_cell", {"cell_id": cell_id})
                shown = (result.structured_content or {}).get("cell") or {}
                if not result.is_error and shown.get("source") == typed:
                    break
                assert time.monotonic() < deadline, f"the agent reads {result}"
                await anyio.sleep(0.2)

    run_bounded(body, budget=180)


def lab_unix_sockets(lab: RunningLab) -> set[str]:
    """The inodes of the Unix sockets `nbstage lab`'s processes hold (an inode, unlike a
    count or an fd number, is never that of a socket closed meanwhile)."""
    with open("/proc/net/unix") as table:
        unix = {line.split()[6] for line in list(table)[1:]}
    top = psutil.Process(lab.process.pid)
    held = set()
    for process in [top, *top.children(True)]:
        for fd in Path(f"/proc/{process.pid}/fd").iterdir():
            with contextlib.suppress(OSError):
                target = os.readlink(fd)
                if target.startswith("socket:["):
                    held.add(target[len("socket:[") : -1])
    return held & unix


def test_a_join_cut_off_by_a_daemon_kill_is_told_to_reload(lab) -> None:
    """The daemon is frozen (SIGSTOP) before a page's room websocket joins, so the join's
    connection waits in the socket's backlog with its request unanswered; then it is
    killed. The join is cut off mid-request: the edge brings a daemon back and closes
    with the reloadable 1003, never with a close that leaves the page no way on but a
    reload by hand; the reload joins."""
    name = "cut-off-join.ipynb"
    lab.notebook(name, "a = 1")
    session = lab.session(name)
    pid = lab.daemon.request("identity")["pid"]
    lab.daemon.pid = pid
    before = lab_unix_sockets(lab)
    os.kill(pid, signal.SIGSTOP)
    try:
        person = WsPerson(lab, name, session=session)
        wait_until(lambda: lab_unix_sockets(lab) - before, 15, "the join's connection")
    finally:
        lab.daemon.kill()
    wait_until(lambda: pid_gone(pid), 15, "the killed daemon to be gone")
    with pytest.raises(ConnectionError, match=r"1003.*restarted.*reloadable"):
        person.wait_until(lambda: False, 60)
    person.close()
    lab.daemon.pid = wait_until(lambda: _other_daemon(lab, pid), 60, "the edge's new daemon")
    reloaded = WsPerson(lab, name)
    try:
        reloaded.synced()
        assert reloaded.cells()[0]["source"] == "a = 1"
    finally:
        reloaded.close()


def test_a_daemon_stopped_on_purpose_stays_stopped_until_a_page_asks(lab) -> None:
    name = "stopped.ipynb"
    lab.notebook(name, "a = 1")
    person = WsPerson(lab, name)
    person.synced()
    lab.daemon.stop()
    with pytest.raises(ConnectionError, match=r"1003.*went away.*reloadable"):
        person.wait_until(lambda: False, 30)
    person.close()
    with pytest.raises(DaemonNotRunning):
        lab.daemon.request("identity")
    reloaded = WsPerson(lab, name)
    try:
        reloaded.synced()
        lab.daemon.pid = lab.daemon.request("identity")["pid"]
    finally:
        reloaded.close()


def test_a_daemon_that_would_refuse_its_settings_is_not_launched_for_every_page(lab) -> None:
    """The daemon stopped and config.toml broken: each page's request is refused at once
    with the file's problem, and no daemon is launched for it (it would exit 78, and a
    revival would launch it again every few seconds for a minute). Once the file is
    mended, the next page starts one."""
    name = "refused-settings.ipynb"
    lab.notebook(name, "a = 1")
    lab.daemon.stop()
    config = lab.daemon.paths.root / "config.toml"
    config.write_text(MALFORMED)
    launched = lab.daemon.paths.root / "logs" / "daemon.out"
    before = launched.read_bytes() if launched.exists() else b""
    try:
        for _ in range(3):
            with pytest.raises(urllib.error.HTTPError) as refused:
                lab.session(name)
            said = refused.value.read().decode()
            refused.value.close()
            assert refused.value.code == 503, said
            assert PROBLEM in said, said
        after = launched.read_bytes() if launched.exists() else b""
        assert b"not started" not in after[len(before) :], after[len(before) :]
    finally:
        config.unlink()
    person = WsPerson(lab, name)
    try:
        person.synced()
        lab.daemon.pid = lab.daemon.request("identity")["pid"]
    finally:
        person.close()


def test_a_lab_stopped_while_it_prepares_a_page_cancels_that_and_exits_cleanly(lab) -> None:
    """A notebook's page is asked for while the daemon answers nothing (SIGSTOP), so the
    page's preparation (entrypoints/lab/tree_page.py) still waits on it when Lab is
    stopped. The edge cancels it at its stop: Lab exits 0, and no task is destroyed
    while pending."""
    lab.notebook("prepared-at-stop.ipynb", "x = 1")
    daemon_pid = int(lab.daemon.request("identity")["pid"])
    out = lab.root.parent / "lab.out"
    said = out.stat().st_size
    os.kill(daemon_pid, signal.SIGSTOP)
    try:
        url = f"{lab.base}/lab/tree/prepared-at-stop.ipynb?token={lab.token}"
        with urllib.request.urlopen(url, timeout=30) as page:
            assert page.status == 200
        stop_lab(lab.process)
    finally:
        os.kill(daemon_pid, signal.SIGCONT)
    logged = out.read_bytes()[said:].decode(errors="replace")
    try:
        assert lab.process.returncode == 0, logged
        assert "Lab edge stopped, 1 task(s) cancelled" in logged, logged
        assert "Task was destroyed" not in logged, logged
    finally:
        lab.process = lab.start()
        lab.wait_up()
