"""Whether ``show_notebook`` opens the person's browser on the notebook's URL, and the
opening itself (ADR 0004).

``refusal`` is the decision, a pure function of the ``lab_open_browser`` setting, the
environment and the platform: it names why no browser is opened, or is None where a
display is there to open one on. ``open_url`` runs on the session child's worker thread.
It opens through Python's ``webbrowser`` (which honours ``$BROWSER``) in a process of its
own whose stdout is /dev/null, since a browser command that prints would otherwise write
into the MCP client's stdout, and waits for it at most ``OPEN_WAIT`` seconds: a browser
command that keeps running (a new browser's first window) has opened the page.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from nbstage.entrypoints.common.lab_start import open_private_append
from nbstage.entrypoints.common.python_command import isolation_flags
from nbstage.entrypoints.common.statedir import prepare, state_paths
from nbstage.protocol.common.settings import env_name, load_settings

OPEN_WAIT = 10.0
OPENER = "import sys, webbrowser; sys.exit(0 if webbrowser.open(sys.argv[1]) else 3)"
NOT_FOUND = 3
"""The opener's exit status when ``webbrowser`` found no browser to run."""
SSH_VARIABLES = ("SSH_CONNECTION", "SSH_CLIENT", "SSH_TTY")


def _set(env: Mapping[str, str], name: str) -> bool:
    return env.get(name, "").strip().lower() not in ("", "0", "false", "no")


def refusal(wanted: bool, env: Mapping[str, str], platform: str) -> str | None:
    """Why no browser is opened, or None: open one. A display is there on macOS and
    Windows unless this is an SSH login, elsewhere when $DISPLAY or $WAYLAND_DISPLAY is
    set (also an SSH login's forwarded one); never under CI."""
    if not wanted:
        return f"turned off ({env_name('lab_open_browser')}=0 or lab_open_browser = false)"
    if _set(env, "CI"):
        return "running under CI"
    if env.get("DISPLAY") or env.get("WAYLAND_DISPLAY"):
        return None
    if any(env.get(name) for name in SSH_VARIABLES):
        return "an SSH login without a forwarded display"
    if platform == "darwin" or platform.startswith("win"):
        return None
    return "no display (neither DISPLAY nor WAYLAND_DISPLAY is set)"


def open_url(state_dir: str, url: str, env: Mapping[str, str]) -> dict[str, Any]:
    """``{opened_browser, browser_reason?}``: the browser opened on ``url`` where the
    setting and the environment allow it. Never raises."""
    paths = state_paths(state_dir)
    try:
        wanted = load_settings(Path(state_dir), dict(env)).lab_open_browser
    except (OSError, ValueError) as exc:
        return {"opened_browser": False, "browser_reason": f"settings not read: {exc}"}
    why_not = refusal(wanted, env, sys.platform)
    if why_not is not None:
        return {"opened_browser": False, "browser_reason": why_not}
    command = [sys.executable, *isolation_flags(sys.flags), "-P", "-c", OPENER, url]
    try:
        prepare(paths)
        with open_private_append(paths.logs / "lab.out") as log:
            opener = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=log,
                env=dict(env),
                start_new_session=True,
            )
        status = opener.wait(OPEN_WAIT)
    except subprocess.TimeoutExpired:
        return {"opened_browser": True}
    except OSError as exc:
        return {"opened_browser": False, "browser_reason": f"the opener did not start: {exc}"}
    if status == 0:
        return {"opened_browser": True}
    if status == NOT_FOUND:
        return {"opened_browser": False, "browser_reason": "no browser found to open it"}
    return {"opened_browser": False, "browser_reason": f"the opener failed ({status})"}
