"""The console's commands that change something in the daemon: evicting a room,
restarting or stopping its kernel, running the reaper, removing unused environments."""

from __future__ import annotations

import textwrap

from nbstage.entrypoints.admin.daemon_access import Admin, Outcome
from nbstage.entrypoints.admin.room_views import kept_text
from nbstage.entrypoints.admin.text_layout import fit_message, pid_text
from nbstage.protocol.common.words import plural
from nbstage.protocol.daemon.replies import (
    EnvironmentsCollected,
    KernelShutDown,
    RestartCompleted,
    RoomEvicted,
    RoomsReaped,
)
from nbstage.protocol.daemon.requests import (
    CollectEnvironments,
    EvictRoom,
    RestartKernel,
    RunReaper,
    ShutdownKernelNow,
)

SECS_PER_DAY = 86400.0


def run_evict(admin: Admin, args: list[str]) -> Outcome:
    room = admin.resolve(args[0])
    answer = admin.call(EvictRoom(room.notebook_id), RoomEvicted)
    saved = "saved" if answer.saved else "not saved"
    what = "ephemeral, discarded" if room.ephemeral else saved
    return Outcome.of(answer, f"evicted {room.notebook_id} ({what})")


def run_restart_kernel(admin: Admin, args: list[str]) -> Outcome:
    notebook_id = admin.resolve(args[0]).notebook_id
    answer = admin.call(RestartKernel(notebook_id), RestartCompleted)
    return Outcome.of(answer, f"restarted kernel of {notebook_id}: new pid {answer.kernel_pid}")


def run_shutdown_kernel(admin: Admin, args: list[str]) -> Outcome:
    notebook_id = admin.resolve(args[0]).notebook_id
    answer = admin.call(ShutdownKernelNow(notebook_id), KernelShutDown)
    return Outcome.of(
        answer, f"stopped kernel of {notebook_id} (pid {pid_text(answer.kernel_pid)})"
    )


def run_reap(admin: Admin, args: list[str]) -> Outcome:
    answer = admin.call(RunReaper(), RoomsReaped)
    reaped, kept = answer.reaped, answer.kept
    if not reaped and not kept:
        return Outcome.of(answer, "reaped no rooms: none is idle past the reaper's limits")
    if reaped:
        text = f"reaped {plural(len(reaped), 'room')}: {', '.join(reaped)}"
        lines = [fit_message(text, admin.width)]
    else:
        lines = ["reaped no rooms"]
    if kept:
        head = f"kept {plural(len(kept), 'room')}, because saving before removal failed:"
        lines.append(fit_message(head, admin.width))
    for room in kept:
        text = f"{room.notebook_id}: {kept_text(room)}"
        wrapped = textwrap.fill(
            text,
            admin.width,
            initial_indent="  ",
            subsequent_indent="    ",
            break_on_hyphens=False,
        )
        lines.append(wrapped)
    return Outcome.of(answer, "\n".join(lines))


def run_gc_envs(admin: Admin, args: list[str]) -> Outcome:
    days = int(args[0]) if args else 0
    answer = admin.call(CollectEnvironments(days * SECS_PER_DAY), EnvironmentsCollected)
    removed, kept = answer.removed, answer.kept
    unused = f"unused for {plural(days, 'day')}" if days else "unused"
    text = (
        f"removed {plural(len(removed), 'environment')} {unused}"
        + (f": {', '.join(removed)}" if removed else "")
        + (f"; kept {plural(len(kept), 'in use')}: {', '.join(kept)}" if kept else "")
    )
    return Outcome.of(answer, fit_message(text, admin.width))
