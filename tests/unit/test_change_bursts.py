"""When a subscribed notebook's changes are announced (actors/session/change_bursts.py):
the debounce decision as tables."""

from __future__ import annotations

import pytest

from nbstage.actors.session.change_bursts import MAX_BURST, QUIET, Arm, Burst, changed, due


def test_the_first_change_arms_a_timer_and_later_ones_only_move_the_last_change() -> None:
    burst, arm = changed(None, 10.0, 1)
    assert (burst, arm) == (Burst(10.0, 10.0, 1), Arm(QUIET, 1))
    burst, arm = changed(burst, 10.1, 2)
    assert (burst, arm) == (Burst(10.0, 10.1, 1), None)


DUE = [
    # (burst, token due, now) -> (burst after, announce, arm next)
    (None, 1, 5.0, None, False, None),
    (Burst(0.0, 0.0, 1), 2, 5.0, Burst(0.0, 0.0, 1), False, None),
    (Burst(0.0, 0.0, 1), 1, QUIET, None, True, None),
    (Burst(0.0, 0.1, 1), 1, QUIET, Burst(0.0, 0.1, 9), False, Arm(0.1, 9)),
    (Burst(0.0, 0.95, 1), 1, 0.99, Burst(0.0, 0.95, 9), False, Arm(0.01, 9)),
    (Burst(0.0, 0.99, 1), 1, MAX_BURST, None, True, None),
]


@pytest.mark.parametrize(("burst", "token", "now", "after", "announce", "arm"), DUE)
def test_a_due_timer_announces_a_quiet_or_long_burst_and_ignores_stale_tokens(
    burst: Burst | None,
    token: int,
    now: float,
    after: Burst | None,
    announce: bool,
    arm: Arm | None,
) -> None:
    got_after, got_announce, got_arm = due(burst, token, now, 9)
    assert (got_after, got_announce) == (after, announce)
    if arm is None:
        assert got_arm is None
    else:
        assert got_arm is not None
        assert got_arm.token == arm.token
        assert got_arm.after == pytest.approx(arm.after)


def test_a_thousand_changes_in_a_second_are_announced_at_most_twice() -> None:
    """Changes every millisecond for a second, the timers firing as armed."""
    burst, timer, token, announced = None, None, 0, 0
    for ms in range(0, 2000):
        now = ms / 1000
        if timer is not None and now >= timer[0]:
            token += 1
            burst, announce, arm = due(burst, timer[1], now, token)
            announced += announce
            timer = (now + arm.after, arm.token) if arm else None
        if ms < 1000:
            token += 1
            burst, arm = changed(burst, now, token)
            if arm is not None:
                timer = (now + arm.after, arm.token)
    assert burst is None
    assert 1 <= announced <= 2
