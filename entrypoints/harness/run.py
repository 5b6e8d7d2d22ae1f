"""Carrying out a harness script: its daemon, its clients, its steps and its faults."""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import orjson

from nbstage.entrypoints.common.statedir import StatePaths
from nbstage.entrypoints.harness.clients import McpClient
from nbstage.entrypoints.harness.faults import FAULTS
from nbstage.entrypoints.harness.match import (
    BUILTIN_NAME,
    Outcome,
    SubstitutionError,
    check,
    shorten,
    substitute,
)
from nbstage.entrypoints.harness.model import Script, Step, batches
from nbstage.entrypoints.harness.procs import ClientUnusable, Daemon, FaultError, Owned

CLOSE_SECS = 60.0
"""Bound on closing the clients, and separately on stopping the daemon, at the end."""
BACKOFF_FIRST, BACKOFF_MAX = 0.1, 1.0
KEPT_ATTEMPTS = 20
"""How many missed attempts of one step the JSON report keeps."""
DESCRIBED_ARGS = 60
"""A step's line shows at most this much of its arguments."""
log = logging.getLogger(__name__)


class StepFailed(Exception):
    """A step did not hold; ``expected`` and ``got`` say how, or the message does."""

    def __init__(self, reason: str, expected: str | None = None, got: Outcome | None = None):
        super().__init__(reason)
        self.expected = expected
        self.got = got


@dataclass
class StepResult:
    step: Step
    description: str
    ok: bool
    duration: float
    started: float
    attempts: int = 0
    detail: str | None = None
    reason: str | None = None
    expected: str | None = None
    got: Outcome | None = None
    retried: list[str] = field(default_factory=list)
    """What the attempts that missed came back with (within_secs), oldest first."""

    def line(self) -> str:
        head = f"{'PASS' if self.ok else 'FAIL'}  {self.step.number:>2}  {self.description}"
        if self.detail:
            head += f" ({self.detail})"
        head += f"  {self.duration:.2f}s"
        if self.ok:
            return head
        if self.expected is not None and self.got is not None:
            return f"{head}  expected {self.expected}; got {self.got.summary()}"
        return f"{head}  {shorten(self.reason or 'failed', 400)}"

    def to_json(self) -> dict[str, Any]:
        step = self.step
        return {
            "number": step.number,
            "line": step.line,
            "kind": "call" if step.call else "fault",
            "client": step.client or step.params.get("client"),
            "call": step.call,
            "fault": step.fault,
            "group": step.group,
            "description": self.description,
            "status": "pass" if self.ok else "fail",
            "started_secs": round(self.started, 3),
            "duration_secs": round(self.duration, 3),
            "attempts": self.attempts,
            "detail": self.detail,
            "reason": self.reason,
            "expected": self.expected,
            "got": self.got.to_json() if self.got else None,
            "missed_attempts": self.retried,
        }


def describe(step: Step) -> str:
    if step.call:
        args = orjson.dumps(step.args).decode() if step.args else ""
        if len(args) > DESCRIBED_ARGS:
            args = args[: DESCRIBED_ARGS - 1] + "…"
        return f"{step.client} {step.call} {args}".rstrip()
    params = " ".join(
        f"{value}s" if key == "secs" else str(value) for key, value in step.params.items()
    )
    return f"fault {step.fault} {params}".rstrip()


@dataclass
class Run:
    script: Script
    paths: StatePaths
    work_dir: Path
    owned: Owned
    emit: Callable[[StepResult], None]
    daemon: Daemon = field(init=False)
    clients: dict[str, McpClient] = field(init=False)
    saved: dict[str, Any] = field(init=False)
    unsaved: dict[str, int] = field(default_factory=dict)
    """Save names whose step failed, with that step's number."""
    results: list[StepResult] = field(default_factory=list)
    setup_error: str | None = None
    t0: float = field(default_factory=time.monotonic)
    task_group: anyio.abc.TaskGroup = field(init=False)

    def __post_init__(self) -> None:
        env = self.script.run.settings
        self.daemon = Daemon(self.paths, env, self.owned)
        self.clients = {
            name: McpClient(spec, self.paths, self._cwd(spec.cwd), env)
            for name, spec in self.script.clients.items()
        }
        builtin = {"work_dir": str(self.work_dir), "state_dir": str(self.paths.root)}
        self.saved = {BUILTIN_NAME: builtin}

    def _cwd(self, cwd: str | None) -> Path:
        path = self.work_dir / cwd if cwd else self.work_dir
        path.mkdir(parents=True, exist_ok=True)
        return path

    # --- the whole run --------------------------------------------------------------------

    async def execute(self) -> None:
        """Start everything, run the steps within timeout_secs, then end what was started."""
        try:
            async with anyio.create_task_group() as task_group:
                self.task_group = task_group
                try:
                    with anyio.move_on_after(self.script.run.timeout_secs):
                        await self._setup()
                        if self.setup_error is None:
                            await self._run_steps()
                finally:
                    with anyio.CancelScope(shield=True), anyio.move_on_after(CLOSE_SECS):
                        await self.close_clients()
        finally:
            with anyio.CancelScope(shield=True), anyio.move_on_after(CLOSE_SECS):
                await _quietly(self.daemon.stop)
        timeout = f"not run: timeout_secs ({self.script.run.timeout_secs:g}) ran out"
        self.fail_unrun(f"not run: {self.setup_error}" if self.setup_error else timeout)

    def elapsed(self) -> float:
        return time.monotonic() - self.t0

    async def _setup(self) -> None:
        try:
            await self.daemon.start()
        except Exception as exc:
            self.setup_error = f"the daemon did not start: {exc}"
            return
        async with anyio.create_task_group() as starting:
            for client in self.clients.values():
                starting.start_soon(self._start_client_quietly, client)

    async def _start_client_quietly(self, client: McpClient) -> None:
        try:
            await client.start(self.task_group, self.owned)
        except FaultError as exc:
            client.problem = str(exc)

    async def close_clients(self) -> None:
        async with anyio.create_task_group() as closing:
            for client in self.clients.values():
                if client.running:
                    closing.start_soon(_quietly, client.stop)

    def fail_unrun(self, reason: str) -> None:
        done = {result.step.number for result in self.results}
        for step in self.script.steps:
            if step.number not in done:
                result = StepResult(step, describe(step), False, 0.0, self.elapsed())
                result.reason = reason
                self._record(result)

    def _record(self, result: StepResult) -> None:
        self.results.append(result)
        self.emit(result)

    # --- steps ----------------------------------------------------------------------------

    async def _run_steps(self) -> None:
        for batch in batches(self.script.steps):
            running: dict[int, float] = {}
            finished: list[StepResult] = []
            try:
                async with anyio.create_task_group() as group:
                    for step in batch:
                        group.start_soon(self._run_step, step, running, finished)
            finally:
                self._report_batch(batch, running, finished)

    def _report_batch(self, batch: list[Step], running: dict, finished: list[StepResult]):
        by_number = {result.step.number: result for result in finished}
        for step in batch:
            result = by_number.get(step.number)
            if result is None and step.number in running:
                started = running[step.number]
                result = StepResult(step, describe(step), False, self.elapsed() - started, started)
                result.reason = f"cancelled: {self._why_cancelled()}"
            if result is not None:
                self._record(result)

    def _why_cancelled(self) -> str:
        timeout = self.script.run.timeout_secs
        if self.elapsed() >= timeout:
            return f"timeout_secs ({timeout:g}) ran out"
        return "the run was interrupted"

    async def _run_step(self, step: Step, running: dict, finished: list[StepResult]) -> None:
        started = running[step.number] = self.elapsed()
        result = StepResult(step, describe(step), True, 0.0, started)
        try:
            if step.call:
                await self._call(step, result)
            else:
                params = substitute(step.params, self.saved)
                result.detail = await FAULTS[step.fault](self, params)
        except StepFailed as exc:
            result.ok, result.reason = False, str(exc)
            result.expected, result.got = exc.expected, exc.got
        except SubstitutionError as exc:
            result.ok, result.reason = False, self._explain(exc)
        except (FaultError, ClientUnusable) as exc:
            result.ok, result.reason = False, str(exc)
        except Exception as exc:
            result.ok, result.reason = False, f"{type(exc).__name__}: {exc}"
        result.duration = self.elapsed() - started
        if step.save and not result.ok:
            self.saved.pop(step.save, None)
            self.unsaved[step.save] = step.number
        finished.append(result)

    async def _call(self, step: Step, result: StepResult) -> None:
        client = self.clients[step.client]
        args = substitute(step.args, self.saved)
        expect = replace(
            step.expect,
            text_contains=substitute(step.expect.text_contains, self.saved),
            text_not_contains=substitute(step.expect.text_not_contains, self.saved),
            json=substitute(step.expect.json, self.saved),
        )
        deadline = self.elapsed() + (expect.within_secs or 0.0)
        delay = BACKOFF_FIRST
        while True:
            result.attempts += 1
            result.got = await client.call(step.call, args)
            problems = check(expect, result.got)
            if not problems:
                break
            left = deadline - self.elapsed()
            if len(result.retried) < KEPT_ATTEMPTS:
                result.retried.append(f"{'; '.join(problems)} ← {result.got.summary(160)}")
            if left <= 0:
                raise StepFailed("expectations not met", _expected(problems, result), result.got)
            await anyio.sleep(min(delay, left))
            delay = min(delay * 2, BACKOFF_MAX)
        if step.save:
            self.saved[step.save] = result.got.structured
            self.unsaved.pop(step.save, None)

    def _explain(self, exc: SubstitutionError) -> str:
        failed = self.unsaved.get(exc.name) if exc.name else None
        if failed is None:
            return str(exc)
        return f"{exc} (step {failed}, which saves it, failed)"


def _expected(problems: list[str], result: StepResult) -> str:
    within = result.step.expect.within_secs
    tried = f" (within {within:g}s; {result.attempts} attempts)" if within else ""
    return "; ".join(problems) + tried


async def _quietly(action: Callable[[], Awaitable[Any]]) -> None:
    try:
        await action()
    except Exception:
        log.exception("ending a harness process failed")
