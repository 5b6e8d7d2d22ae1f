"""What `nbstage mcp` says on stderr when a person starts it in a terminal."""

from __future__ import annotations

import json
from pathlib import Path

_WELCOME = """nbstage mcp speaks MCP on stdin/stdout; an MCP client launches it. To add it:

  Claude Code:  claude mcp add nbstage -- {nbstage} {args}
  Codex:        in ~/.codex/config.toml
                [mcp_servers.nbstage]
                command = "{nbstage}"
                args = {toml_args}

Its notebooks and daemon live in {state_dir}; `nbstage admin{flag}` shows them.
Waiting for MCP messages on stdin (Ctrl-D to quit)."""


def welcome(nbstage: Path, state_dir: str | None, root: Path) -> str:
    """How to register this very command, with the state dir it uses if not the default."""
    extra = ["--state-dir", str(root)] if state_dir else []
    return _WELCOME.format(
        nbstage=nbstage,
        args=" ".join(["mcp", *extra]),
        toml_args=json.dumps(["mcp", *extra]),
        state_dir=root,
        flag="".join(f" {part}" for part in extra),
    )
