"""Ctrl-C on ``make run`` in a terminal, as a person presses it: every nbstage process
of the session ends quietly, with no traceback."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pexpect
import psutil
import pytest

from tests.support import NBSTAGE, wait_until

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]


def lines(*messages: dict) -> str:
    return "".join(json.dumps(m) + "\n" for m in messages)


SERVED_CALL = lines(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "terminal", "version": "0"},
        },
    },
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "list_active_notebooks", "arguments": {}},
    },
)


def session_child_below(pid: int) -> psutil.Process | None:
    for proc in psutil.Process(pid).children(recursive=True):
        try:
            if "nbstage.entrypoints.session.session_main" in proc.cmdline():
                return proc
        except psutil.Error:
            continue
    return None


def test_ctrl_c_on_make_run_ends_the_session_quietly(state_dir: Path) -> None:
    term = pexpect.spawn(
        "make",
        ["-s", "--no-print-directory", "run", f"STATE_DIR={state_dir}"],
        cwd=REPO,
        encoding="utf-8",
        timeout=60,
    )
    try:
        term.expect("Ctrl-D to quit")
        # A call the session child answers: Ctrl-C then lands on a child that is serving.
        term.send(SERVED_CALL)
        term.expect('"id": ?2, ?"result"')
        child = wait_until(lambda: session_child_below(term.pid), 30, "the session child")
        term.sendintr()
        term.expect(pexpect.EOF)
        after = term.before.replace("^C", "").strip()
        assert "Traceback" not in after
        assert len(after.splitlines()) <= 1, after
        wait_until(lambda: not child.is_running(), 10, "the session child to exit")
    finally:
        term.close(force=True)
        subprocess.run(
            [*NBSTAGE, "daemon", "stop", "--state-dir", str(state_dir)],
            capture_output=True,
            check=False,
            executable=sys.executable,
        )
