"""The console's views of the daemon itself: its status, its clients, its log and the
kernels' environments."""

from __future__ import annotations

import textwrap
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from nbstage.entrypoints.admin.daemon_access import Admin, Outcome
from nbstage.entrypoints.admin.text_layout import (
    Column,
    duration,
    key_values,
    pid_text,
    short_id,
    table,
)
from nbstage.protocol.daemon.replies import ClientsListed, DaemonStatus, LogTail
from nbstage.protocol.daemon.requests import GetLog, GetStatus, ListClients

DEFAULT_LOG_LINES = 20
LOG_INDENT = "    "


def run_status(admin: Admin, args: list[str]) -> Outcome:
    status = admin.call(GetStatus(), DaemonStatus)
    up = duration(time.time() - status.started_at) if status.started_at else "?"
    pairs = [
        ("daemon", f"nbstage {status.version}, pid {status.pid}, up {up}", "head"),
        ("socket", status.socket, "tail"),
        ("state dir", status.state_dir, "tail"),
        ("rooms", str(status.rooms), "head"),
        ("kernels", str(status.kernels), "head"),
    ]
    return Outcome.of(status, key_values(pairs, admin.width))


def run_clients(admin: Admin, args: list[str]) -> Outcome:
    answer = admin.call(ListClients(), ClientsListed)
    columns = [
        Column("LABEL", keep="head", min_width=8),
        Column("OPERATOR", keep="head", min_width=12),
        Column("SUP PID", right=True),
        Column("SM PID", right=True),
        Column("RESTARTS", right=True),
        Column("ACTIVE"),
        Column("PARKED", keep="head", min_width=8),
    ]
    rows = [
        [
            client.get("label") or "-",
            client.get("operator_id") or "-",
            pid_text(client.get("supervisor_pid")),
            pid_text(client.get("session_manager_pid")),
            client.get("restarts", 0),
            short_id(client.get("active")),
            ",".join(short_id(nid) for nid in client.get("parked") or []) or "-",
        ]
        for client in answer.clients
    ]
    return Outcome.listing(
        answer, columns, rows, admin.width, "No nbstage mcp clients are connected."
    )


def log_entry_lines(entry: dict[str, Any], width: int) -> list[str]:
    """One log entry as a person reads it, continuation lines indented, wrapped to ``width``."""
    ts = entry.get("ts")
    stamp = datetime.fromtimestamp(ts).strftime("%H:%M:%S") if ts is not None else "--:--:--"
    source = f"{entry.get('logger', '?')}[{entry.get('pid', '?')}]"
    text = str(entry.get("msg", ""))
    if entry.get("exc"):
        text += "\n" + str(entry["exc"])
    first, *rest = text.splitlines() or [""]
    head = f"{stamp} {entry.get('level', '?'):<7} {source} {first}"
    wrapper = textwrap.TextWrapper(width, subsequent_indent=LOG_INDENT, break_on_hyphens=False)
    lines = wrapper.wrap(head) or [head.rstrip()]
    wrapper.initial_indent = LOG_INDENT
    for more in rest:
        lines += wrapper.wrap(more) or [""]
    return lines


def run_log(admin: Admin, args: list[str]) -> Outcome:
    count = int(args[0]) if args else DEFAULT_LOG_LINES
    answer = admin.call(GetLog(count), LogTail)
    lines = [line for entry in answer.lines for line in log_entry_lines(entry, admin.width)]
    return Outcome.of(answer, "\n".join(lines) if lines else "The daemon's log is empty.")


def run_envs(admin: Admin, args: list[str]) -> Outcome:
    from nbstage.actors.daemon.environment.environments import describe_envs

    status = admin.call_if_running(GetStatus(), DaemonStatus)
    # With no daemon, this process's own setting.
    root = Path(status.envs_dir) if status is not None else None
    envs = describe_envs(admin.paths.root, root)
    if not envs:
        return Outcome({"envs": envs}, "No kernel environments yet: the first kernel makes them.")
    columns = [
        Column("KIND"),
        Column("SIZE", right=True),
        Column("USED"),
        Column("PATH", keep="tail", min_width=12),
    ]
    rows = [
        [
            env["kind"],
            f"{env['bytes'] / 2**20:.1f} MB",
            datetime.fromtimestamp(env["last_used"]).strftime("%Y-%m-%d %H:%M"),
            env["path"],
        ]
        for env in envs
    ]
    return Outcome({"envs": envs}, table(columns, rows, admin.width))
