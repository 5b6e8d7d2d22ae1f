"""Starting a daemon for a client that finds none: `nbstage mcp`'s autostart.

It runs before the client loads its own code, so the daemon's start-up overlaps the
client's. The daemon runs in its foreground mode, with no `nbstage daemon start`
process in between, and is launched through `sh`, which exits at once: the daemon is
nobody's child here, and it outlives the client that started it.
"""

from __future__ import annotations

import logging
import os
import socket
import subprocess
from collections.abc import Mapping

from nbstage.entrypoints.common.ownership import Untrusted
from nbstage.entrypoints.common.python_command import module_command
from nbstage.entrypoints.common.runtime_dir import own_recorded
from nbstage.entrypoints.common.statedir import StatePaths, daemon_output, prepare

log = logging.getLogger("nbstage.mcp")

WARM_KERNEL_ENV = "NBSTAGE_WARM_KERNEL"
"""Tells the daemon to launch a spare kernel at once (actors/daemon/kernel/spare_kernel.py): the
client
that starts it will most likely ask for a kernel next. Not passed on to kernels."""


def daemon_answers(paths: StatePaths) -> bool:
    """Whether something listens on the socket the state dir records, in a dir that is
    this user's alone (a planted dir holds no daemon of ours)."""
    try:
        recorded = own_recorded(paths)
    except (OSError, Untrusted):
        return False
    if recorded is None:
        return False
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        try:
            probe.connect(str(recorded.socket))
        except OSError:
            return False
    return True


def start_daemon_unless_running(
    paths: StatePaths, environ: Mapping[str, str] | None = None
) -> None:
    """Launch a detached daemon if nothing answers on the socket; never waits for it.
    ``environ``: the daemon's environment (default: this process's)."""
    if daemon_answers(paths):
        return
    try:
        prepare(paths)
        out = daemon_output(paths)
    except (OSError, Untrusted) as exc:
        log.error("could not start the daemon: %s", exc)
        return
    daemon = [*module_command("nbstage.entrypoints.cli"), "daemon", "start", "--foreground"]
    with out:
        subprocess.run(
            ["/bin/sh", "-c", '"$@" &', "sh", *daemon, "--state-dir", str(paths.root)],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
            start_new_session=True,
            env={**(os.environ if environ is None else environ), WARM_KERNEL_ENV: "1"},
            check=False,
        )
