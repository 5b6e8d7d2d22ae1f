"""`1+1` latency of two git revisions of nbstage, side by side with jupymcp and raw.

Did a change leave `execute_cell` as fast as it was? In one run, against the same machine
load, this times `execute_cell` of `1+1` through the real `nbstage mcp` of each revision,
beside raw jupyter_client over IPC and jupymcp 0.3.2, with bench/peers.py's measuring
parts (its servers, setups, checks and cleanup). Each revision is exported and installed
once under ~/.cache/nbstage-bench (bench/checkouts.py) and driven only through its own
`nbstage` command, each round with a fresh daemon in a fresh state dir of its own.

Each round starts every system afresh, gives each WARMUP untimed calls, and then calls
them by turns, one call each and the order rotated every turn, so that a machine whose
speed changes from one second to the next (a shared one does) weighs on every system
alike; processes start in the opposite order every other round. It prints each system's
p50 and p90, each revision's ratio to raw and to jupymcp, and NEW minus OLD with two
noise estimates: the difference round by round, and a 95% bootstrap interval
(bench/revision_stats.py). Beside the latency, the CPU seconds each server's processes
(edge, session child, daemon, kernel; jupymcp and its kernel) spend per timed call
(bench/process_cpu.py): a figure that waits for no core, though a loaded machine still
blurs it (caches, and the 10 ms tick of the kernel's accounting).

    .venv/bin/python bench/revisions.py [OLD] [NEW] [--runs 200] [--rounds 4] [--json out.json]

OLD and NEW default to aa4170e (before issue 23's refactor) and HEAD.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import uuid
from contextlib import AsyncExitStack
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import orjson
from checkouts import Checkout, prepare, prune, repository, resolve
from common import WARMUP, warm_client_library
from peers import (
    BENCH,
    JUPYMCP_VERSION,
    Failures,
    budget,
    ensure_jupymcp,
    log,
    nbstage_cold_setup,
)
from process_cpu import cpu_by_pid, spent
from revision_stats import DRAWS, Rounds, bootstrap, by_round, figures, report
from timed_systems import (
    Failed,
    Opener,
    Ready,
    attributed,
    innermost,
    jupymcp_system,
    raw_system,
    revision_system,
)

# --- rounds -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Taken:
    """One system's round: its latencies (seconds), and the CPU seconds its server's
    processes spent per timed call (None for raw)."""

    samples: list[float]
    cpu_per_call: dict[str, float] | None


async def one_round(openers: dict[str, Opener], runs: int, where: Path) -> dict[str, Taken]:
    """Open every system in the given order, WARMUP calls each, then ``runs`` turns."""
    names = list(openers)
    with anyio.fail_after(budget(len(names) * (WARMUP + runs))):
        async with AsyncExitStack() as stack:
            ready: dict[str, Ready] = {}
            for index, name in enumerate(names):
                place = where / f"system-{index}"
                place.mkdir()
                opened = stack.enter_async_context(openers[name](place))
                ready[name] = await attributed(name, opened)
            for _ in range(WARMUP):
                for name in names:
                    await attributed(name, ready[name].call())
            samples: dict[str, list[float]] = {name: [] for name in names}
            before = {name: cpu_by_pid(ready[name].tags) for name in names}
            for turn in range(runs):
                first = turn % len(names)
                for name in names[first:] + names[:first]:
                    samples[name].append(await attributed(name, ready[name].call()))
            cpu = {
                name: {
                    kind: seconds / runs
                    for kind, seconds in spent(before[name], cpu_by_pid(ready[name].tags)).items()
                }
                for name in names
                if ready[name].tags
            }
    return {name: Taken(samples[name], cpu.get(name)) for name in names}


def run_round(
    openers: dict[str, Opener], runs: int, where: Path, errors: Failures
) -> dict[str, Taken]:
    where.mkdir()
    try:
        return anyio.run(one_round, openers, runs, where)
    except Exception as exc:  # recorded; the run goes on
        failed = innermost(exc)
        if isinstance(failed, Failed):
            errors.record(failed.name, failed.error, failed.stderr)
        else:
            errors.record(f"round in {where.name}", failed)
        return {}


def measure(
    checkouts: list[Checkout], runs: int, rounds: int, work: Path, leaks: list[str]
) -> tuple[dict[str, Rounds], dict[str, list[dict[str, float] | None]], Failures]:
    errors = Failures()
    openers: dict[str, Opener] = {"raw": raw_system}
    try:
        ensure_jupymcp()
        openers["jupymcp"] = partial(jupymcp_system, leaks=leaks)
    except Exception as exc:
        errors.record("jupymcp install", exc)
    for checkout in checkouts:
        log(f"warm-up of {checkout.name} (its kernel template, caches; not counted)")
        # patient: the first kernel of a fresh install may wait for its template
        warm = partial(revision_system, checkout, leaks=leaks, setup=nbstage_cold_setup)
        run_round({checkout.label: warm}, 1, work / f"warm-{uuid.uuid4().hex[:8]}", errors)
        openers[checkout.label] = partial(revision_system, checkout, leaks=leaks)
    samples: dict[str, Rounds] = {name: [] for name in openers}
    cpu: dict[str, list[dict[str, float] | None]] = {name: [] for name in openers}
    per_round = runs // rounds
    for number in range(rounds):
        names = list(openers) if number % 2 == 0 else list(openers)[::-1]
        log(f"round {number + 1}/{rounds}: {', '.join(names)}; {WARMUP} + {per_round} turns")
        where = work / f"round-{number}"
        got = run_round({name: openers[name] for name in names}, per_round, where, errors)
        for name in openers:  # a failed round stays, empty, so rounds keep their places
            taken = got.get(name, Taken([], None))
            samples[name].append(taken.samples)
            cpu[name].append(taken.cpu_per_call)
    return samples, cpu, errors


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("old", nargs="?", default="aa4170e", help="the revision before")
    parser.add_argument("new", nargs="?", default="HEAD", help="the revision after")
    parser.add_argument("--runs", type=int, default=200, help="timed calls per system")
    parser.add_argument("--rounds", type=int, default=4, help="rounds the calls are split into")
    parser.add_argument("--draws", type=int, default=DRAWS, help="bootstrap draws")
    parser.add_argument("--json", dest="json_file", default=None, help="also write results here")
    parser.add_argument(
        "--prune", action="store_true", help="remove every other cached revision first"
    )
    args = parser.parse_args()
    warm_client_library()
    if args.runs < 1 or not 1 <= args.rounds <= args.runs:
        parser.error("--runs must be at least 1, and --rounds between 1 and --runs")
    repo = repository(BENCH)
    if args.prune:
        removed = prune({resolve(repo, rev) for rev in (args.old, args.new)})
        log(f"pruned cached revisions: {', '.join(removed) or 'none'}")
    checkouts = [prepare(repo, args.old), prepare(repo, args.new)]
    if checkouts[0].sha == checkouts[1].sha:
        log(f"{args.old} and {args.new} are one commit: the difference is the noise alone")
        checkouts[1] = Checkout(f"{args.new} (again)", checkouts[1].sha, checkouts[1].root)
    old, new = (c.label for c in checkouts)
    leaks: list[str] = []
    started, load_start = time.time(), os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="nbs-revisions-") as tmp:
        samples, cpu, errors = measure(checkouts, args.runs, args.rounds, Path(tmp), leaks)
    flat = {name: [s for one in rounds for s in one] for name, rounds in samples.items()}
    result: dict[str, Any] = {
        "old": old,
        "new": new,
        "commits": {c.label: c.sha for c in checkouts},
        "figures": figures(flat, old, new),
        "intervals": bootstrap(samples, old, new, args.draws),
        "p50_difference_by_round": by_round(samples, old, new),
        "cpu_ms_per_call_by_round": {
            name: [None if c is None else {k: v * 1000 for k, v in c.items()} for c in values]
            for name, values in cpu.items()
            if any(c is not None for c in values)
        },
        "errors": errors.lines,
        "stderr_tails": errors.stderr_tails,
        "leaks": leaks,
        "samples_ms": {name: [[s * 1000 for s in one] for one in r] for name, r in samples.items()},
        "config": {
            "runs": args.runs,
            "rounds": args.rounds,
            "per_round": args.runs // args.rounds,
            "warmup": WARMUP,
            "draws": args.draws,
            "cpus": os.cpu_count(),
            "load_average": {"start": load_start, "end": os.getloadavg()},
            "started": started,
            "duration_s": time.time() - started,
        },
    }
    names = {
        "raw": "raw jupyter_client (IPC)",
        "jupymcp": f"jupymcp {JUPYMCP_VERSION} execute",
        **{c.label: f"nbstage {c.name}" for c in checkouts},
    }
    report(result, names)
    if args.json_file:
        Path(args.json_file).write_bytes(orjson.dumps(result, option=orjson.OPT_INDENT_2))
    if result["errors"] or leaks:
        sys.exit(1)


if __name__ == "__main__":
    main()
