"""The real Claude Code and Codex CLIs, run against a model stand-in (tests/model_standin.py),
and where the MCP Inspector CLI is found.

``make test`` installs all three, pinned, into ``.venv/node`` (see the Makefile); a test whose
CLI is missing is skipped with the command that installs it. Each run gets a home of its
own, so nothing of the user's configuration, login or history is read or written, and
every kind of traffic but the stand-in's is turned off.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from nbstage.actors.daemon.environment.environments import ENVS_DIR_ENV
from tests.support import NBSTAGE, RunningDaemon

ROOT = Path(__file__).resolve().parent.parent
NODE_DIR = ROOT / ".venv" / "node"
CLAUDE_CODE = "@anthropic-ai/claude-code@2.1.197"
CODEX = "@openai/codex@0.171.0"
INSPECTOR = "@modelcontextprotocol/inspector@2.12.0"
INSTALL = f"npm install --prefix {NODE_DIR} {CLAUDE_CODE} {CODEX} {INSPECTOR}"
PROMPT = "Work on the notebooks with the nbstage tools."


def cli(name: str) -> Path | None:
    path = NODE_DIR / "node_modules" / ".bin" / name
    return path if path.exists() else None


def nbstage_server(daemon: RunningDaemon) -> tuple[str, list[str], dict[str, str]]:
    """How a client starts `nbstage mcp` for ``daemon``: command, arguments, environment."""
    env = dict(daemon.env)
    for name in ("JUPYTER_RUNTIME_DIR", "IPYTHONDIR", "JUPYTER_PLATFORM_DIRS", ENVS_DIR_ENV):
        if name in os.environ:
            env.setdefault(name, os.environ[name])
    return NBSTAGE[0], [*NBSTAGE[1:], "mcp", "--state-dir", str(daemon.paths.root)], env


def quiet_env(home: Path) -> dict[str, str]:
    """The client's environment: its home, caches and temp files (Claude Code keeps a
    ``claude-<uid>`` dir in the temp dir) all under ``home``, which the test removes."""
    keep = ("PATH", "LANG", "LC_ALL", "SSL_CERT_FILE")
    env = {k: os.environ[k] for k in keep if k in os.environ}
    (home / "tmp").mkdir(parents=True, exist_ok=True)
    env.update(
        HOME=str(home),
        TMPDIR=str(home / "tmp"),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_CACHE_HOME=str(home / ".cache"),
        XDG_DATA_HOME=str(home / ".local" / "share"),
        NO_PROXY="127.0.0.1,localhost",
    )
    return env


def run_claude(daemon: RunningDaemon, base_url: str, home: Path, cwd: Path) -> str:
    """``claude -p`` with nbstage as its one MCP server; returns its output."""
    command, args, server_env = nbstage_server(daemon)
    config = {"mcpServers": {"nbstage": {"command": command, "args": args, "env": server_env}}}
    env = quiet_env(home)
    env.update(
        ANTHROPIC_BASE_URL=base_url,
        ANTHROPIC_API_KEY="stand-in",
        CLAUDE_CONFIG_DIR=str(home / ".claude"),
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        DISABLE_AUTOUPDATER="1",
        DISABLE_TELEMETRY="1",
        DISABLE_ERROR_REPORTING="1",
        CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY="1",
        ENABLE_TOOL_SEARCH="false",
        MCP_TIMEOUT="60000",
        # -p connects --mcp-config servers in the background and may start the first turn
        # before their tools are listed; these make it wait (up to a minute) instead.
        MCP_CONNECTION_NONBLOCKING="false",
        MCP_CONNECT_TIMEOUT_MS="60000",
        MCP_TOOL_TIMEOUT="180000",
    )
    argv = [
        str(cli("claude")),
        "-p",
        PROMPT,
        "--mcp-config",
        json.dumps(config),
        "--strict-mcp-config",
        "--allowedTools",
        "mcp__nbstage",
        "--model",
        "claude-sonnet-4-5",
        "--max-turns",
        "40",
    ]
    return _run(argv, env, cwd)


def run_codex(daemon: RunningDaemon, base_url: str, home: Path, cwd: Path) -> str:
    """``codex exec`` with nbstage as its one MCP server; returns its output."""
    command, args, server_env = nbstage_server(daemon)
    codex_home = home / ".codex"
    codex_home.mkdir(parents=True, exist_ok=True)
    config = "\n".join(
        [
            'model = "stand-in"',
            'model_provider = "standin"',
            "[model_providers.standin]",
            'name = "stand-in"',
            f'base_url = "{base_url}/v1"',
            'wire_api = "responses"',
            'env_key = "STANDIN_API_KEY"',
            "request_max_retries = 0",
            "stream_max_retries = 0",
            "[mcp_servers.nbstage]",
            f"command = {json.dumps(command)}",
            f"args = {json.dumps(args)}",
            "startup_timeout_sec = 60",
            "tool_timeout_sec = 180",
            "[mcp_servers.nbstage.env]",
            *(f"{k} = {json.dumps(v)}" for k, v in server_env.items()),
            "",
        ]
    )
    (codex_home / "config.toml").write_text(config)
    env = quiet_env(home)
    env.update(CODEX_HOME=str(codex_home), STANDIN_API_KEY="stand-in", RUST_LOG="error")
    argv = [
        str(cli("codex")),
        "exec",
        "--skip-git-repo-check",
        "--dangerously-bypass-approvals-and-sandbox",
        PROMPT,
    ]
    return _run(argv, env, cwd)


def _run(argv: list[str], env: dict[str, str], cwd: Path) -> str:
    done = subprocess.run(
        argv,
        env=env,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    return f"exit {done.returncode}\nstdout:\n{done.stdout[-4000:]}\nstderr:\n{done.stderr[-4000:]}"
