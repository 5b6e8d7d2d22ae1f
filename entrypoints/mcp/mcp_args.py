"""``nbstage mcp``'s command line, read without click.

An MCP client starts ``nbstage mcp`` for every agent, often for many at once, and
importing click with the CLI's command table costs each start about 0.1 s of CPU. So
``cli.py`` reads the plain forms of the command's three options here, as click reads
them: ``--label VALUE`` or ``--label=VALUE``, the same for ``--state-dir``, and
``--no-autostart``; given twice, the last one counts; with no ``--state-dir``,
``NBSTAGE_STATE_DIR`` when it is set and not empty. For anything else (``--help``, an
unknown option, a missing or empty value, a value that begins with ``-``, a state dir
that is a file) :func:`read_mcp_args` gives None, and click reads the command line, so
the help and every error are click's own.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from nbstage.entrypoints.common.statedir import STATE_DIR_ENV
from nbstage.protocol.common.frozen import frozen

VALUED = ("--label", "--state-dir")


@frozen
class McpArgs:
    label: str | None
    autostart: bool
    state_dir: str | None
    """As given, or from the environment; None for the default state dir."""


def read_mcp_args(argv: list[str], environ: Mapping[str, str]) -> McpArgs | None:
    """The arguments after ``mcp``, or None when click must read them."""
    values: dict[str, str] = {}
    autostart = True
    rest = list(argv)
    while rest:
        arg = rest.pop(0)
        if arg == "--no-autostart":
            autostart = False
            continue
        name, equals, value = arg.partition("=")
        if name not in VALUED:
            return None
        if not equals:
            if not rest:
                return None
            value = rest.pop(0)
        if not value or value.startswith("-"):
            return None
        values[name] = value
    state_dir = values.get("--state-dir") or environ.get(STATE_DIR_ENV) or None
    if state_dir is not None and os.path.isfile(state_dir):
        return None  # click.Path(file_okay=False) says so
    return McpArgs(values.get("--label"), autostart, state_dir)
