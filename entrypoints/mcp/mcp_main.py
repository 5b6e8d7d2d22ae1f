"""`nbstage mcp`: from its command line to the running edge, in the process the client
launched.

``cli.py`` reads the command line (``mcp_args.py``, or click for the forms that reads
leave to it), then :func:`serve` starts the daemon if none runs, checks the state dir
and runs the edge (``mcp_edge.py``) in this same process: one interpreter, and neither
click nor the rest of the command line is loaded on the way (``cli.py``).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from nbstage.entrypoints.common.statedir import StatePaths
from nbstage.entrypoints.mcp.mcp_args import McpArgs

REJOIN_ENV = "NBSTAGE_REJOIN_NOTEBOOK"
"""A notebook (path or UUID) the session rejoins first (SPEC §3); the harness and tests
set it when they start a client."""


def serve(args: McpArgs) -> None:
    """Start the edge for ``args``; returns when the client has gone. Where the state dir
    is refused, says so as click would (``Error: …``, exit 1)."""
    from nbstage.entrypoints.common.ownership import Untrusted
    from nbstage.protocol.common.errors import NbstageError
    from nbstage.protocol.common.safe_files import FileRefused

    lean_start()
    try:
        paths, problem, starting = get_ready(args)
    except (Untrusted, FileRefused, TimeoutError, NbstageError) as exc:
        sys.stderr.write(f"Error: {exc}\n")
        sys.exit(1)
    run_edge(paths, args, problem, starting)


def lean_start() -> None:
    """What must come before asyncio and thespian (``lean.py``), and no module from the
    folder the client started this process in (``python -m`` puts it first on the path,
    a script its own folder), so a ``random.py`` there cannot stand in for the standard one
    (``python_command.py`` says the same of every process nbstage starts)."""
    from nbstage.entrypoints.common.lean import thespian_without_extras, without_tls

    if not sys.flags.safe_path and sys.path:
        main_dir = os.path.dirname(os.path.abspath(sys.argv[0]))
        if sys.path[0] in ("", os.getcwd(), main_dir):
            del sys.path[0]
    without_tls()
    thespian_without_extras()


def get_ready(args: McpArgs) -> tuple[StatePaths, str | None, bool]:
    """The daemon started if it should be, the state dir made; its paths, why no daemon
    can run for it (runtime_dir.client_problem), which every tool call then says, and
    whether another client is starting the daemon right now."""
    from nbstage.entrypoints.common.runtime_dir import client_problem
    from nbstage.entrypoints.common.statedir import prepare, recorded_paths, state_paths
    from nbstage.entrypoints.control.daemon_launch import Autostart, start_daemon_unless_running

    paths = state_paths(args.state_dir)
    problem = client_problem(paths)
    started = None
    if args.autostart and problem is None:
        started = start_daemon_unless_running(paths)
    if sys.stdin.isatty():
        from nbstage.entrypoints.mcp.welcome import welcome

        executable = Path(sys.executable).with_name("nbstage")
        _say(welcome(executable, args.state_dir, paths.root))
    if problem is not None:
        _say(problem)
    prepare(paths)
    return recorded_paths(paths), problem, started is Autostart.STARTING


def run_edge(paths: StatePaths, args: McpArgs, problem: str | None, starting: bool) -> None:
    import asyncio

    from nbstage.entrypoints.common.logs import setup_logging
    from nbstage.entrypoints.mcp.mcp_edge import McpEdge, claim_stdio

    mcp_in, mcp_out = claim_stdio()
    setup_logging(paths.logs, "mcp")
    rejoin = os.environ.get(REJOIN_ENV) or None
    edge = McpEdge(paths, args.label, rejoin, mcp_in, mcp_out, args.autostart, problem, starting)
    asyncio.run(edge.run())


def _say(text: str) -> None:
    sys.stderr.write(f"{text}\n")
    sys.stderr.flush()
