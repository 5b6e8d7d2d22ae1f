"""The session model of SPEC §6 and its races (§14), as tables over event sequences.

``decide`` is pure, so a row is a list of events folded through it, and the row states
the actions of every step. Steps matter: "released only after the new one is installed"
means the Leave comes in the same step as the install, never before it.

Activation ids are numbered by the module from 1, one per Join it asks for. A row's
``given`` sessions are installed first, one connect each, so they take ids 1..len(given)
and the row's own joins go on from there.
"""

from __future__ import annotations

from typing import Any

import pytest

from nbstage.actors.session.session_events import (
    Action,
    Answer,
    ConnectRequested,
    DisconnectRequested,
    IncarnationSeen,
    Join,
    JoinFailed,
    JoinSucceeded,
    Leave,
    RecoveryDue,
    Refuse,
    RetryRecoveryLater,
    TellNextResult,
)
from nbstage.actors.session.session_model import (
    MAX_PARKED,
    Drop,
    DropReason,
    Session,
    SessionState,
    Target,
)
from nbstage.actors.session.sessions import decide, kernel_lost_line, no_session_message

# --- vocabulary -----------------------------------------------------------------------------

I1 = (1111, 100.0)
I2 = (2222, 200.0)
I3 = (3333, 300.0)
"""Daemon incarnations, as the watch loop reports them: (pid, started_at)."""

DETAILS = {"cell_count": 3, "kernel_status": "idle", "ephemeral": False, "runtime": "python"}
CREATE = {"runtime": "python", "ephemeral": True, "working_dir": "/work"}

SUPERSEDED = "superseded by a later connect"
CANCELLED = "cancelled by disconnect_notebook"
NOTHING_TO_DISCONNECT = "No active notebook session to disconnect."
JOIN_ERROR = "File not found: /work/X.ipynb"


def path_of(notebook_id: str) -> str:
    return f"/work/{notebook_id}.ipynb"


def by_id(notebook_id: str) -> Target:
    return Target(notebook_id=notebook_id)


def by_path(notebook_id: str) -> Target:
    return Target(path=path_of(notebook_id))


def recovery_of(notebook_id: str) -> Target:
    """The best target kept for a removed active session: its path, with its id."""
    return Target(path=path_of(notebook_id), notebook_id=notebook_id)


def peer(notebook_id: str, n: int, incarnation: Any = I1) -> Session:
    """The n-th peer this client joined ``notebook_id`` with."""
    return Session(notebook_id, path_of(notebook_id), f"{notebook_id.lower()}{n}", incarnation)


def created(notebook_id: str, n: int) -> Session:
    return Session(notebook_id, None, f"{notebook_id.lower()}{n}", I1)


A1, A2, B1, M1 = peer("A", 1), peer("A", 2), peer("B", 1), peer("M", 1, I2)
N1, N2, N3 = peer("N", 1), peer("N", 2, I2), peer("N", 3, I2)
P1, Q1, R1 = peer("P", 1), peer("Q", 1), peer("R", 1)
U1, V1 = created("U", 1), created("V", 1)


def connect(call_id: str, target: Target) -> ConnectRequested:
    return ConnectRequested(call_id, target)


def joined(activation_id: int, session: Session) -> JoinSucceeded:
    return JoinSucceeded(activation_id, session, DETAILS)


def failed(activation_id: int, unavailable: bool = False) -> JoinFailed:
    return JoinFailed(activation_id, JOIN_ERROR, unavailable)


def disconnect(call_id: str, notebook_id: str | None = None) -> DisconnectRequested:
    return DisconnectRequested(call_id, notebook_id)


def seen(incarnation: Any, handoff_target: Target | None = None) -> IncarnationSeen:
    return IncarnationSeen(incarnation, handoff_target)


def told_kernel_lost(session: Session) -> TellNextResult:
    return TellNextResult(kernel_lost_line(session))


def leave(session: Session) -> Leave:
    return Leave(session.notebook_id, session.peer_id)


def answer(
    call_id: str, session: Session, resumed: bool = False, switched_from: str | None = None
) -> Answer:
    """A connect's answer, in the shape ``view`` keeps of it."""
    result: dict[str, Any] = {
        "notebook_id": session.notebook_id,
        "path": session.path,
        "resumed": resumed,
    }
    if switched_from is not None:
        result["switched_from"] = switched_from
    return Answer(call_id, result)


def disconnected(call_id: str, notebook_id: str) -> Answer:
    return Answer(call_id, {"disconnected": notebook_id})


CONNECT_KEYS = ("notebook_id", "path", "resumed", "switched_from")


def view(action: Action) -> Action:
    """A connect's answer cut down to who, where, resumed and switched_from.

    The details that come from the daemon (cell count, kernel status) are checked once,
    in their own test, so that the tables stay about which session is which.
    """
    if isinstance(action, Answer) and "resumed" in action.result:
        kept = {k: action.result[k] for k in CONNECT_KEYS if k in action.result}
        return Answer(action.call_id, kept)
    return action


def fold(
    events: list[object], state: SessionState | None = None
) -> tuple[SessionState, list[list[Action]]]:
    """Feed the events to ``decide`` one by one; the actions of each step, in order."""
    state = SessionState() if state is None else state
    steps = []
    for event in events:
        state, actions = decide(state, event)
        steps.append([view(a) for a in actions])
    return state, steps


def installed(*sessions: Session) -> SessionState:
    """The state after connecting to each session in turn, with activation ids 1, 2, ..."""
    events: list[object] = []
    for n, session in enumerate(sessions, start=1):
        events += [connect(f"setup-{n}", by_id(session.notebook_id)), joined(n, session)]
    state, _ = fold(events)
    return state


def replies_to(call_id: str, steps: list[list[Action]]) -> list[Action]:
    return [
        a for step in steps for a in step if isinstance(a, Answer | Refuse) and a.call_id == call_id
    ]


# --- the main table: steps and the sessions they leave ----------------------------------------

STEPS = [
    pytest.param(
        (),
        [connect("c1", by_id("A")), joined(1, A1)],
        [[Join(1, by_id("A"))], [answer("c1", A1)]],
        A1,
        (),
        id="a first connect joins once, installs the session and answers resumed false",
    ),
    pytest.param(
        (),
        [connect("c1", by_path("A")), joined(1, A1)],
        [[Join(1, by_path("A"))], [answer("c1", A1)]],
        A1,
        (),
        id="a connect by path installs the session its join returns",
    ),
    pytest.param(
        (A1,),
        [connect("c1", by_id("B")), joined(2, B1)],
        [[Join(2, by_id("B"))], [answer("c1", B1, switched_from="A")]],
        B1,
        (A1,),
        id="switching parks the previous session, keeps its peer and says switched_from",
    ),
    pytest.param(
        (A1, B1),
        [connect("c1", by_id("A")), joined(3, A2)],
        [[Join(3, by_id("A"))], [leave(A1), answer("c1", A2, resumed=True, switched_from="B")]],
        A2,
        (B1,),
        id="connecting back to a parked notebook joins afresh, answers resumed true "
        "and releases the old parked peer in the step that installs the new one",
    ),
    pytest.param(
        (A1, B1),
        [connect("c1", by_path("A")), joined(3, A2)],
        [
            [Join(3, by_path("A"))],
            [leave(A1), answer("c1", A2, resumed=True, switched_from="B")],
        ],
        A2,
        (B1,),
        id="connecting back to a parked notebook by its path resumes it the same way",
    ),
    pytest.param(
        (A1, B1),
        [connect("c1", by_id("A")), failed(3)],
        [[Join(3, by_id("A"))], [Refuse("c1", JOIN_ERROR)]],
        B1,
        (A1,),
        id="a failed join back to a parked notebook keeps its parked peer and the active one",
    ),
    pytest.param(
        (A1,),
        [connect("c1", by_id("A"))],
        [[answer("c1", A1)]],
        A1,
        (),
        id="connecting to the already-active notebook by id answers at once without a join",
    ),
    pytest.param(
        (A1,),
        [connect("c1", by_path("A"))],
        [[answer("c1", A1)]],
        A1,
        (),
        id="connecting to the already-active notebook by path answers at once without a join",
    ),
    pytest.param(
        (),
        [connect("c1", by_id("A")), connect("c2", by_id("A")), joined(1, A1)],
        [[Join(1, by_id("A"))], [], [answer("c1", A1), answer("c2", A1)]],
        A1,
        (),
        id="same_target_shares: two connects to A in flight make one join and both get it",
    ),
    pytest.param(
        (),
        [
            connect("c1", by_id("A")),
            connect("c2", by_id("A")),
            connect("c3", by_id("B")),
            joined(1, A1),
            joined(2, B1),
        ],
        [
            [Join(1, by_id("A"))],
            [],
            [Refuse("c1", SUPERSEDED), Refuse("c2", SUPERSEDED), Join(2, by_id("B"))],
            [leave(A1)],
            [answer("c3", B1)],
        ],
        B1,
        (),
        id="superseding a shared activation refuses every caller that shared it",
    ),
    pytest.param(
        (),
        [
            connect("c1", Target(create=CREATE)),
            connect("c2", Target(create=CREATE)),
            joined(1, U1),
            joined(2, V1),
        ],
        [
            [Join(1, Target(create=CREATE))],
            [Refuse("c1", SUPERSEDED), Join(2, Target(create=CREATE))],
            [leave(U1)],
            [answer("c2", V1)],
        ],
        V1,
        (),
        id="create targets are never shared: an equal second create is a new activation",
    ),
    pytest.param(
        (A1,),
        [connect("c1", Target(create=CREATE)), joined(2, U1)],
        [[Join(2, Target(create=CREATE))], [answer("c1", U1, switched_from="A")]],
        U1,
        (A1,),
        id="a create never matches the active session and parks it like any switch",
    ),
    pytest.param(
        (),
        [
            connect("c1", by_id("A")),
            connect("c2", by_id("B")),
            connect("c3", by_id("A")),
            joined(1, A1),
            joined(2, B1),
            joined(3, A2),
        ],
        [
            [Join(1, by_id("A"))],
            [Refuse("c1", SUPERSEDED), Join(2, by_id("B"))],
            [Refuse("c2", SUPERSEDED), Join(3, by_id("A"))],
            [leave(A1)],
            [leave(B1)],
            [answer("c3", A2)],
        ],
        A2,
        (),
        id="aba_never_joins_stale_a: the first A's late join is released, B is released "
        "and the fresh A is installed",
    ),
    pytest.param(
        (),
        [
            connect("c1", by_id("A")),
            connect("c2", by_id("B")),
            connect("c3", by_id("A")),
            joined(3, A2),
            joined(2, B1),
            joined(1, A1),
        ],
        [
            [Join(1, by_id("A"))],
            [Refuse("c1", SUPERSEDED), Join(2, by_id("B"))],
            [Refuse("c2", SUPERSEDED), Join(3, by_id("A"))],
            [answer("c3", A2)],
            [leave(B1)],
            [leave(A1)],
        ],
        A2,
        (),
        id="aba_never_joins_stale_a: stale joins that come back after the fresh A never replace it",
    ),
    pytest.param(
        (P1,),
        [
            connect("c1", by_id("A")),
            connect("c2", by_id("B")),
            connect("c3", by_id("A")),
            joined(2, A1),
            joined(3, B1),
            joined(4, A2),
        ],
        [
            [Join(2, by_id("A"))],
            [Refuse("c1", SUPERSEDED), Join(3, by_id("B"))],
            [Refuse("c2", SUPERSEDED), Join(4, by_id("A"))],
            [leave(A1)],
            [leave(B1)],
            [answer("c3", A2, switched_from="P")],
        ],
        A2,
        (P1,),
        id="aba_never_joins_stale_a: with P installed, P is parked and only the fresh A "
        "replaces it",
    ),
    pytest.param(
        (),
        [
            connect("c1", by_id("A")),
            connect("c2", by_id("B")),
            joined(2, B1),
            connect("c3", by_id("A")),
            joined(1, A1),
            joined(3, A2),
        ],
        [
            [Join(1, by_id("A"))],
            [Refuse("c1", SUPERSEDED), Join(2, by_id("B"))],
            [answer("c2", B1)],
            [Join(3, by_id("A"))],
            [leave(A1)],
            [answer("c3", A2, switched_from="B")],
        ],
        A2,
        (B1,),
        id="aba_never_joins_stale_a: a B installed before the second A is parked",
    ),
    pytest.param(
        (P1,),
        [connect("c1", by_id("Q")), connect("c2", by_id("R")), joined(2, Q1), failed(3)],
        [
            [Join(2, by_id("Q"))],
            [Refuse("c1", SUPERSEDED), Join(3, by_id("R"))],
            [leave(Q1)],
            [Refuse("c2", JOIN_ERROR)],
        ],
        P1,
        (),
        id="refused_install_restores: a superseded replacement's join is released "
        "and P stays installed",
    ),
    pytest.param(
        (P1,),
        [connect("c1", by_id("Q")), connect("c2", by_id("P")), joined(2, Q1)],
        [
            [Join(2, by_id("Q"))],
            [Refuse("c1", SUPERSEDED), answer("c2", P1)],
            [leave(Q1)],
        ],
        P1,
        (),
        id="refused_install_restores: connecting back to the installed P supersedes "
        "a replacement still in flight",
    ),
    pytest.param(
        (A1, B1),
        [connect("c1", by_id("C")), failed(3)],
        [[Join(3, by_id("C"))], [Refuse("c1", JOIN_ERROR)]],
        B1,
        (A1,),
        id="a failed join leaves the installed session and the parked ones untouched",
    ),
    pytest.param(
        (P1,),
        [connect("c1", by_id("Q")), connect("c2", by_id("R")), failed(2), joined(3, R1)],
        [
            [Join(2, by_id("Q"))],
            [Refuse("c1", SUPERSEDED), Join(3, by_id("R"))],
            [],
            [answer("c2", R1, switched_from="P")],
        ],
        R1,
        (P1,),
        id="a late failure of a superseded join changes nothing",
    ),
    pytest.param(
        (),
        [connect("c1", by_id("A")), disconnect("c2"), joined(1, A1)],
        [
            [Join(1, by_id("A"))],
            [Refuse("c1", CANCELLED), Refuse("c2", NOTHING_TO_DISCONNECT)],
            [leave(A1)],
        ],
        None,
        (),
        id="disconnect during an in-flight connect refuses its caller and releases its late join",
    ),
    pytest.param(
        (P1,),
        [connect("c1", by_id("Q")), disconnect("c2"), joined(2, Q1)],
        [
            [Join(2, by_id("Q"))],
            [Refuse("c1", CANCELLED), leave(P1), disconnected("c2", "P")],
            [leave(Q1)],
        ],
        None,
        (),
        id="disconnect during a switch cancels the switch and disconnects the active notebook",
    ),
    pytest.param(
        (A1, B1),
        [disconnect("c1")],
        [[leave(B1), disconnected("c1", "B")]],
        None,
        (A1,),
        id="disconnect without an id leaves the active notebook and keeps the parked ones",
    ),
    pytest.param(
        (A1, B1),
        [disconnect("c1", "B")],
        [[leave(B1), disconnected("c1", "B")]],
        None,
        (A1,),
        id="disconnect naming the active notebook leaves it",
    ),
    pytest.param(
        (A1, B1),
        [disconnect("c1", "A")],
        [[leave(A1), disconnected("c1", "A")]],
        B1,
        (),
        id="disconnect of a parked notebook releases it and keeps the active one",
    ),
    pytest.param(
        (),
        [disconnect("c1")],
        [[Refuse("c1", NOTHING_TO_DISCONNECT)]],
        None,
        (),
        id="disconnect with nothing connected is refused",
    ),
    pytest.param(
        (A1,),
        [disconnect("c1", "Z")],
        [[Refuse("c1", "Notebook Z is not connected in this session.")]],
        A1,
        (),
        id="disconnect of a notebook that is not connected is refused and keeps the session",
    ),
    pytest.param(
        (A1,),
        [disconnect("c1"), connect("c2", by_id("A")), joined(2, A2)],
        [[leave(A1), disconnected("c1", "A")], [Join(2, by_id("A"))], [answer("c2", A2)]],
        A2,
        (),
        id="after a disconnect, connecting again is a plain connect with resumed false",
    ),
    # --- the daemon restarted (§7): handles are bound to an incarnation ---
    pytest.param(
        (N1,),
        [seen(I2), joined(2, N2)],
        [[Join(2, recovery_of("N"))], [told_kernel_lost(N2)]],
        N2,
        (),
        id="restart_without_disconnect_event: a new incarnation removes the old handle "
        "and rejoins its best target",
    ),
    pytest.param(
        (N1,),
        [seen(I1), seen(I1)],
        [[], []],
        N1,
        (),
        id="failed_query_is_not_loss: seeing the same incarnation again changes nothing",
    ),
    pytest.param(
        (A1, N1),
        [seen(I2), joined(3, N2)],
        [[Join(3, recovery_of("N"))], [told_kernel_lost(N2)]],
        N2,
        (),
        id="stale_parked_removed_not_recovered: parked handles of the old incarnation go "
        "and only the active target is rejoined",
    ),
    pytest.param(
        (N1,),
        [seen(I2), seen(I3), joined(2, N2), joined(3, N3)],
        [
            [Join(2, recovery_of("N"))],
            [Join(3, recovery_of("N"))],
            [leave(N2)],
            [told_kernel_lost(N3)],
        ],
        N3,
        (),
        id="another restart during a rejoin supersedes it and rejoins the newest daemon",
    ),
    pytest.param(
        (N1,),
        [seen(I2), failed(2), RecoveryDue(), joined(3, N2)],
        [
            [Join(2, recovery_of("N"))],
            [RetryRecoveryLater(0.2)],
            [Join(3, recovery_of("N"))],
            [told_kernel_lost(N2)],
        ],
        N2,
        (),
        id="a transient rejoin failure keeps the target and tries again when recovery is due",
    ),
    pytest.param(
        (N1,),
        [seen(I2), failed(2), RecoveryDue(), failed(3), RecoveryDue(), failed(4)],
        [
            [Join(2, recovery_of("N"))],
            [RetryRecoveryLater(0.2)],
            [Join(3, recovery_of("N"))],
            [RetryRecoveryLater(0.4)],
            [Join(4, recovery_of("N"))],
            [RetryRecoveryLater(0.8)],
        ],
        None,
        (),
        id="failed rejoins back off, doubling from 0.2 s",
    ),
    pytest.param(
        (N1,),
        [seen(I2), failed(2), RecoveryDue(), joined(3, N2), seen(I3), failed(4)],
        [
            [Join(2, recovery_of("N"))],
            [RetryRecoveryLater(0.2)],
            [Join(3, recovery_of("N"))],
            [told_kernel_lost(N2)],
            [Join(4, recovery_of("N"))],
            [RetryRecoveryLater(0.2)],
        ],
        None,
        (),
        id="a rejoin that works resets the backoff",
    ),
    pytest.param(
        (N1,),
        [seen(I2), failed(2, unavailable=True), RecoveryDue(), seen(I2)],
        [[Join(2, recovery_of("N"))], [], [], []],
        None,
        (),
        id="an unavailable rejoin target ends recovery for good",
    ),
    pytest.param(
        (),
        [seen(I1, by_path("N")), joined(1, N1), seen(I1)],
        [[Join(1, by_path("N"))], [], []],
        N1,
        (),
        id="the supervisor's handoff target is rejoined when the daemon is first seen",
    ),
    pytest.param(
        (N1,),
        [seen(I2), connect("c1", by_id("M")), joined(3, M1), joined(2, N2), RecoveryDue()],
        [
            [Join(2, recovery_of("N"))],
            [Join(3, by_id("M"))],
            [answer("c1", M1)],
            [leave(N2)],
            [],
        ],
        M1,
        (),
        id="tool_install_beats_rejoin: connect(M) completes first, the rejoin of N is released "
        "and nothing replaces M",
    ),
    pytest.param(
        (N1,),
        [seen(I2), connect("c1", by_id("M")), joined(2, N2), joined(3, M1), seen(I2)],
        [
            [Join(2, recovery_of("N"))],
            [Join(3, by_id("M"))],
            [leave(N2)],
            [answer("c1", M1)],
            [],
        ],
        M1,
        (),
        id="tool_install_beats_rejoin: a rejoin join that comes back first is released too",
    ),
    pytest.param(
        (N1,),
        [seen(I2), connect("c1", by_id("N")), joined(3, N3), joined(2, N2), RecoveryDue()],
        [
            [Join(2, recovery_of("N"))],
            [Join(3, by_id("N"))],
            [answer("c1", N3)],
            [leave(N2)],
            [],
        ],
        N3,
        (),
        id="tool_install_beats_rejoin: when M is N by id the tool's own join is installed "
        "and the rejoin's is released",
    ),
    pytest.param(
        (N1,),
        [seen(I2), connect("c1", by_path("N")), joined(3, N3), joined(2, N2), seen(I2)],
        [
            [Join(2, recovery_of("N"))],
            [Join(3, by_path("N"))],
            [answer("c1", N3)],
            [leave(N2)],
            [],
        ],
        N3,
        (),
        id="tool_install_beats_rejoin: when M is N by path the tool's own join is installed "
        "and the rejoin's is released",
    ),
    pytest.param(
        (),
        [seen(I1, by_path("N")), connect("c1", by_path("N")), joined(1, N1), RecoveryDue()],
        [[Join(1, by_path("N"))], [], [answer("c1", N1)], []],
        N1,
        (),
        id="tool_install_beats_rejoin: a connect to exactly the handoff target shares the "
        "rejoin's join, so there is only one peer to install",
    ),
]


@pytest.mark.parametrize(("given", "events", "steps", "active", "parked"), STEPS)
def test_each_event_sequence_takes_these_steps_and_ends_with_these_sessions(
    given: tuple[Session, ...],
    events: list[object],
    steps: list[list[Action]],
    active: Session | None,
    parked: tuple[Session, ...],
) -> None:
    state, got = fold(events, installed(*given))
    assert got == steps
    assert state.active == active
    assert state.parked == parked
    assert state.pending is None, "every join in the row came back"
    assert state.stale == (), "every released join was forgotten"


# --- races whose outcome is more than one table row can say ---------------------------------


@pytest.mark.parametrize(
    "notebook_id",
    [
        pytest.param(None, id="disconnect_beats_rejoin: a disconnect without an id"),
        pytest.param("N", id="disconnect_beats_rejoin: a disconnect naming the notebook"),
    ],
)
def test_a_disconnect_during_a_rejoin_wins_over_the_rejoins_late_join(
    notebook_id: str | None,
) -> None:
    state, steps = fold([seen(I2), disconnect("d1", notebook_id), joined(2, N2)], installed(N1))
    assert steps[0] == [Join(2, recovery_of("N"))], "the watch loop's rejoin of N is in flight"
    assert state.active is None, "the slot stays empty"
    assert steps[2] == [leave(N2)], "the rejoin's peer leaves the room"
    assert len(replies_to("d1", steps)) == 1, "the disconnect call gets exactly one reply"
    assert decide(state, RecoveryDue()) == (state, []), "and the rejoin is not tried again"
    assert state.drop == Drop(DropReason.DISCONNECTED, "N", path_of("N"))
    assert "(disconnected)" in no_session_message(state.drop)


def test_two_shared_callers_get_one_and_the_same_full_result() -> None:
    state = SessionState()
    state, _ = decide(state, connect("c1", by_id("A")))
    state, _ = decide(state, connect("c2", by_id("A")))
    state, actions = decide(state, JoinSucceeded(1, A1, DETAILS))
    first, second = actions
    assert (first.call_id, second.call_id) == ("c1", "c2")
    assert (
        first.result
        == second.result
        == {
            "notebook_id": "A",
            "path": path_of("A"),
            "cell_count": 3,
            "kernel_status": "idle",
            "ephemeral": False,
            "runtime": "python",
            "resumed": False,
        }
    )


def test_a_session_joined_before_the_first_incarnation_report_survives_that_report() -> None:
    """SPEC §7.4 removes handles bound to none only after the daemon's absence is confirmed.

    The first report of a live daemon is no such proof: the session was joined on it.
    """
    early = peer("A", 1, incarnation=None)
    state, steps = fold([seen(I1)], installed(early))
    assert steps == [[]], "no rejoin and no leave: nothing was lost"
    assert state.active is not None
    assert state.active.peer_id == early.peer_id


# --- LRU eviction of parked sessions ---------------------------------------------------------


def visit_all(notebook_ids: list[str]) -> tuple[SessionState, list[Leave]]:
    """Connect to each notebook in turn; the k-th visit joins with peer ``<id>#<k>``."""
    state, leaves = SessionState(), []
    for k, notebook_id in enumerate(notebook_ids, start=1):
        session = Session(notebook_id, path_of(notebook_id), f"{notebook_id}#{k}", I1)
        state, _ = decide(state, connect(f"c{k}", by_id(notebook_id)))
        state, actions = decide(state, joined(k, session))
        leaves += [a for a in actions if isinstance(a, Leave)]
    return state, leaves


NINE = [f"N{i}" for i in range(9)]


@pytest.mark.parametrize(
    ("visits", "left", "parked", "active"),
    [
        pytest.param(
            NINE,
            [],
            NINE[:8],
            "N8",
            id="eight parked sessions fit without an eviction",
        ),
        pytest.param(
            [*NINE, "N9"],
            ["N0#1"],
            NINE[1:],
            "N9",
            id="a ninth parked session evicts the least recently active one",
        ),
        pytest.param(
            [*NINE, "N0", "N9"],
            ["N0#1", "N1#2"],
            ["N2", "N3", "N4", "N5", "N6", "N7", "N8", "N0"],
            "N9",
            id="a resumed notebook becomes the most recently active, so the next eviction "
            "takes the one after it",
        ),
        pytest.param(
            [f"N{i}" for i in range(12)],
            ["N0#1", "N1#2", "N2#3"],
            [f"N{i}" for i in range(3, 11)],
            "N11",
            id="twelve notebooks evict the three oldest, oldest first",
        ),
    ],
)
def test_parked_sessions_are_evicted_least_recently_active_first(
    visits: list[str], left: list[str], parked: list[str], active: str
) -> None:
    state, leaves = visit_all(visits)
    assert [leave.peer_id for leave in leaves] == left
    assert [s.notebook_id for s in state.parked] == parked
    assert len(state.parked) <= MAX_PARKED
    assert state.active is not None
    assert state.active.notebook_id == active


# --- drop info and the no-session message -----------------------------------------------------


@pytest.mark.parametrize(
    ("given", "events", "drop"),
    [
        pytest.param((), [], None, id="with nothing done there is no drop"),
        pytest.param(
            (A1,),
            [disconnect("c1")],
            Drop(DropReason.DISCONNECTED, "A", path_of("A")),
            id="disconnecting the active notebook records disconnected with its id and path",
        ),
        pytest.param(
            (A1, B1),
            [disconnect("c1", "A")],
            None,
            id="disconnecting a parked notebook records no drop",
        ),
        pytest.param((A1, B1), [], None, id="switching records no drop"),
        pytest.param(
            (A1,),
            [disconnect("c1"), connect("c2", by_id("B")), joined(2, B1)],
            None,
            id="a new install clears the drop",
        ),
        pytest.param(
            (N1,),
            [seen(I2), failed(2, unavailable=True)],
            Drop(DropReason.EVICTED, "N", path_of("N")),
            id="a rejoin target that is no longer available records evicted",
        ),
        pytest.param(
            (N1,),
            [seen(I2), failed(2)],
            None,
            id="a transient rejoin failure records no drop, as the rejoin goes on",
        ),
        pytest.param(
            (A1, B1),
            [connect("c1", by_id("C")), failed(3)],
            None,
            id="a failed tool connect records no drop",
        ),
    ],
)
def test_drop_info_says_why_the_session_is_gone(
    given: tuple[Session, ...], events: list[object], drop: Drop | None
) -> None:
    state, _ = fold(events, installed(*given))
    assert state.drop == drop


def test_a_handoff_path_that_is_gone_never_suggests_a_made_up_notebook_id() -> None:
    state, _ = fold([seen(I1, by_path("N")), failed(1, unavailable=True)])
    message = no_session_message(state.drop)
    assert path_of("N") in message
    assert 'notebook_id="unknown"' not in message


@pytest.mark.parametrize(
    ("drop", "message"),
    [
        pytest.param(
            None,
            "No active notebook session. Call connect_notebook or create_notebook first.",
            id="with no drop it says to connect or create",
        ),
        pytest.param(
            Drop(DropReason.DISCONNECTED, "A", "/work/A.ipynb"),
            "No active notebook session (disconnected). "
            'Reconnect with: connect_notebook(notebook_id="A") — file: /work/A.ipynb',
            id="a disconnected notebook with a file gives the reason, the hint and the file",
        ),
        pytest.param(
            Drop(DropReason.DISCONNECTED, "A", None),
            "No active notebook session (disconnected). "
            'Reconnect with: connect_notebook(notebook_id="A")',
            id="a disconnected notebook without a file ends with the hint",
        ),
        pytest.param(
            Drop(DropReason.EVICTED, "A", "/work/A.ipynb"),
            "No active notebook session (notebook is no longer available). "
            'Reconnect with: connect_notebook(notebook_id="A") — file: /work/A.ipynb',
            id="an evicted notebook says it is no longer available",
        ),
        pytest.param(
            Drop(DropReason.SWITCHED, "A", None),
            "No active notebook session (switched to another notebook). "
            'Reconnect with: connect_notebook(notebook_id="A")',
            id="a switched-away notebook says so",
        ),
    ],
)
def test_the_no_session_message_is_exactly_this(drop: Drop | None, message: str) -> None:
    assert no_session_message(drop) == message
