"""The ``nbstage`` command line: the main module of every nbstage process.

``nbstage mcp`` is what an MCP client launches, once for each agent and often for many
at once, so it is read without click when its arguments take the plain forms
(``entrypoints/mcp/mcp_args.py``) and the edge then runs in this same process
(``entrypoints/mcp/mcp_main.py``). Everything else, and ``nbstage mcp`` with ``--help``
or arguments those forms do not cover, goes to the click commands
(``entrypoints/cli_commands.py``), which give the help and the errors.
"""

from __future__ import annotations

import os
import sys


def main() -> None:
    argv = sys.argv[1:]
    if argv[:1] == ["mcp"]:
        from nbstage.entrypoints.mcp.mcp_args import read_mcp_args

        args = read_mcp_args(argv[1:], os.environ)
        if args is not None:
            from nbstage.entrypoints.mcp.mcp_main import serve

            serve(args)
            return
    from nbstage.entrypoints.cli_commands import commands

    commands()


if __name__ == "__main__":
    main()
