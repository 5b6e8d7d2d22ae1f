"""When a room's kernel starts and when it is torn down, as pure decisions.

The rules (SPEC §5 "Lifetime"): when the last peer leaves, teardown is scheduled
after keep-alive; a join inside the window cancels it. At fire time teardown
re-checks the peer count and the connection generation. Once it begins, the
kernel is doomed: it is detached at once, so any later join starts a fresh one.
"""

from __future__ import annotations

from dataclasses import replace

from nbstage.protocol.common.frozen import frozen


@frozen
class Lifetime:
    has_runtime: bool
    peers: int = 0
    generation: int = 0
    """Bumped by every join, so a teardown timer armed before it is stale."""
    kernel_attached: bool = False


@frozen
class StartFreshKernel:
    pass


@frozen
class ScheduleTeardown:
    generation: int


@frozen
class BeginTeardown:
    """Detach the kernel now (the latch) and stop it; it is never handed out again."""


Action = StartFreshKernel | ScheduleTeardown | BeginTeardown


def peer_joined(state: Lifetime) -> tuple[Lifetime, list[Action]]:
    joined = replace(state, peers=state.peers + 1, generation=state.generation + 1)
    if state.has_runtime and not state.kernel_attached:
        return replace(joined, kernel_attached=True), [StartFreshKernel()]
    return joined, []


def peer_left(state: Lifetime) -> tuple[Lifetime, list[Action]]:
    left = replace(state, peers=max(0, state.peers - 1))
    if left.peers == 0 and left.kernel_attached:
        return left, [ScheduleTeardown(left.generation)]
    return left, []


def keep_alive_expired(
    state: Lifetime, generation: int, busy: bool = False
) -> tuple[Lifetime, list[Action]]:
    """Teardown time: only if nobody rejoined since, and no cell is queued or running."""
    if state.peers > 0 or generation != state.generation or not state.kernel_attached:
        return state, []
    if busy:
        return state, [ScheduleTeardown(generation)]
    return replace(state, kernel_attached=False), [BeginTeardown()]


def kernel_wanted(state: Lifetime) -> tuple[Lifetime, list[Action]]:
    """Something needs a kernel now (an execute after teardown, a restart of a dead one).

    With no peers the fresh kernel gets the same keep-alive as one whose last peer left.
    """
    if not state.has_runtime or state.kernel_attached:
        return state, []
    attached = replace(state, kernel_attached=True)
    actions: list[Action] = [StartFreshKernel()]
    if state.peers == 0:
        actions.append(ScheduleTeardown(state.generation))
    return attached, actions


def kernel_released(state: Lifetime) -> Lifetime:
    """The kernel went away by other means (shut down by the operator, failed to start)."""
    return replace(state, kernel_attached=False)
