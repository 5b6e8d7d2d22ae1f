"""The ProxySupervisor's handling of a session child that goes away: a crash (the calls in
flight requeued once, the restart planned as restart_policy.py decides, maybe behind an
open circuit), a handoff to an upgraded daemon, and the reconnect tool's fresh child.
These are the supervisor's handlers for it; they act through the supervisor, which owns
the child's slot (child_slot.py) and the restart state."""

from __future__ import annotations

import logging
import time
from datetime import timedelta
from typing import Any

from nbstage.actors.proxy import restart_notices, restart_policy
from nbstage.actors.proxy.tool_calls import PendingCall, requeue
from nbstage.protocol.daemon.notices import Notice
from nbstage.protocol.mcp.tool_results import tool_error, tool_result
from nbstage.protocol.session.supervision import (
    HANDOFF_EXIT_CODE,
    ChildProcessDied,
    HandoffRequested,
)
from nbstage.protocol.session.supervisor_followups import RestartDue

log = logging.getLogger("nbstage.supervisor")


def child_died(sup: Any, msg: ChildProcessDied, sender: Any) -> None:
    if msg.generation != sup.slot.live:
        return
    if msg.exit_code == HANDOFF_EXIT_CODE:
        hand_off(sup, restart_notices.HANDED_OFF)
    else:
        child_lost(sup, msg.generation, f"process {msg.pid} exited ({msg.exit_code})")


def child_lost(sup: Any, generation: int, why: str) -> None:
    if generation != sup.slot.generation or sup.slot.live is None:
        return
    log.warning("session manager generation %d lost: %s", generation, why)
    was_serving = sup.slot.ready
    sup.slot.live = None
    sup.slot.ready = False
    requeue_or_fail_calls(sup)
    sup.restart, decision = restart_policy.child_crashed(sup.restart, time.monotonic())
    if was_serving and isinstance(decision, restart_policy.RestartAfter):
        # The successor's process starts now and waits out the backoff unconfigured, so
        # Python's start-up overlaps the backoff. A child that never served waits first.
        sup._start_child(configure=False)
        sup.slot.warming = True
    plan_restart(sup, decision, restart_notices.RESTARTED)


def requeue_or_fail_calls(sup: Any) -> None:
    sup.resources.child_lost()
    for call_id in requeue(sup.calls):
        call = sup.calls.pop(call_id)
        sup._reply(call, tool_error(restart_notices.CRASHED_TWICE))


def plan_restart(
    sup: Any,
    decision: restart_policy.Decision,
    banner: Notice,
    when_rejoining: Notice | None = None,
) -> None:
    sup.banner = restart_notices.banner(banner, when_rejoining, bool(sup.target.value))
    match decision:
        case restart_policy.RestartAfter(delay):
            sup.wakeupAfter(timedelta(seconds=delay), payload=RestartDue(sup.slot.generation))
        case restart_policy.OpenCircuit(until):
            for call_id, call in list(sup.calls.items()):
                del sup.calls[call_id]
                sup._reply(call, tool_error(circuit_message(sup)))
            delay = max(0.0, until - time.monotonic())
            sup.wakeupAfter(timedelta(seconds=delay), payload=RestartDue(sup.slot.generation))


def circuit_message(sup: Any) -> str:
    return restart_notices.circuit_message(sup.restart, time.monotonic())


def handoff_requested(sup: Any, msg: HandoffRequested) -> None:
    upgraded = restart_notices.daemon_upgraded(msg.from_version, msg.to_version)
    hand_off(sup, upgraded, restart_notices.KERNEL_RENEWED_BY_UPGRADE)


def hand_off(sup: Any, banner: Notice, when_rejoining: Notice | None = None) -> None:
    sup._stop_child()
    sup.slot.ready = False
    requeue_or_fail_calls(sup)
    sup.restart, decision = restart_policy.handoff(sup.restart)
    plan_restart(sup, decision, banner, when_rejoining)


def reconnect(sup: Any, call: PendingCall) -> None:
    sup._stop_child()
    sup.slot.ready = False
    requeue_or_fail_calls(sup)
    sup.restart, _ = restart_policy.reconnect(sup.restart)
    sup._start_child()
    structured = {"restarted": True, "restarts": sup.restart.restarts}
    sup._reply(call, tool_result(structured, text="Session server restarted."))


def restart_due(sup: Any, due: RestartDue) -> None:
    if sup.stopped or due.generation != sup.slot.generation:
        return
    if sup.slot.live is None:
        sup._start_child()
    elif not sup.slot.configured:
        sup.slot.warming = False
        sup._configure_child()
