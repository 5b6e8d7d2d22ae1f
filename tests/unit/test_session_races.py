"""Session races of SPEC §14, driven by explicit message order through the real actors.

The SessionManager and its WatchLoop run together on one simpleSystemBase, as in the
session child process; the ProxySupervisor runs on a bench of its own, as in
`nbstage mcp`. The test plays everything around them: the edges, the daemon
(``FakeDaemon``) and the socketpair between the two processes. Nothing is answered
until the test says so, so each race's order is written out step by step, and nothing
waits on time: a timer the race needs is fired by hand (``ActorBench.fire``).

``sessions.decide`` settles these races as pure tables (test_sessions.py). These tests
prove that the actors carry those decisions out: which frames reach the daemon, which
peers leave their rooms, and what each caller is answered.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest
from thespian.actors import ActorAddress

from nbstage.actors.proxy.supervisor import ProxySupervisor
from nbstage.actors.session.session_manager import SessionManager
from nbstage.protocol.mcp import jsonrpc, tools
from nbstage.protocol.mcp.tool_results import tool_error, tool_result
from nbstage.protocol.session import session_frames
from nbstage.protocol.session.session_followups import ReconnectDue, RetryRecovery
from nbstage.protocol.session.supervision import (
    HANDOFF_EXIT_CODE,
    ActiveSessionChanged,
    ChildProcessDied,
    FromSessionChild,
    HandoffRequested,
    McpMessageToSend,
    McpRequestAdmitted,
    McpResultToSend,
    SessionConfig,
    SessionManagerReady,
    StartSessionChild,
    StartSupervisor,
    StopSessionChild,
    StopSessionManager,
    ToolCallFinished,
    ToolCallRequested,
    ToSessionChild,
)
from tests.unit.actor_harness import ActorBench, DaemonRequest, FakeDaemon, daemon_identity

LABEL = "ada"
PROTOCOL = "2025-11-25"
SUPERVISOR_PID = 4242

I1 = daemon_identity(1111, 100.0, "1.0")
I2 = daemon_identity(2222, 200.0, "1.0")
"""The same daemon version, restarted: a new incarnation."""
UPGRADED = daemon_identity(3333, 300.0, "2.0")

JOINS = ("open", "attach", "create")
SUPERSEDED = "superseded by a later connect"


@pytest.fixture(autouse=True)
def _no_lag_checks(monkeypatch: pytest.MonkeyPatch) -> None:
    """The watch loop looks for late heartbeats every three heartbeat periods; a period of
    an hour keeps that timer out of every test, so only the test's messages happen."""
    monkeypatch.setenv("NBSTAGE_HEARTBEAT_SECS", "3600")


# --- vocabulary -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Notebook:
    notebook_id: str
    path: str


def notebook(workdir: Path, notebook_id: str) -> Notebook:
    return Notebook(notebook_id, str((workdir / f"{notebook_id}.ipynb").resolve()))


def room(nb: Notebook, peer_id: str) -> dict[str, Any]:
    """The daemon's answer to a join (open, attach): the room's facts and the new peer."""
    return {
        "notebook_id": nb.notebook_id,
        "path": nb.path,
        "ephemeral": False,
        "runtime": "python3",
        "cell_count": 2,
        "kernel_status": "idle",
        "peer_id": peer_id,
        "created": False,
    }


DONE = {
    "execution_id": "exec-1",
    "cell_id": "c1",
    "status": "done",
    "execution_count": 1,
    "outputs": [{"output_type": "stream", "name": "stdout", "text": "2\n"}],
}
"""An execution as the daemon reports it."""


def texts(result: dict[str, Any]) -> list[str]:
    return [item["text"] for item in result["content"] if item["type"] == "text"]


def no_session(nb: Notebook) -> str:
    """SPEC §4's no-session error for a notebook that was disconnected."""
    return (
        "No active notebook session (disconnected). Reconnect with: "
        f'connect_notebook(notebook_id="{nb.notebook_id}") — file: {nb.path}'
    )


# --- the session child: a SessionManager, its WatchLoop, their edge and their daemon ---------


class SessionChild:
    """One session child process as its edge sees it.

    The bench's Recorder is the edge, and so also the supervisor: the SessionManager
    answers the sender of its SessionConfig. ``daemon`` answers the frames the two
    actors ask the edge to write.
    """

    def __init__(self, bench: ActorBench) -> None:
        self.bench = bench
        self.daemon = FakeDaemon(bench)
        self.manager = bench.create(SessionManager)

    def start(self, workdir: Path, generation: int = 1, rejoin_target: str | None = None) -> None:
        state = workdir / "state"
        config = SessionConfig(
            str(state),
            str(state / "daemon.sock"),
            LABEL,
            f"agent::{LABEL}",
            str(workdir),
            rejoin_target,
            SUPERVISOR_PID,
            generation - 1,
            generation,
            autostart=False,
        )
        self.bench.send(self.manager, config)

    # links

    def _owned(self, by_manager: bool) -> list[int]:
        return [
            link
            for link in self.daemon.live_links()
            if (self.daemon.opened()[link] == self.manager) == by_manager
        ]

    @property
    def manager_link(self) -> int:
        (link,) = self._owned(by_manager=True)
        return link

    @property
    def watch_link(self) -> int:
        (link,) = self._owned(by_manager=False)
        return link

    @property
    def watch_loop(self) -> ActorAddress:
        """The manager's only child: the owner of every link the manager does not own."""
        return next(o for o in self.daemon.opened().values() if o != self.manager)

    def watch(self) -> DaemonRequest:
        """The newest watch subscription on the watch loop's live link; heartbeats carry its id."""
        link = self.watch_link
        return [r for r in self.daemon.requests("watch") if r.link == link][-1]

    # the daemon

    def heartbeat(self, identity: dict[str, Any]) -> None:
        self.daemon.heartbeat(self.watch(), identity)

    def answer_identity(self, identity: dict[str, Any]) -> None:
        for request in self.daemon.unanswered("identity"):
            self.daemon.answer(request, identity)

    def daemon_up(self, identity: dict[str, Any]) -> None:
        """The daemon answers the manager's identity query and the watch loop's subscription."""
        self.answer_identity(identity)
        self.heartbeat(identity)

    def restart_daemon(self, identity: dict[str, Any]) -> None:
        """The daemon dies and ``identity`` takes its place.

        Both connections close, the manager's first. The watch loop's reconnect timer
        fires before the manager's, so the watch loop is the one that sees the new
        daemon and starts the rejoin; the manager's own timer later finds a link.
        """
        self.daemon.close(self.manager_link)
        self.daemon.close(self.watch_link)
        self.bench.fire(self.watch_loop, ReconnectDue())
        self.heartbeat(identity)
        self.answer_identity(identity)

    def joins(self) -> list[DaemonRequest]:
        return [r for r in self.daemon.requests() if r.kind in JOINS]

    def joined(self, request: DaemonRequest, nb: Notebook, peer_id: str) -> None:
        self.daemon.answer(request, room(nb, peer_id))

    def leaves(self) -> list[tuple[str, str]]:
        return [(r["notebook_id"], r["peer_id"]) for r in self.daemon.requests("leave")]

    # the supervisor's side

    def call(self, call_id: str, name: str, **arguments: Any) -> None:
        request = ToolCallRequested(call_id, name, arguments, f"key-{call_id}")
        self.bench.send(self.manager, request)

    def finished(self, call_id: str) -> list[dict[str, Any]]:
        return [m.result() for m in self.bench.seen_of(ToolCallFinished) if m.call_id == call_id]

    def result(self, call_id: str) -> dict[str, Any]:
        """The one answer to ``call_id``; fails if it got none or more than one."""
        (result,) = self.finished(call_id)
        return result

    def active_changes(self) -> list[tuple[str | None, str | None]]:
        return [(m.notebook_id, m.path) for m in self.bench.seen_of(ActiveSessionChanged)]

    def connect(self, call_id: str, nb: Notebook, peer_id: str) -> None:
        """connect_notebook by path, answered at once: ``nb`` is installed with ``peer_id``."""
        self.call(call_id, "connect_notebook", path=nb.path)
        self.joined(self.daemon.only("open"), nb, peer_id)
        assert not self.result(call_id).get("isError")


def rejoining_n(bench: ActorBench, workdir: Path) -> tuple[SessionChild, DaemonRequest]:
    """N installed on I1; then the daemon restarted as I2 and the rejoin's join is in flight."""
    child = SessionChild(bench)
    child.start(workdir)
    child.daemon_up(I1)
    child.connect("c0", notebook(workdir, "N"), "n1")
    child.restart_daemon(I2)
    assert child.active_changes()[-1] == (None, None), "N's handle on I1 was removed"
    rejoin = child.daemon.only("open")
    assert rejoin.link == child.manager_link, "the rejoin goes to the new daemon"
    assert rejoin["path"] == notebook(workdir, "N").path, "W's rejoin of N is in flight"
    return child, rejoin


# --- disconnect_beats_rejoin ----------------------------------------------------------------


@pytest.mark.parametrize(
    "arguments",
    [
        pytest.param({}, id="disconnect without an id"),
        pytest.param({"notebook_id": "N"}, id="disconnect naming the notebook"),
    ],
)
def test_disconnect_beats_rejoin_the_slot_stays_empty_and_the_rejoins_peer_leaves(
    bench: ActorBench, tmp_path: Path, arguments: dict[str, str]
) -> None:
    n = notebook(tmp_path, "N")
    child, rejoin = rejoining_n(bench, tmp_path)
    changes_before = len(child.active_changes())

    child.call("d1", "disconnect_notebook", **arguments)
    disconnected = child.result("d1")
    assert not disconnected.get("isError")
    assert disconnected["structuredContent"] == {"disconnected": "N"}

    # only now does the rejoin's join come back: its peer is released, not installed
    child.joined(rejoin, n, "n2")
    assert child.leaves() == [("N", "n2")]
    assert child.active_changes()[changes_before:] == [], "nothing was installed"

    # recovery coming due again rejoins nothing
    bench.fire(child.manager, RetryRecovery())
    child.heartbeat(I2)
    assert len(child.joins()) == 2, "the first connect and the one rejoin, nothing more"

    child.call("g1", "get_cell", cell_id="c1")
    refused = child.result("g1")
    assert refused["isError"]
    assert texts(refused) == [no_session(n)], "drop info says disconnected"
    assert child.daemon.requests("get_cell") == [], "the slot is empty, so nothing was asked"


def test_disconnect_beats_rejoin_of_a_handoff_target_the_daemon_has_not_answered_yet(
    bench: ActorBench, tmp_path: Path
) -> None:
    """A restarted session manager is given N to rejoin. A disconnect_notebook reaches it
    before the daemon has answered (a disconnect that was in flight during the handoff is
    retried right after SessionManagerReady), and only then is the daemon seen."""
    n = notebook(tmp_path, "N")
    child = SessionChild(bench)
    child.start(tmp_path, generation=2, rejoin_target=n.path)

    child.call("d1", "disconnect_notebook")
    child.daemon_up(I1)

    assert child.joins() == [], "nothing rejoins the notebook the user disconnected"
    disconnected = child.result("d1")
    assert not disconnected.get("isError"), texts(disconnected)
    child.call("g1", "get_cell", cell_id="c1")
    assert "(disconnected)" in texts(child.result("g1"))[0], "drop info says disconnected"


# --- tool_install_beats_rejoin --------------------------------------------------------------


@pytest.mark.parametrize(
    "rejoin_first",
    [
        pytest.param(False, id="the tool's join comes back first"),
        pytest.param(True, id="the rejoin's join comes back first"),
    ],
)
@pytest.mark.parametrize(
    ("arguments", "name", "kind"),
    [
        pytest.param({"notebook_id": "M"}, "M", "attach", id="M is another notebook"),
        pytest.param({"notebook_id": "N"}, "N", "attach", id="M is N by id"),
        pytest.param({"path": "N.ipynb"}, "N", "open", id="M is N by path"),
    ],
)
def test_tool_install_beats_rejoin_the_tools_session_stays_and_the_rejoin_is_released(
    bench: ActorBench,
    tmp_path: Path,
    arguments: dict[str, str],
    name: str,
    kind: str,
    rejoin_first: bool,
) -> None:
    nb = notebook(tmp_path, name)
    child, rejoin = rejoining_n(bench, tmp_path)
    changes_before = len(child.active_changes())

    child.call("c1", "connect_notebook", **arguments)
    tool_join = child.joins()[-1]
    assert tool_join != rejoin, "the tool joins on its own, it does not wait for the rejoin"
    assert tool_join.kind == kind

    if rejoin_first:
        child.joined(rejoin, notebook(tmp_path, "N"), "n2")
        child.joined(tool_join, nb, "t1")
    else:
        child.joined(tool_join, nb, "t1")
        child.joined(rejoin, notebook(tmp_path, "N"), "n2")

    connected = child.result("c1")
    assert not connected.get("isError")
    assert connected["structuredContent"]["notebook_id"] == name
    assert connected["structuredContent"]["path"] == nb.path
    assert connected["structuredContent"]["resumed"] is False
    assert child.leaves() == [("N", "n2")], "the rejoin's peer is released"
    assert child.active_changes()[changes_before:] == [(name, nb.path)], "installed once"

    # nothing replaces the tool's session: neither recovery coming due nor another heartbeat
    bench.fire(child.manager, RetryRecovery())
    child.heartbeat(I2)
    assert len(child.joins()) == 3

    child.call("d1", "disconnect_notebook")
    assert child.result("d1")["structuredContent"] == {"disconnected": name}
    assert child.leaves()[-1] == (name, "t1"), "the installed peer is the tool's own"


# --- aba_never_joins_stale_a ----------------------------------------------------------------


def connect_a_b_a(child: SessionChild) -> list[DaemonRequest]:
    """connect(A), connect(B), connect(A), none of their joins answered yet."""
    for call_id, notebook_id in (("c1", "A"), ("c2", "B"), ("c3", "A")):
        child.call(call_id, "connect_notebook", notebook_id=notebook_id)
    joins = child.joins()
    assert [(j.kind, j["notebook_id"]) for j in joins] == [
        ("attach", "A"),
        ("attach", "B"),
        ("attach", "A"),
    ], "each connect is its own activation; the second A is a fresh join"
    return joins


@pytest.mark.parametrize(
    "order",
    [
        pytest.param((0, 1, 2), id="the joins come back in order"),
        pytest.param((2, 1, 0), id="the joins come back in reverse"),
        pytest.param((1, 2, 0), id="the fresh A comes back before the first A"),
    ],
)
def test_aba_never_joins_stale_a_the_fresh_a_is_installed_and_the_rest_released(
    bench: ActorBench, tmp_path: Path, order: tuple[int, int, int]
) -> None:
    a, b = notebook(tmp_path, "A"), notebook(tmp_path, "B")
    child = SessionChild(bench)
    child.start(tmp_path)
    child.daemon_up(I1)

    joins = connect_a_b_a(child)
    for call_id in ("c1", "c2"):
        superseded = child.result(call_id)
        assert superseded["isError"]
        assert texts(superseded) == [SUPERSEDED]

    answers = [(a, "a1"), (b, "b1"), (a, "a2")]
    for index in order:
        child.joined(joins[index], *answers[index])

    connected = child.result("c3")
    assert not connected.get("isError")
    assert connected["structuredContent"]["notebook_id"] == "A"
    assert connected["structuredContent"]["resumed"] is False
    assert "switched_from" not in connected["structuredContent"]
    assert sorted(child.leaves()) == [("A", "a1"), ("B", "b1")]
    assert child.active_changes() == [("A", a.path)]

    child.call("d1", "disconnect_notebook")
    assert child.leaves()[-1] == ("A", "a2"), "the installed session is the fresh A"


def test_aba_never_joins_stale_a_a_b_installed_before_the_second_a_is_parked(
    bench: ActorBench, tmp_path: Path
) -> None:
    a, b = notebook(tmp_path, "A"), notebook(tmp_path, "B")
    child = SessionChild(bench)
    child.start(tmp_path)
    child.daemon_up(I1)

    child.call("c1", "connect_notebook", notebook_id="A")
    child.call("c2", "connect_notebook", notebook_id="B")
    first_a, join_b = child.joins()
    child.joined(join_b, b, "b1")
    assert child.result("c2")["structuredContent"]["notebook_id"] == "B"
    child.call("c3", "connect_notebook", notebook_id="A")
    fresh_a = child.joins()[-1]
    assert fresh_a not in (first_a, join_b)

    child.joined(first_a, a, "a1")
    assert child.leaves() == [("A", "a1")], "the first A's late join is released"
    child.joined(fresh_a, a, "a2")

    connected = child.result("c3")["structuredContent"]
    assert (connected["notebook_id"], connected["switched_from"]) == ("A", "B")
    assert child.leaves() == [("A", "a1")], "B is parked, its peer stays"
    assert child.active_changes() == [("B", b.path), ("A", a.path)]

    child.call("d1", "disconnect_notebook", notebook_id="B")
    assert child.result("d1")["structuredContent"] == {"disconnected": "B"}
    assert child.leaves()[-1] == ("B", "b1"), "the parked session was B's first peer"
    child.call("d2", "disconnect_notebook")
    assert child.leaves()[-1] == ("A", "a2"), "the active session is the fresh A"


# --- handoff_with_call_in_flight: the supervisor ---------------------------------------------


class SupervisorEdge:
    """The `nbstage mcp` edge, as its ProxySupervisor sees it: the bench's Recorder."""

    def __init__(self, bench: ActorBench, workdir: Path) -> None:
        self.bench = bench
        state = workdir / "state"
        state.mkdir(exist_ok=True)
        self.supervisor = bench.create(ProxySupervisor)
        start = StartSupervisor(
            str(state),
            str(state / "daemon.sock"),
            LABEL,
            None,
            str(workdir),
            SUPERVISOR_PID,
            autostart=False,
        )
        bench.send(self.supervisor, start)

    def child_says(self, generation: int, message: object) -> None:
        self.bench.send(self.supervisor, FromSessionChild(generation, message))

    def child_exited(self, generation: int, exit_code: int) -> None:
        self.bench.send(self.supervisor, ChildProcessDied(1000 + generation, generation, exit_code))

    def tools_call(self, request_id: int, name: str, **arguments: Any) -> None:
        params = {"name": name, "arguments": arguments}
        request = jsonrpc.Request(request_id, "tools/call", params)
        self.bench.send(self.supervisor, McpRequestAdmitted(request, PROTOCOL, None, LABEL))

    def started(self) -> list[int]:
        return [m.generation for m in self.bench.seen_of(StartSessionChild)]

    def to_child(self, generation: int, kind: type) -> list[Any]:
        return [
            m.message
            for m in self.bench.seen_of(ToSessionChild)
            if m.generation == generation and isinstance(m.message, kind)
        ]

    def answers(self, request_id: int) -> list[dict[str, Any]]:
        """Every answer the MCP client got for ``request_id``, as a tools/call result."""
        found = []
        for m in self.bench.seen():
            if isinstance(m, McpResultToSend) and m.request_id == request_id:
                found.append(orjson.loads(m.result_json))
            elif isinstance(m, McpMessageToSend) and getattr(m.message, "id", None) == request_id:
                found.append(getattr(m.message, "result", {"error": m.message}))
        return found


def ready(generation: int) -> SessionManagerReady:
    return SessionManagerReady(1000 + generation, generation, tools.builtin_tool_list())


def finished(call_id: str, result: dict[str, Any]) -> ToolCallFinished:
    return ToolCallFinished(call_id, orjson.dumps(result))


LATE = ["before the new child is ready", "after the retry reached the new child", "at the end"]


@pytest.mark.parametrize("late", LATE)
def test_handoff_with_call_in_flight_is_retried_once_under_its_key_and_answered_once(
    bench: ActorBench, tmp_path: Path, late: str
) -> None:
    edge = SupervisorEdge(bench, tmp_path)
    assert edge.started() == [1]
    edge.child_says(1, ready(1))
    edge.tools_call(7, "execute_cell", cell_id="c1")
    (in_flight,) = edge.to_child(1, ToolCallRequested)

    before = len(bench.seen())
    edge.child_says(1, HandoffRequested("1.0", "2.0", 1))
    lifecycle = [
        m for m in bench.seen()[before:] if isinstance(m, StopSessionChild | StartSessionChild)
    ]
    assert lifecycle == [StopSessionChild(1), StartSessionChild(2)], "restarted at once"
    (config,) = edge.to_child(2, SessionConfig)
    assert config.generation == 2

    def generation_one_answers_late() -> None:
        lost = tool_error("The notebook daemon is unreachable right now.")
        edge.child_says(1, finished(in_flight.call_id, lost))

    if late == LATE[0]:
        generation_one_answers_late()
    edge.child_says(2, ready(2))
    retried = edge.to_child(2, ToolCallRequested)
    assert retried == [in_flight], "the same call, with the same idempotency key, once"
    if late == LATE[1]:
        generation_one_answers_late()
    done = tool_result({"execution": DONE}, text="Execution exec-1: done")
    edge.child_says(2, finished(in_flight.call_id, done))
    if late == LATE[2]:
        generation_one_answers_late()
    edge.child_exited(1, HANDOFF_EXIT_CODE)

    (answer,) = edge.answers(7)
    assert not answer.get("isError"), "generation 1's late error was dropped"
    assert texts(answer) == ["[nbstage] Daemon upgraded (1.0 → 2.0)", "Execution exec-1: done"]
    upgraded = {"kind": "daemon_upgraded", "message": "Daemon upgraded (1.0 → 2.0)"}
    assert answer["structuredContent"] == {"execution": DONE, "notices": [upgraded]}
    assert edge.started() == [1, 2], "the old child's handoff exit starts nothing more"
    assert len(edge.to_child(1, ToolCallRequested) + edge.to_child(2, ToolCallRequested)) == 2


# --- handoff_with_call_in_flight: the supervisor and a SessionManager per generation ---------


class Wire:
    """`nbstage mcp` and its session children, one bench (process) each, joined by hand.

    What the supervisor tells its edge for a child reaches that generation's
    SessionManager, and what a SessionManager tells its edge for the supervisor comes
    back as FromSessionChild; both cross the session frame codec, as on the socketpair.
    ``pump`` carries messages until nothing moves. A held generation reads nothing
    from the supervisor until it is released, as a child busy with its daemon links.
    """

    def __init__(self, bench: ActorBench, workdir: Path) -> None:
        self.bench = bench
        self.children: dict[int, SessionChild] = {}
        """Every child started, by generation; only the live ones are pumped."""
        self.live: set[int] = set()
        self._read: dict[Any, int] = {}
        self._held: dict[int, list[object]] = {}
        self.edge = SupervisorEdge(bench, workdir)
        self.pump()

    def close(self) -> None:
        for child in self.children.values():
            child.bench.close()

    def _news(self, key: Any, bench: ActorBench) -> list[Any]:
        seen = bench.seen()
        start, self._read[key] = self._read.get(key, 0), len(seen)
        return seen[start:]

    def pump(self) -> None:
        moved = True
        while moved:
            moved = False
            for message in self._news("mcp", self.bench):
                moved = True
                match message:
                    case StartSessionChild(generation):
                        self.children[generation] = SessionChild(ActorBench())
                        self.live.add(generation)
                    case ToSessionChild(generation, payload):
                        self._to_child(generation, payload)
                    case StopSessionChild(generation):
                        self._to_child(generation, StopSessionManager())
            for generation in sorted(self.live):
                child = self.children[generation]
                for message in self._news(generation, child.bench):
                    if isinstance(message, session_frames.FROM_CHILD):
                        moved = True
                        self.edge.child_says(generation, crossed(message))

    def _to_child(self, generation: int, message: object) -> None:
        if generation in self._held:
            self._held[generation].append(message)
            return
        child = self.children[generation]
        child.bench.send(child.manager, crossed(message))

    def hold(self, generation: int) -> None:
        self._held[generation] = []

    def release(self, generation: int) -> None:
        for message in self._held.pop(generation):
            self._to_child(generation, message)
        self.pump()

    def exited(self, generation: int, exit_code: int) -> None:
        """The child's process ended: it says nothing more, and its edge reports the exit."""
        self.pump()
        self.live.discard(generation)
        self.edge.child_exited(generation, exit_code)
        self.pump()


def crossed(message: object) -> object:
    """``message`` as the other process reads it off the socketpair."""
    return session_frames.decode(session_frames.encode(message)[4:])


@pytest.fixture
def wire(bench: ActorBench, tmp_path: Path) -> Iterator[Wire]:
    wire = Wire(bench, tmp_path)
    yield wire
    wire.close()


def test_handoff_with_call_in_flight_requests_the_execution_under_one_key(
    wire: Wire, tmp_path: Path
) -> None:
    n = notebook(tmp_path, "N")
    one = wire.children[1]
    one.daemon_up(I1)
    wire.edge.tools_call(1, "connect_notebook", path="N.ipynb")
    wire.pump()
    one.joined(one.daemon.only("open"), n, "n1")
    wire.pump()
    assert wire.edge.answers(1)[0]["structuredContent"]["notebook_id"] == "N"

    wire.edge.tools_call(2, "execute_cell", cell_id="c1")
    wire.pump()
    (in_flight,) = [c for c in wire.edge.to_child(1, ToolCallRequested) if c.call_id == "int:2"]
    first = one.daemon.only("execute")
    assert first["key"] == in_flight.idempotency_key, "the daemon sees the supervisor's key"

    # the daemon is replaced by version 2.0; generation 1's watch loop hears it first and
    # hands off, while its own link's close and the supervisor's stop are still on the way
    wire.hold(1)
    one.daemon.close(one.watch_link)
    one.bench.fire(one.watch_loop, ReconnectDue())
    one.heartbeat(UPGRADED)
    wire.pump()
    assert wire.edge.started() == [1, 2]

    # the old daemon's close reaches generation 1: its execute fails, and that late answer
    # is dropped by the supervisor; then the child reads its stop and exits for the handoff
    one.daemon.close(one.manager_link)
    wire.pump()
    (late,) = one.finished(in_flight.call_id)
    assert late["isError"], "generation 1 did answer, with the failure its link saw"
    wire.release(1)
    wire.exited(1, HANDOFF_EXIT_CODE)
    assert wire.edge.answers(2) == [], "and the client never saw that answer"

    # generation 2 rejoins N on the new daemon, then runs the retried call
    two = wire.children[2]
    two.daemon_up(UPGRADED)
    wire.pump()
    two.joined(two.daemon.only("open"), n, "n2")
    wire.pump()
    assert wire.edge.to_child(2, ToolCallRequested) == [in_flight], "retried once"
    second = two.daemon.only("execute")
    assert (second["cell_id"], second["key"]) == ("c1", first["key"]), "one key, both tries"
    two.daemon.answer(second, {"execution": DONE})
    wire.pump()

    (answer,) = wire.edge.answers(2)
    assert not answer.get("isError")
    banner = "[nbstage] Daemon upgraded (1.0 → 2.0), rejoin requested"
    assert texts(answer)[0] == banner
    assert answer["structuredContent"]["execution"]["execution_id"] == "exec-1"
    assert len(one.daemon.requests("execute")) == len(two.daemon.requests("execute")) == 1
    assert wire.edge.started() == [1, 2]
