"""The ``nbstage`` commands, read by click (``cli.py`` sends every command line here but
the plain forms of ``nbstage mcp``).

Each command imports what it needs.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import click
import orjson

from nbstage.entrypoints.common.ownership import Untrusted
from nbstage.entrypoints.common.statedir import STATE_DIR_ENV, client_paths, state_paths
from nbstage.protocol.common.errors import NbstageError
from nbstage.protocol.common.safe_files import FileRefused
from nbstage.protocol.common.version import VERSION

if TYPE_CHECKING:
    from nbstage.protocol.daemon.replies import DaemonStatus

state_dir_option = click.option(
    "--state-dir",
    envvar=STATE_DIR_ENV,
    type=click.Path(file_okay=False),
    default=None,
    help="Where the daemon keeps its socket, registry and logs "
    "(default $XDG_STATE_HOME/nbstage or ~/.local/state/nbstage).",
)


class _Group(click.Group):
    """Reports a state or socket dir (or daemon) that is not this user's, a file in it
    that is not a regular file (a FIFO, a link), a daemon that does not start or stop
    in time, and one that refuses or garbles its answer, as a clear error."""

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except (Untrusted, FileRefused, TimeoutError, NbstageError) as exc:
            raise click.ClickException(str(exc)) from exc


@click.group(cls=_Group)
@click.version_option(VERSION, prog_name="nbstage", message="%(prog)s %(version)s")
def commands() -> None:
    """nbstage: Jupyter notebooks for AI agents, over MCP."""


@commands.group()
def daemon() -> None:
    """Start, stop and inspect the per-user notebook daemon."""


def _print_status(status: DaemonStatus, as_json: bool) -> None:
    if as_json:
        from nbstage.protocol.common.codec import to_wire

        click.echo(orjson.dumps(to_wire(status), option=orjson.OPT_INDENT_2).decode())
    else:
        click.echo(_status_line(status))


def _status_line(status: DaemonStatus | None, socket: Path | None = None) -> str:
    """One line on the daemon; question marks for one that did not answer on ``socket``."""
    if status is None:
        return f"nbstage daemon ? pid ? on {socket}: ? rooms, ? kernels"
    return (
        f"nbstage daemon {status.version} pid {status.pid} "
        f"on {status.socket}: {status.rooms} rooms, {status.kernels} kernels"
    )


@contextlib.contextmanager
def _said_if_settings_refused() -> Iterator[None]:
    """A daemon that refused its settings: what is wrong, in one line, and exit 78."""
    from nbstage.entrypoints.control import daemon_control

    try:
        yield
    except daemon_control.SettingsRefused as exc:
        click.echo(f"nbstage daemon: not started: {exc}", err=True)
        sys.exit(daemon_control.SETTINGS_REFUSED_EXIT)


@daemon.command("start")
@click.option("--foreground", is_flag=True, help="Run in this process instead of detaching.")
@state_dir_option
def daemon_start(foreground: bool, state_dir: str | None) -> None:
    """Start the daemon; if one is running, report it and exit 0."""
    from nbstage.entrypoints.control import daemon_control

    paths = state_paths(state_dir)
    with _said_if_settings_refused():
        if foreground:
            try:
                daemon_control.run_foreground(paths)
            except daemon_control.AlreadyRunning:
                status = daemon_control.query_status(paths)
                click.echo("already running: " + _status_line(status, paths.socket))
            return
        status, started = daemon_control.start_background(paths)
    click.echo("started: " if started else "already running: ", nl=False)
    _print_status(status, False)


@daemon.command("stop")
@state_dir_option
def daemon_stop(state_dir: str | None) -> None:
    """Save every notebook, stop every kernel and end the daemon."""
    from nbstage.entrypoints.control import daemon_control

    pid = daemon_control.stop(state_paths(state_dir))
    click.echo("no daemon running" if pid is None else f"stopped daemon pid {pid}")


@daemon.command("restart")
@state_dir_option
def daemon_restart(state_dir: str | None) -> None:
    """Stop the daemon if it runs, then start a fresh one."""
    from nbstage.entrypoints.control import daemon_control

    paths = state_paths(state_dir)
    daemon_control.stop(paths)
    with _said_if_settings_refused():
        status, _ = daemon_control.start_background(paths)
    click.echo("restarted: ", nl=False)
    _print_status(status, False)


@daemon.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
@state_dir_option
def daemon_status(as_json: bool, state_dir: str | None) -> None:
    """Show the running daemon's identity, socket and counts (exit 1 if none runs)."""
    from nbstage.entrypoints.control import daemon_control

    status = daemon_control.query_status(state_paths(state_dir))
    if status is None:
        click.echo("The nbstage daemon is not running.", err=True)
        sys.exit(1)
    _print_status(status, as_json)


@commands.command("mcp")
@click.option("--label", default=None, help="Display label for this client (default: clientInfo).")
@click.option("--no-autostart", is_flag=True, help="Do not start the daemon if none runs.")
@state_dir_option
def mcp_command(label: str | None, no_autostart: bool, state_dir: str | None) -> None:
    """Serve MCP on stdio: the command an MCP client launches."""
    from nbstage.entrypoints.mcp import mcp_main
    from nbstage.entrypoints.mcp.mcp_args import McpArgs

    # Most starts never come here: cli.py reads the plain forms without click.
    args = McpArgs(label, not no_autostart, state_dir)
    mcp_main.lean_start()
    paths, problem, starting = mcp_main.get_ready(args)
    mcp_main.run_edge(paths, args, problem, starting)


@commands.command("lab")
@click.option("--root-dir", default=None, help="Lab's root (default $NBSTAGE_LAB_ROOT or home).")
@click.option("--port", type=int, default=None, help="Port on 127.0.0.1 (default: a free one).")
@state_dir_option
def lab_command(root_dir: str | None, port: int | None, state_dir: str | None) -> None:
    """Serve the daemon's notebooks to a person, live, in JupyterLab (127.0.0.1, token)."""
    from nbstage.entrypoints.lab import launch

    launch.run(state_paths(state_dir), launch.root_dir(root_dir), port)


@commands.command("admin", context_settings={"ignore_unknown_options": True})
@click.argument("command", nargs=-1)
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON (one-shot).")
@state_dir_option
def admin_command(command: tuple[str, ...], as_json: bool, state_dir: str | None) -> None:
    """The operator's console: interactive with no COMMAND, one-shot with one."""
    from nbstage.entrypoints.admin.console import run_admin

    sys.exit(run_admin(client_paths(state_dir), list(command), as_json))


@commands.command("harness")
@click.argument("script", type=click.Path(exists=True, dir_okay=False))
@click.option("--json", "json_report", default=None, help="Also write a JSON report to this file.")
def harness_command(script: str, json_report: str | None) -> None:
    """Run a scripted multi-client scenario (TOML) against real nbstage processes."""
    from nbstage.entrypoints.harness.main import run_harness

    sys.exit(run_harness(script, json_report))
