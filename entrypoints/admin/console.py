"""The operator's console (SPEC §10): ``nbstage admin``, interactive or one command at a time.

Every command asks the daemon over its socket, on a fresh connection, at the moment it
runs; the console keeps no copy of the daemon's state. Human output is sized to the
terminal (80 columns when there is none): notebook ids shrink to their first eight
characters, which are also accepted wherever a command takes an ID, and paths keep
their tail. ``--json`` prints the daemon's answer instead.

Exit codes of a one-shot command: 0 done, 1 the daemon is not running or refused,
2 the command line itself was wrong.
"""

from __future__ import annotations

import cmd
import contextlib
import difflib
import shlex
import shutil
import sys
import textwrap
import time
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

from nbstage.entrypoints.admin.terminal_text import json_for_terminal, visible, visible_lines
from nbstage.entrypoints.common.ownership import Untrusted
from nbstage.entrypoints.common.statedir import StatePaths, state_paths
from nbstage.entrypoints.control.daemon_client import DaemonClient, DaemonError, DaemonNotRunning
from nbstage.protocol.common.frozen import frozen
from nbstage.protocol.common.words import plural

try:
    import readline
except ImportError:
    readline = None

PROMPT = "nbstage> "
HISTORY_FILE = "admin_history"
HISTORY_LENGTH = 1000
ID_WIDTH = 8
DEFAULT_LOG_LINES = 20
MIN_WIDTH = 40
GAP = "  "
ELLIPSIS = "..."
REQUEST_TIMEOUT_SECS = 120.0
"""Evicting waits for a save and a kernel stop; anything slower than this is a hung daemon."""

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2


class AdminError(Exception):
    """A command that could not be carried out; ``message`` is the one line a person sees."""

    def __init__(self, message: str, exit_code: int = EXIT_FAILED) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code


@frozen
class Outcome:
    data: Any
    """What ``--json`` prints: the daemon's answer, or for derived views the rows shown."""
    text: str
    """What a person reads, fitted to the width the command was given."""


# --- fitting text to a width --------------------------------------------------------------


def short_id(notebook_id: str | None) -> str:
    return "-" if not notebook_id else notebook_id[:ID_WIDTH]


def clip(text: str, width: int, keep: str = "head") -> str:
    """``text`` cut to ``width`` columns, marking the cut; ``keep="tail"`` keeps the end."""
    if len(text) <= width:
        return text
    if width <= len(ELLIPSIS):
        return text[:width] if keep == "head" else text[len(text) - width :]
    room = width - len(ELLIPSIS)
    return text[:room] + ELLIPSIS if keep == "head" else ELLIPSIS + text[len(text) - room :]


@frozen
class Column:
    header: str
    keep: str | None = None
    """How the column shrinks when the table is too wide: "head", "tail", or never (None)."""
    right: bool = False
    min_width: int = 6


def table(columns: Sequence[Column], rows: Sequence[Sequence[Any]], width: int) -> str:
    """Rows under their headers, each column as wide as it needs, shrunk to fit ``width``."""
    cells = [["-" if value is None else visible(str(value)) for value in row] for row in rows]
    widths = [
        max([len(col.header), *(len(row[i]) for row in cells)]) for i, col in enumerate(columns)
    ]
    excess = sum(widths) + len(GAP) * (len(columns) - 1) - width
    while excess > 0:
        shrinkable = [
            i
            for i, col in enumerate(columns)
            if col.keep is not None and widths[i] > max(col.min_width, len(col.header))
        ]
        if not shrinkable:
            break
        widest = max(shrinkable, key=lambda i: widths[i])
        widths[widest] -= 1
        excess -= 1

    def line(values: Sequence[str]) -> str:
        parts = []
        for col, w, value in zip(columns, widths, values, strict=True):
            value = clip(value, w, col.keep or "head")
            parts.append(value.rjust(w) if col.right else value.ljust(w))
        return GAP.join(parts).rstrip()

    return "\n".join([line([col.header for col in columns]), *(line(row) for row in cells)])


def key_values(pairs: Sequence[tuple[str, str, str]], width: int) -> str:
    """``key  value`` lines with the keys aligned; each value clipped as its third item says."""
    key_width = max(len(key) for key, _, _ in pairs)
    room = max(width - key_width - len(GAP), 8)
    return "\n".join(
        f"{key.ljust(key_width)}{GAP}{clip(visible(value), room, keep)}".rstrip()
        for key, value, keep in pairs
    )


def duration(secs: float) -> str:
    secs = max(int(secs), 0)
    days, rest = divmod(secs, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, seconds = divmod(rest, 60)
    if days:
        return f"{days}d {hours}h"
    if hours:
        return f"{hours}h {minutes:02d}m"
    if minutes:
        return f"{minutes}m {seconds:02d}s"
    return f"{seconds}s"


def where(room: dict[str, Any]) -> str:
    if room.get("path"):
        return room["path"]
    return "(ephemeral)" if room.get("ephemeral") else "(untitled)"


def pid_text(pid: int | None) -> str:
    return "-" if pid is None else str(pid)


# --- the commands -------------------------------------------------------------------------


@frozen
class Command:
    name: str
    args: str
    """Shown in help and checked: "", "ID" (a notebook id or prefix), "[N]" or "[COMMAND]"."""
    summary: str
    run: Callable[[Admin, list[str]], Outcome]


class Admin:
    """Carries out admin commands against the daemon of ``paths``, each on a new connection."""

    def __init__(self, paths: StatePaths, width: int) -> None:
        self.paths = paths
        self.width = max(width, MIN_WIDTH)

    # --- talking to the daemon ---

    def not_running(self) -> str:
        hint = "nbstage daemon start"
        if state_paths(None).root != self.paths.root:
            hint += f" --state-dir {shlex.quote(str(self.paths.root))}"
        if self.paths.socket.exists():
            problem = f"nothing answers on {self.paths.socket}"
        else:
            problem = f"no socket at {self.paths.socket}"
        return f"The nbstage daemon is not running ({problem}). Start it with: {hint}"

    def request(self, kind: str, **fields: Any) -> dict[str, Any]:
        answer = self.request_if_running(kind, **fields)
        if answer is None:
            raise AdminError(self.not_running())
        return answer

    def request_if_running(self, kind: str, **fields: Any) -> dict[str, Any] | None:
        """``request``, or None when no daemon runs; every other failure is an AdminError."""
        try:
            with DaemonClient(self.paths.socket, timeout=REQUEST_TIMEOUT_SECS) as client:
                return client.request(kind, **fields)
        except DaemonNotRunning:
            return None
        except Untrusted as exc:
            raise AdminError(str(exc)) from None
        except DaemonError as exc:
            about = fields.get("notebook_id")
            raise AdminError(
                f"{short_id(about)}: {exc.message}" if about else exc.message
            ) from None
        except TimeoutError:
            raise AdminError(
                f"The daemon did not answer {kind!r} within {REQUEST_TIMEOUT_SECS:.0f}s."
            ) from None
        except OSError as exc:
            raise AdminError(f"Lost the connection to the daemon during {kind!r}: {exc}") from None

    def rooms(self) -> list[dict[str, Any]]:
        return self.request("list_rooms")["rooms"]

    def resolve(self, prefix: str) -> dict[str, Any]:
        """The resident room whose notebook id is ``prefix`` or alone starts with it."""
        rooms = self.rooms()
        exact = [room for room in rooms if room["notebook_id"] == prefix]
        matches = exact or [room for room in rooms if room["notebook_id"].startswith(prefix)]
        if len(matches) == 1:
            return matches[0]
        if not matches:
            known = ", ".join(short_id(room["notebook_id"]) for room in rooms)
            listing = f"resident: {known}" if known else "no rooms are resident"
            raise AdminError(f"No room's notebook id starts with {prefix!r} ({listing}).")
        ids = ", ".join(room["notebook_id"][: len(prefix) + 4] for room in matches)
        raise AdminError(
            f"{prefix!r} matches {len(matches)} rooms ({ids}); type more of the notebook id."
        )

    def notebook_ids(self) -> list[str]:
        return [room["notebook_id"] for room in self.rooms()]

    # --- running a command line ---

    def execute(self, argv: Sequence[str]) -> Outcome:
        name, args = argv[0], list(argv[1:])
        command = COMMANDS.get(ALIASES.get(name, name))
        if command is None:
            raise AdminError(unknown_command(name), EXIT_USAGE)
        check_arguments(command, args)
        return command.run(self, args)


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


def run_status(admin: Admin, args: list[str]) -> Outcome:
    status = admin.request("status")
    up = duration(time.time() - status["started_at"]) if status.get("started_at") else "?"
    pairs = [
        ("daemon", f"nbstage {status.get('version', '?')}, pid {status['pid']}, up {up}", "head"),
        ("socket", str(status.get("socket", admin.paths.socket)), "tail"),
        ("state dir", str(status.get("state_dir", admin.paths.root)), "tail"),
        ("rooms", str(status["rooms"]), "head"),
        ("kernels", str(status["kernels"]), "head"),
    ]
    return Outcome(status, key_values(pairs, admin.width))


def run_rooms(admin: Admin, args: list[str]) -> Outcome:
    answer = admin.request("list_rooms")
    rooms = answer["rooms"]
    if not rooms:
        return Outcome(answer, "No rooms are resident.")
    columns = [
        Column("ID"),
        Column("PATH", keep="tail", min_width=12),
        Column("PEERS", keep="head", min_width=5),
        Column("KERNEL", keep="head", min_width=6),
        Column("KPID", right=True),
        Column("ROOM PID", right=True),
    ]
    rows = [
        [
            short_id(room["notebook_id"]),
            where(room),
            ",".join(peer["label"] for peer in room["peers"]) or "-",
            "room starting" if room.get("starting") else room["kernel_status"],
            pid_text(room["kernel_pid"]),
            pid_text(room["room_pid"]),
        ]
        for room in rooms
    ]
    return Outcome(answer, table(columns, rows, admin.width))


def run_room(admin: Admin, args: list[str]) -> Outcome:
    notebook_id = admin.resolve(args[0])["notebook_id"]
    room = admin.request("describe_room", notebook_id=notebook_id)
    unsaved = "unsaved changes" if room.get("unsaved") else "saved"
    kernel = room["kernel_status"]
    if room.get("kernel_pid") is not None:
        kernel += f", pid {room['kernel_pid']}"
    if room.get("kernel_actor_pid") is not None:
        kernel += f" (actor pid {room['kernel_actor_pid']})"
    executions = room["executions"]
    latch = room["latch"]
    keep = room["keep_alive"]
    if keep.get("pending"):
        keep_text = f"{keep['secs']:g}s, teardown pending (generation {keep['armed_generation']})"
    elif keep.get("armed_generation") is not None:
        keep_text = f"{keep['secs']:g}s, armed for generation {keep['armed_generation']}"
    else:
        keep_text = f"{keep['secs']:g}s, not armed"
    attached = "kernel attached" if latch["kernel_attached"] else "no kernel attached"
    pairs = [
        ("notebook", room["notebook_id"], "head"),
        ("path", where(room), "tail"),
        ("runtime", room.get("runtime") or "none (no kernel)", "head"),
        ("cells", f"{room['cell_count']}, {unsaved}", "head"),
        ("room pid", pid_text(room.get("room_pid")), "head"),
        ("kernel", kernel, "head"),
        (
            "executions",
            f"{len(executions['live'])} live, {executions['finished']} finished",
            "head",
        ),
        ("latch", f"{attached}, generation {latch['generation']}", "head"),
        ("keep-alive", keep_text, "head"),
        ("peers", str(len(room["peers"])) if room["peers"] else "none", "head"),
    ]
    pairs += [(f"  {peer['peer_id']}", peer["label"], "head") for peer in room["peers"]]
    pairs += [("  live", execution_id, "head") for execution_id in executions["live"]]
    env = room.get("environment")
    if env is not None:
        detail = env.get("fingerprint") or env.get("project") or env.get("path")
        text = f"{env['source']}{', ' + detail if detail else ''}"
        at = [k for k, _, _ in pairs].index("kernel") + 1
        pairs[at:at] = [("environment", text, "tail")]
    if room.get("kept"):
        key = "save failed"
        key_width = max(len(key), *(len(k) for k, _, _ in pairs))
        room_width = max(admin.width - key_width - len(GAP), 8)
        lines = textwrap.wrap(kept_text(room["kept"]), room_width, break_on_hyphens=False)
        after = [k for k, _, _ in pairs].index("cells") + 1
        pairs[after:after] = [(key if i == 0 else "", line, "head") for i, line in enumerate(lines)]
    return Outcome(room, key_values(pairs, admin.width))


def kept_text(kept: dict[str, Any]) -> str:
    """Why the reaper left a room resident, in a sentence or two."""
    stamp = datetime.fromtimestamp(kept["at"]).strftime("%H:%M:%S")
    return (
        f"at {stamp}, closing ({kept['reason']}): {kept['problem']} The room was kept with "
        "its unsaved edits; the reaper tries again at its next sweep."
    )


def run_peers(admin: Admin, args: list[str]) -> Outcome:
    peers = [
        {
            "notebook_id": room["notebook_id"],
            "path": room["path"],
            "ephemeral": room["ephemeral"],
            "peer_id": peer["peer_id"],
            "label": peer["label"],
        }
        for room in admin.rooms()
        for peer in room["peers"]
    ]
    if not peers:
        return Outcome({"peers": peers}, "No peers are connected.")
    columns = [
        Column("ROOM"),
        Column("PEER ID"),
        Column("LABEL", keep="head", min_width=8),
        Column("PATH", keep="tail", min_width=12),
    ]
    rows = [[short_id(p["notebook_id"]), p["peer_id"], p["label"], where(p)] for p in peers]
    return Outcome({"peers": peers}, table(columns, rows, admin.width))


def run_kernels(admin: Admin, args: list[str]) -> Outcome:
    rooms = admin.rooms()
    actors = {
        room["notebook_id"]: (room.get("kernel") or {}).get("actor_pid")
        for room in admin.request("tree")["rooms"]
    }
    kernels = [
        {
            "notebook_id": room["notebook_id"],
            "path": room["path"],
            "ephemeral": room["ephemeral"],
            "kernel_status": room["kernel_status"],
            "kernel_pid": room["kernel_pid"],
            "actor_pid": actors.get(room["notebook_id"]),
            "room_pid": room["room_pid"],
        }
        for room in rooms
        if room["kernel_status"] != "none"
    ]
    if not kernels:
        return Outcome({"kernels": kernels}, "No kernels are running.")
    columns = [
        Column("ROOM"),
        Column("STATUS", keep="head"),
        Column("KERNEL PID", right=True),
        Column("ACTOR PID", right=True),
        Column("ROOM PID", right=True),
        Column("PATH", keep="tail", min_width=12),
    ]
    rows = [
        [
            short_id(k["notebook_id"]),
            k["kernel_status"],
            pid_text(k["kernel_pid"]),
            pid_text(k["actor_pid"]),
            pid_text(k["room_pid"]),
            where(k),
        ]
        for k in kernels
    ]
    return Outcome({"kernels": kernels}, table(columns, rows, admin.width))


def run_tree(admin: Admin, args: list[str]) -> Outcome:
    tree = admin.request("tree")
    width = admin.width

    def node(prefix: str, label: str, address: str | None) -> str:
        if address is None:
            return clip(prefix + label, width)
        room = width - len(prefix) - len(label) - len(GAP)
        return f"{prefix}{label}{GAP}{clip(address, max(room, 12), 'tail')}"

    lines = [node("", f"Daemon pid {tree['pid']}", tree.get("address"))]
    rooms = tree["rooms"]
    for index, room in enumerate(rooms):
        last = index == len(rooms) - 1
        label = f"Room {short_id(room['notebook_id'])} pid {pid_text(room.get('pid'))}"
        lines.append(node("`- " if last else "|- ", label, room.get("address")))
        kernel = room.get("kernel")
        if kernel is not None:
            label = (
                f"Kernel actor pid {pid_text(kernel.get('actor_pid'))}, "
                f"kernel pid {pid_text(kernel.get('kernel_pid'))}"
            )
            lines.append(node("   `- " if last else "|  `- ", label, None))
    if not rooms:
        lines.append("   (no rooms)")
    return Outcome(tree, "\n".join(lines))


def run_clients(admin: Admin, args: list[str]) -> Outcome:
    answer = admin.request("clients")
    clients = answer["clients"]
    if not clients:
        return Outcome(answer, "No nbstage mcp clients are connected.")
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
        for client in clients
    ]
    return Outcome(answer, table(columns, rows, admin.width))


def run_evict(admin: Admin, args: list[str]) -> Outcome:
    room = admin.resolve(args[0])
    notebook_id = room["notebook_id"]
    answer = admin.request("evict", notebook_id=notebook_id)
    if room["ephemeral"]:
        what = "ephemeral, discarded"
    else:
        what = "saved" if answer.get("saved") else "not saved"
    return Outcome(answer, f"evicted {notebook_id} ({what})")


def run_restart_kernel(admin: Admin, args: list[str]) -> Outcome:
    notebook_id = admin.resolve(args[0])["notebook_id"]
    answer = admin.request("restart_kernel", notebook_id=notebook_id)
    return Outcome(answer, f"restarted kernel of {notebook_id}: new pid {answer['kernel_pid']}")


def run_shutdown_kernel(admin: Admin, args: list[str]) -> Outcome:
    notebook_id = admin.resolve(args[0])["notebook_id"]
    answer = admin.request("shutdown_kernel", notebook_id=notebook_id)
    return Outcome(
        answer, f"stopped kernel of {notebook_id} (pid {pid_text(answer.get('kernel_pid'))})"
    )


def run_reap(admin: Admin, args: list[str]) -> Outcome:
    answer = admin.request("reap")
    reaped = answer["reaped"]
    kept = answer.get("kept") or []
    if not reaped and not kept:
        return Outcome(answer, "reaped no rooms: none is idle past the reaper's limits")
    if reaped:
        text = f"reaped {plural(len(reaped), 'room')}: {', '.join(reaped)}"
        lines = [fit_message(text, admin.width)]
    else:
        lines = ["reaped no rooms"]
    if kept:
        head = f"kept {plural(len(kept), 'room')}, because saving before removal failed:"
        lines.append(fit_message(head, admin.width))
    for room in kept:
        text = f"{room['notebook_id']}: {kept_text(room)}"
        wrapped = textwrap.fill(
            text,
            admin.width,
            initial_indent="  ",
            subsequent_indent="    ",
            break_on_hyphens=False,
        )
        lines.append(wrapped)
    return Outcome(answer, "\n".join(lines))


LOG_INDENT = "    "


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
    answer = admin.request("log", lines=count)
    lines = [line for entry in answer["lines"] for line in log_entry_lines(entry, admin.width)]
    return Outcome(answer, "\n".join(lines) if lines else "The daemon's log is empty.")


def run_envs(admin: Admin, args: list[str]) -> Outcome:
    from nbstage.actors.daemon.environment.environments import describe_envs

    status = admin.request_if_running("status")
    # With no daemon (or one from before envs_dir), this process's own setting.
    root = Path(status["envs_dir"]) if status and "envs_dir" in status else None
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


def run_gc_envs(admin: Admin, args: list[str]) -> Outcome:
    days = int(args[0]) if args else 0
    answer = admin.request("gc_envs", older_than_secs=days * 86400.0)
    removed, kept = answer["removed"], answer["kept"]
    unused = f"unused for {plural(days, 'day')}" if days else "unused"
    text = (
        f"removed {plural(len(removed), 'environment')} {unused}"
        + (f": {', '.join(removed)}" if removed else "")
        + (f"; kept {plural(len(kept), 'in use')}: {', '.join(kept)}" if kept else "")
    )
    return Outcome(answer, fit_message(text, admin.width))


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


# --- output -------------------------------------------------------------------------------


def fit_message(message: str, width: int) -> str:
    """A message wrapped to the terminal, paths and ids kept whole where they fit."""
    return textwrap.fill(visible(message), width, subsequent_indent="  ", break_on_hyphens=False)


def render(outcome: Outcome, as_json: bool) -> str:
    if as_json:
        return json_for_terminal(orjson.dumps(outcome.data, option=orjson.OPT_INDENT_2).decode())
    return visible_lines(outcome.text)


def terminal_width() -> int:
    return shutil.get_terminal_size((80, 24)).columns


# --- the interactive console --------------------------------------------------------------


class Console(cmd.Cmd):
    """``nbstage> `` prompt: one command per line, errors shown in a line, never fatal."""

    prompt = PROMPT

    def __init__(self, admin: Admin, as_json: bool) -> None:
        super().__init__()
        self.admin = admin
        self.as_json = as_json

    def preloop(self) -> None:
        if readline is not None:
            readline.set_completer_delims(" \t\n")

    def emptyline(self) -> bool:
        return False

    def onecmd(self, line: str) -> bool:
        if line == "EOF":
            self.stdout.write("\n")
            return True
        try:
            argv = shlex.split(line)
        except ValueError as exc:
            self._error(f"Cannot read that line: {exc}.")
            return False
        if not argv:
            return False
        if ALIASES.get(argv[0], argv[0]) == "quit":
            return True
        as_json = self.as_json or "--json" in argv
        argv = [arg for arg in argv if arg != "--json"]
        self.admin.width = max(terminal_width(), MIN_WIDTH)
        try:
            outcome = self.admin.execute(argv)
        except AdminError as exc:
            self._error(exc.message)
        except KeyboardInterrupt:
            self._error("Interrupted; the daemon may still finish what it was asked.")
        else:
            text = render(outcome, as_json)
            if text:
                self.stdout.write(text + "\n")
        self.stdout.flush()
        return False

    def _error(self, message: str) -> None:
        self.stdout.write(fit_message(message, self.admin.width) + "\n")

    def completenames(self, text: str, *ignored: Any) -> list[str]:
        names = [*COMMANDS, *ALIASES]
        return [f"{name} " for name in names if name.startswith(text) and name != "?"]

    def completedefault(self, text: str, line: str, begidx: int, endidx: int) -> list[str]:
        words = line[:begidx].split()
        if len(words) != 1 or words[0] not in ID_COMMANDS:
            return []
        try:
            ids = self.admin.notebook_ids()
        except AdminError:
            return []
        return [f"{nid} " for nid in ids if nid.startswith(text)]

    def complete_help(self, text: str, *ignored: Any) -> list[str]:
        return self.completenames(text)


def _load_history(paths: StatePaths) -> None:
    if readline is None:
        return
    readline.set_history_length(HISTORY_LENGTH)
    with contextlib.suppress(OSError):
        readline.read_history_file(paths.logs / HISTORY_FILE)


def _save_history(paths: StatePaths) -> None:
    if readline is None:
        return
    with contextlib.suppress(OSError):
        paths.logs.mkdir(mode=0o700, parents=True, exist_ok=True)
        readline.write_history_file(paths.logs / HISTORY_FILE)


def interact(admin: Admin, as_json: bool) -> int:
    try:
        status = admin.request("status")
    except AdminError as exc:
        print(fit_message(exc.message, admin.width), file=sys.stderr)
        return EXIT_FAILED
    console = Console(admin, as_json)
    console.intro = (
        f"nbstage admin: daemon {visible(str(status.get('version', '?')))} pid {status['pid']}, "
        f"{plural(status['rooms'], 'room')}, {plural(status['kernels'], 'kernel')}.\n"
        "Type help for the commands, quit to leave."
    )
    _load_history(admin.paths)
    try:
        while True:
            try:
                console.cmdloop()
                return EXIT_OK
            except KeyboardInterrupt:
                console.intro = None
                console.stdout.write("^C\n")
    finally:
        _save_history(admin.paths)


# --- entry point --------------------------------------------------------------------------


def run_admin(paths: StatePaths, command: list[str], as_json: bool) -> int:
    """``nbstage admin``: the console with no ``command``, else that one command; the exit code."""
    admin = Admin(paths, terminal_width())
    if not command:
        return interact(admin, as_json)
    try:
        outcome = admin.execute(command)
    except AdminError as exc:
        print(fit_message(exc.message, admin.width), file=sys.stderr)
        return exc.exit_code
    text = render(outcome, as_json)
    if text:
        print(text)
    return EXIT_OK
