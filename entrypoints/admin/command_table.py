"""The console's commands by name: their arguments, their one-line help, and running one
command line against them."""

from __future__ import annotations

import difflib
import textwrap
from collections.abc import Callable, Sequence

from nbstage.entrypoints.admin.daemon_access import EXIT_USAGE, Admin, AdminError, Outcome
from nbstage.entrypoints.admin.daemon_views import (
    DEFAULT_LOG_LINES,
    run_clients,
    run_envs,
    run_log,
    run_status,
)
from nbstage.entrypoints.admin.host_views import run_hosts
from nbstage.entrypoints.admin.interventions import (
    run_evict,
    run_gc_envs,
    run_reap,
    run_restart_kernel,
    run_shutdown_kernel,
)
from nbstage.entrypoints.admin.room_views import (
    run_kernels,
    run_peers,
    run_room,
    run_rooms,
    run_tree,
)
from nbstage.entrypoints.admin.text_layout import GAP
from nbstage.protocol.common.frozen import frozen


@frozen
class Command:
    name: str
    args: str
    """Shown in help and checked: "", "ID" (a notebook id or prefix), "[N]", "[DAYS]" or
    "[COMMAND]"."""
    summary: str
    run: Callable[[Admin, list[str]], Outcome]


def execute(admin: Admin, argv: Sequence[str]) -> Outcome:
    """Run one command line (its first word the command); AdminError if it cannot be."""
    name, args = argv[0], list(argv[1:])
    command = COMMANDS.get(ALIASES.get(name, name))
    if command is None:
        raise AdminError(unknown_command(name), EXIT_USAGE)
    check_arguments(command, args)
    return command.run(admin, args)


def unknown_command(name: str) -> str:
    names = [command.name for command in COMMANDS.values()]
    close = difflib.get_close_matches(name, names, n=1)
    guess = f" (did you mean {close[0]}?)" if close else ""
    return f"Unknown command {name!r}{guess}. Commands: {', '.join(names)}."


def check_arguments(command: Command, args: list[str]) -> None:
    usage = f"{command.name} {command.args}".rstrip()
    if command.args == "ID":
        ok = len(args) == 1
    elif command.args == "[N]":
        ok = len(args) == 0 or (len(args) == 1 and args[0].isdigit() and int(args[0]) > 0)
    elif command.args == "[DAYS]":
        ok = len(args) == 0 or (len(args) == 1 and args[0].isdigit())
    elif command.args == "[COMMAND]":
        ok = len(args) <= 1
    else:
        ok = not args
    if not ok:
        raise AdminError(f"Usage: {usage}", EXIT_USAGE)


def run_help(admin: Admin, args: list[str]) -> Outcome:
    if args:
        command = COMMANDS.get(ALIASES.get(args[0], args[0]))
        if command is None:
            raise AdminError(unknown_command(args[0]), EXIT_USAGE)
        chosen = [command]
    else:
        chosen = list(COMMANDS.values())
    usages = {c.name: f"{c.name} {c.args}".rstrip() for c in chosen}
    pad = max(len(usage) for usage in usages.values()) + len(GAP)
    lines = [] if args else ["Commands (ID: a notebook id, or any unique prefix of one):"]
    lines += [
        textwrap.fill(
            f"  {usages[c.name].ljust(pad)}{c.summary}",
            admin.width,
            subsequent_indent=" " * (pad + 2),
            break_on_hyphens=False,
        )
        for c in chosen
    ]
    data = {"commands": [{"usage": usages[c.name], "summary": c.summary} for c in chosen]}
    return Outcome(data, "\n".join(lines))


def run_quit(admin: Admin, args: list[str]) -> Outcome:
    return Outcome({}, "")


COMMANDS: dict[str, Command] = {
    command.name: command
    for command in (
        Command("status", "", "the daemon's identity, uptime, socket and counts", run_status),
        Command("rooms", "", "every resident room: path, peers, kernel and pids", run_rooms),
        Command("room", "ID", "one room: peers, kernel, executions, latch, keep-alive", run_room),
        Command("peers", "", "every peer in every room, with its label", run_peers),
        Command("kernels", "", "every kernel: status, kernel, actor and room pids", run_kernels),
        Command("hosts", "", "every kernel host: health, kernels/limit, last error", run_hosts),
        Command("tree", "", "the live actor tree, each actor's address and pid", run_tree),
        Command("clients", "", "every connected nbstage mcp and its notebooks", run_clients),
        Command("evict", "ID", "save or flush a room, stop its kernel, remove it", run_evict),
        Command("restart-kernel", "ID", "restart a room's kernel", run_restart_kernel),
        Command(
            "shutdown-kernel", "ID", "stop a room's kernel; the room stays", run_shutdown_kernel
        ),
        Command("reap", "", "run the ghost-room reaper now", run_reap),
        Command("envs", "", "the kernels' environments, their sizes and last use", run_envs),
        Command(
            "gc-envs", "[DAYS]", "remove inline environments no room uses (idle DAYS)", run_gc_envs
        ),
        Command("log", "[N]", f"the daemon's newest N log lines ({DEFAULT_LOG_LINES})", run_log),
        Command("help", "[COMMAND]", "this list, or one command's usage", run_help),
        Command("quit", "", "leave the console (also exit, or Ctrl-D)", run_quit),
    )
}
ALIASES = {"exit": "quit", "?": "help"}
ID_COMMANDS = frozenset(name for name, command in COMMANDS.items() if command.args == "ID")
