"""The operator's console (SPEC §10): ``nbstage admin``, interactive or one command at a time.

Every command asks the daemon over its socket, on a fresh connection, at the moment it
runs (``daemon_access.py``); the commands are in ``command_table.py``. Human output is
sized to the terminal (80 columns when there is none; ``text_layout.py``). ``--json``
prints the daemon's answer instead.

Exit codes of a one-shot command: 0 done, 1 the daemon is not running or refused,
2 the command line itself was wrong.
"""

from __future__ import annotations

import cmd
import contextlib
import shlex
import shutil
import sys
from typing import Any

import orjson

from nbstage.entrypoints.admin.command_table import ALIASES, COMMANDS, ID_COMMANDS, execute
from nbstage.entrypoints.admin.daemon_access import (
    EXIT_FAILED,
    EXIT_OK,
    MIN_WIDTH,
    Admin,
    AdminError,
    Outcome,
)
from nbstage.entrypoints.admin.terminal_text import json_for_terminal, visible, visible_lines
from nbstage.entrypoints.admin.text_layout import fit_message
from nbstage.entrypoints.common.statedir import StatePaths
from nbstage.protocol.common.words import plural
from nbstage.protocol.daemon.replies import DaemonStatus
from nbstage.protocol.daemon.requests import GetStatus

try:
    import readline
except ImportError:
    readline = None

PROMPT = "nbstage> "
HISTORY_FILE = "admin_history"
HISTORY_LENGTH = 1000


def render(outcome: Outcome, as_json: bool) -> str:
    if as_json:
        return json_for_terminal(orjson.dumps(outcome.data, option=orjson.OPT_INDENT_2).decode())
    return visible_lines(outcome.text)


def terminal_width() -> int:
    return shutil.get_terminal_size((80, 24)).columns


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
            outcome = execute(self.admin, argv)
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
        status = admin.call(GetStatus(), DaemonStatus)
    except AdminError as exc:
        print(fit_message(exc.message, admin.width), file=sys.stderr)
        return EXIT_FAILED
    console = Console(admin, as_json)
    console.intro = (
        f"nbstage admin: daemon {visible(status.version)} pid {status.pid}, "
        f"{plural(status.rooms, 'room')}, {plural(status.kernels, 'kernel')}.\n"
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
        outcome = execute(admin, command)
    except AdminError as exc:
        print(fit_message(exc.message, admin.width), file=sys.stderr)
        return exc.exit_code
    text = render(outcome, as_json)
    if text:
        print(text)
    return EXIT_OK
