"""``nbstage harness SCRIPT.toml``: scripted multi-client runs against real processes (SPEC §9).

The run lives in a fresh temp dir (``nbh-*``) holding the state dir (unless ``[run]
state_dir`` names one, relative to the script's directory) and ``work/``, the clients'
working directory (a client's ``cwd`` is relative to it), where relative notebook paths
land. Whatever the run started is gone when it returns, also after a
failure or Ctrl-C: clients are closed, the daemon is stopped, and any process left of
theirs is killed.

Modules: the script's shape in :mod:`model`, reading it in :mod:`script`
and :mod:`steps`, substitution and expectations in :mod:`match`, the
daemon and the last-resort sweep in :mod:`procs`, clients in
:mod:`clients`, faults in :mod:`faults`, and the steps in
:mod:`run`. The JSON report (``--json FILE``, or ``--json -`` for stdout in place
of the lines) carries per-step timings and outcomes and every pid the run started.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import tempfile
import time
import traceback
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import orjson

from nbstage.entrypoints.common.statedir import StatePaths, prepare, state_paths
from nbstage.entrypoints.control.daemon_control import query_status
from nbstage.entrypoints.harness.clients import all_pids
from nbstage.entrypoints.harness.model import Script, ScriptError
from nbstage.entrypoints.harness.procs import Owned, stop_any_daemon
from nbstage.entrypoints.harness.run import Run, StepResult
from nbstage.entrypoints.harness.script import load_script

BAD_SCRIPT, FAILED, INTERRUPTED = 2, 1, 130
STDOUT = "-"
"""``--json -``: the JSON report goes to stdout in place of the text lines."""
LEFTOVER_GRACE_SECS = 5.0
LAST_STOP_SECS = 45.0


def run_harness(script: str, json_report: str | None) -> int:
    """Run one script; the exit code is 0 only if every step passed."""
    try:
        parsed = load_script(script)
        workspace = Workspace.create(parsed, Path(script).parent)
    except ScriptError as exc:
        print(f"harness: {exc}", file=sys.stderr)
        return BAD_SCRIPT
    report = Report(parsed, script, quiet=json_report == STDOUT)
    run = Run(parsed, workspace.paths, workspace.work_dir, Owned(), report.emit)
    previous = signal.signal(signal.SIGTERM, _interrupt_instead)
    try:
        if anyio.run(_until_terminated, run.execute):
            raise KeyboardInterrupt
    except KeyboardInterrupt:
        report.interrupted = True
        run.fail_unrun("not run: the run was interrupted")
    except Exception:
        report.crash = traceback.format_exc()
        print(f"harness: internal error\n{report.crash}", file=sys.stderr)
    finally:
        # The loop's signal receiver leaves SIGTERM at its default when the loop ends.
        signal.signal(signal.SIGTERM, _interrupt_instead)
        report.leftovers = last_resort(run, workspace)
        signal.signal(signal.SIGTERM, previous)
    return report.finish(run, json_report)


async def _until_terminated(body: Callable[[], Awaitable[None]]) -> bool:
    """Run ``body``; SIGTERM (a CI job's timeout, say) cancels it as Ctrl-C would, and
    then this returns True. The loop takes the signal, so a harness started in the
    background of a script (`nbstage harness x.toml &`), where SIGINT is ignored, ends
    cleanly too."""
    terminated = False
    async with anyio.create_task_group() as group:

        async def cancel_on_sigterm() -> None:
            nonlocal terminated
            with anyio.open_signal_receiver(signal.SIGTERM) as received:
                async for _ in received:
                    terminated = True
                    group.cancel_scope.cancel()

        group.start_soon(cancel_on_sigterm)
        await body()
        group.cancel_scope.cancel()
    return terminated


def _interrupt_instead(signum: int, frame: object) -> None:
    """SIGTERM outside the loop (as the run starts or ends) acts as Ctrl-C would."""
    on_sigint = signal.getsignal(signal.SIGINT)
    if callable(on_sigint):
        on_sigint(signal.SIGINT, frame)
    else:
        raise KeyboardInterrupt


def last_resort(run: Run, workspace: Workspace) -> list[int]:
    """Stop whatever daemon is left, kill whatever process of ours is left, remove the dirs.

    Ctrl-C and SIGTERM are ignored meanwhile, so a second one cannot leave half of it
    undone.
    """
    previous = {sig: signal.signal(sig, signal.SIG_IGN) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        stop_any_daemon(run.paths, run.owned, LAST_STOP_SECS)
        return run.owned.kill_leftovers(LEFTOVER_GRACE_SECS)
    finally:
        workspace.remove()
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@dataclass
class Workspace:
    root: Path
    paths: StatePaths
    work_dir: Path
    own_state: bool

    @classmethod
    def create(cls, script: Script, script_dir: Path) -> Workspace:
        root = Path(tempfile.mkdtemp(prefix="nbh-"))
        given = script.run.state_dir
        paths = state_paths(script_dir / Path(given).expanduser() if given else root / "state")
        if given and query_status(paths) is not None:
            shutil.rmtree(root, ignore_errors=True)
            raise ScriptError(
                f"[run] state_dir {paths.root}: a daemon already runs there; "
                "the harness needs a state dir whose daemon it starts itself"
            )
        prepare(paths)
        work_dir = root / "work"
        work_dir.mkdir()
        return cls(root, paths, work_dir, given is None)

    def remove(self) -> None:
        if self.own_state and self.paths.socket_dir != self.paths.root:
            shutil.rmtree(self.paths.socket_dir, ignore_errors=True)
        shutil.rmtree(self.root, ignore_errors=True)


class Report:
    """The text lines as steps finish, then the summary and the JSON report."""

    def __init__(self, script: Script, path: str, quiet: bool) -> None:
        self.script = script
        self.path = path
        self.quiet = quiet
        self.interrupted = False
        self.crash: str | None = None
        self.leftovers: list[int] = []
        self.t0 = time.monotonic()

    def emit(self, result: StepResult) -> None:
        self.say(result.line())

    def say(self, line: str) -> None:
        """Print to stdout; once a reader closed it (``| head``), the run carries on silently."""
        if self.quiet:
            return
        try:
            print(line, flush=True)
        except BrokenPipeError:
            self.quiet = True
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())

    def exit_code(self, failed: int) -> int:
        if self.interrupted:
            return INTERRUPTED
        return FAILED if failed or self.crash else 0

    def finish(self, run: Run, json_report: str | None) -> int:
        results = sorted(run.results, key=lambda result: result.step.number)
        passed = sum(result.ok for result in results)
        failed = len(results) - passed
        code = self.exit_code(failed)
        if self.leftovers:
            pids = ", ".join(map(str, self.leftovers))
            print(f"harness: killed processes left behind at the end: {pids}", file=sys.stderr)
        if run.setup_error:
            print(f"harness: {run.setup_error}", file=sys.stderr)
        if json_report is not None:
            self._write(self._json(run, results, passed, failed, code), json_report)
        self.say(f"{passed} passed, {failed} failed")
        return code

    def _json(self, run: Run, results: list[StepResult], passed: int, failed: int, code: int):
        return {
            "name": self.script.run.name,
            "script": str(Path(self.path).absolute()),
            "exit_code": code,
            "passed": passed,
            "failed": failed,
            "interrupted": self.interrupted,
            "setup_error": run.setup_error,
            "internal_error": self.crash,
            "duration_secs": round(time.monotonic() - self.t0, 3),
            "settings": self.script.run.settings,
            "state_dir": str(run.paths.root),
            "work_dir": str(run.work_dir),
            "daemon_pids": list(run.daemon.pids),
            "client_pids": all_pids(run.clients.values()),
            "leftovers_killed": self.leftovers,
            "steps": [result.to_json() for result in results],
        }

    def _write(self, document: dict[str, Any], target: str) -> None:
        data = orjson.dumps(document, option=orjson.OPT_INDENT_2, default=str)
        if target == STDOUT:
            sys.stdout.write(data.decode() + "\n")
            sys.stdout.flush()
        else:
            Path(target).write_bytes(data + b"\n")
