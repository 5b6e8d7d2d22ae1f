"""The `nbstage mcp` edge's own process image.

`nbstage mcp` reads its command line with click, starts the daemon if none runs and
checks the state dir (``cli.py``); then it replaces itself, same pid and same stdio,
with ``python -m nbstage.entrypoints.mcp.mcp_main SETTINGS`` (:func:`become_edge`). The
client's process then holds only what the edge runs: click and the rest of the command
line cost an idle client about 1 MB, and this process lives as long as the client does.

SETTINGS is one JSON object written by :func:`become_edge`, not a command line meant
for people.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import orjson

from nbstage.entrypoints.common.python_command import module_command
from nbstage.entrypoints.common.statedir import StatePaths

REJOIN_ENV = "NBSTAGE_REJOIN_NOTEBOOK"
"""A notebook (path or UUID) the session rejoins first (SPEC §3); the harness and tests
set it when they start a client."""


def become_edge(
    paths: StatePaths, label: str | None, autostart: bool, no_daemon: str | None = None
) -> None:
    """Replace this process with the edge; does not return. ``no_daemon``: why no daemon
    can run for the state dir (runtime_dir.client_problem), which every tool call says."""
    settings = {
        "root": str(paths.root),
        "socket_dir": str(paths.socket_dir),
        "label": label,
        "autostart": autostart,
        "no_daemon": no_daemon,
    }
    sys.stdout.flush()
    sys.stderr.flush()
    argv = [*module_command("nbstage.entrypoints.mcp.mcp_main"), orjson.dumps(settings).decode()]
    try:
        os.execv(argv[0], argv)
    except OSError as exc:
        import click  # the CLI's process image; the edge's never loads click

        raise click.ClickException(f"could not start the MCP edge ({argv[0]}): {exc}") from None


def run(settings_json: str) -> None:
    from nbstage.entrypoints.common.lean import thespian_without_extras, without_tls

    without_tls()
    thespian_without_extras()
    import asyncio

    from nbstage.entrypoints.common.logs import setup_logging
    from nbstage.entrypoints.mcp.mcp_edge import McpEdge, claim_stdio

    settings = orjson.loads(settings_json)
    mcp_in, mcp_out = claim_stdio()
    paths = StatePaths(Path(settings["root"]), Path(settings["socket_dir"]))
    setup_logging(paths.logs, "mcp")
    rejoin = os.environ.get(REJOIN_ENV) or None
    edge = McpEdge(
        paths,
        settings["label"],
        rejoin,
        mcp_in,
        mcp_out,
        settings["autostart"],
        settings.get("no_daemon"),
    )
    asyncio.run(edge.run())


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("nbstage.entrypoints.mcp.mcp_main is started by `nbstage mcp`; run that instead.")
    run(sys.argv[1])
