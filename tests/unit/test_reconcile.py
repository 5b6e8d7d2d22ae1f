"""The watch loop's reconcile step as a table (SPEC §7, the S/W races of §14)."""

from __future__ import annotations

import pytest

from nbstage.actors.session.reconcile import (
    FIRST_RETRY,
    DaemonAbsent,
    DeliveryLagged,
    Handoff,
    HeartbeatSeen,
    Identity,
    IncarnationChanged,
    LinkClosed,
    QueryFailed,
    QueryIdentity,
    Reconnect,
    WatchState,
    against_baseline,
    reconcile,
)

I1 = Identity(100, 1.0, "1.0")
I1_AGAIN = Identity(100, 1.0, "1.0")
I2 = Identity(200, 2.0, "1.0")
UPGRADED = Identity(300, 3.0, "2.0")
LIVE_I1 = WatchState(baseline_version="1.0", live=I1, last_known=I1)


def run(state: WatchState, *events: object) -> tuple[WatchState, list[object]]:
    actions: list[object] = []
    for event in events:
        state, step = reconcile(state, event)
        actions += step
    return state, actions


@pytest.mark.parametrize(
    ("start", "events", "expected"),
    [
        pytest.param(
            LIVE_I1,
            [HeartbeatSeen(I1_AGAIN)],
            [],
            id="a same-incarnation heartbeat changes nothing",
        ),
        pytest.param(
            WatchState(),
            [HeartbeatSeen(I1)],
            [IncarnationChanged(I1)],
            id="the first heartbeat binds the first incarnation",
        ),
        pytest.param(
            LIVE_I1,
            [QueryFailed()],
            [Reconnect(FIRST_RETRY)],
            id="a failed query defers and keeps the handles",
        ),
        pytest.param(
            LIVE_I1,
            [QueryFailed(), HeartbeatSeen(I1_AGAIN)],
            [Reconnect(FIRST_RETRY)],
            id="failed_query_is_not_loss: the next success showing I1 changes nothing",
        ),
        pytest.param(
            LIVE_I1,
            [HeartbeatSeen(UPGRADED)],
            [Handoff("1.0", "2.0")],
            id="a version change hands off",
        ),
        pytest.param(
            LIVE_I1,
            [LinkClosed(), HeartbeatSeen(UPGRADED), HeartbeatSeen(UPGRADED)],
            [DaemonAbsent(), Reconnect(FIRST_RETRY), Handoff("1.0", "2.0")],
            id="an upgrade across a restart hands off once",
        ),
        pytest.param(
            WatchState(),
            [QueryFailed(), HeartbeatSeen(UPGRADED)],
            [Reconnect(FIRST_RETRY), IncarnationChanged(UPGRADED)],
            id="with no daemon at start the first live version becomes the baseline",
        ),
        pytest.param(
            LIVE_I1,
            [HeartbeatSeen(I2)],
            [IncarnationChanged(I2)],
            id="restart_without_disconnect_event: a new incarnation invalidates the old one",
        ),
        pytest.param(
            LIVE_I1,
            [LinkClosed(), HeartbeatSeen(I2)],
            [DaemonAbsent(), Reconnect(FIRST_RETRY), IncarnationChanged(I2)],
            id="a closed socket confirms absence, then the new incarnation is reported",
        ),
        pytest.param(
            LIVE_I1,
            [LinkClosed(), LinkClosed()],
            [DaemonAbsent(), Reconnect(FIRST_RETRY), Reconnect(FIRST_RETRY)],
            id="absence is reported once",
        ),
        pytest.param(LIVE_I1, [DeliveryLagged()], [QueryIdentity()], id="lagged delivery queries"),
    ],
)
def test_reconcile_decides_from_the_identity_stream(
    start: WatchState, events: list[object], expected: list[object]
) -> None:
    assert run(start, *events)[1] == expected


def test_failed_queries_back_off_and_a_heartbeat_resets_the_pace() -> None:
    state, actions = run(WatchState(), QueryFailed(), QueryFailed(), QueryFailed())
    assert [a.after for a in actions] == [FIRST_RETRY, FIRST_RETRY * 2, FIRST_RETRY * 4]
    state, _ = run(state, HeartbeatSeen(I1))
    assert run(state, QueryFailed())[1] == [Reconnect(FIRST_RETRY)]


@pytest.mark.parametrize(
    ("baseline", "version", "expected"),
    [
        pytest.param(None, "1.0", ("1.0", None), id="the first live version becomes the baseline"),
        pytest.param("1.0", "1.0", ("1.0", None), id="the same version changes nothing"),
        pytest.param(
            "1.0",
            "2.0",
            ("1.0", Handoff("1.0", "2.0")),
            id="a late first sight of an upgraded daemon still hands off against the baseline",
        ),
    ],
)
def test_versions_are_judged_against_the_baseline(baseline, version, expected) -> None:
    assert against_baseline(baseline, version) == expected


def test_absence_keeps_the_baseline_for_the_next_version_check() -> None:
    state, _ = run(LIVE_I1, LinkClosed())
    assert state.live is None
    assert state.baseline_version == "1.0"
