"""`1+1` latency of two git revisions of nbstage, side by side with jupymcp and raw.

Did a change leave `execute_cell` as fast as it was? In one run, against the same machine
load, this times `execute_cell` of `1+1` through the real `nbstage mcp` of each revision,
beside raw jupyter_client over IPC and jupymcp 0.3.2, as bench/peers.py does (its
measuring parts are the ones used here). Each revision is exported and installed once
under ~/.cache/nbstage-bench (bench/checkouts.py) and driven only through its own
`nbstage` command, each round with a fresh daemon in a fresh state dir of its own.

The calls are split into rounds, each system in turn and the order reversed every other
round. It prints each system's p50 and p90, each revision's ratio to raw and to jupymcp,
and the difference between the revisions with two noise estimates: the difference round
by round, and a 95% bootstrap interval (the samples drawn again within each round).

    .venv/bin/python bench/revisions.py [OLD] [NEW] [--runs 200] [--rounds 4] [--json out.json]

OLD and NEW default to aa4170e (before issue 23's refactor) and HEAD.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import orjson
from checkouts import Checkout, prepare, repository
from common import WARMUP, raw_roundtrips
from peers import (
    BENCH,
    JUPYMCP_VERSION,
    Failures,
    ServerFailed,
    Setup,
    check_nbstage_exec,
    ensure_jupymcp,
    execute_round,
    jupymcp_spawn,
    log,
    mcp_latency,
    nbstage_cold_setup,
    nbstage_latency_setup,
    spawned,
    start_daemon,
    stop_daemon,
)

DRAWS = 2000
SEED = 23
Rounds = list[list[float]]
"""One system's samples (seconds), one list per round."""


def revision_round(
    checkout: Checkout,
    runs: int,
    where: Path,
    leaks: list[str],
    setup: Setup = nbstage_latency_setup,
) -> list[float]:
    """A daemon of this revision in a fresh state dir, then its `nbstage mcp`, timed."""
    state = where / "state"
    tag = uuid.uuid4().hex
    try:
        start_daemon(state, tag, checkout.cli, checkout.env)
        args = ["mcp", "--state-dir", str(state)]
        spawn = spawned(f"nbstage {checkout.name}", where, checkout.cli[0], args, checkout.env)
        try:
            return anyio.run(mcp_latency, spawn, setup, check_nbstage_exec, runs, leaks)
        except Exception as exc:
            raise ServerFailed(exc, spawn.stderr) from exc
    finally:
        stop_daemon(state, tag, leaks, checkout.cli, checkout.env)


def jupymcp_round(runs: int, where: Path, leaks: list[str]) -> list[float]:
    return execute_round(jupymcp_spawn("jupymcp", where), runs, leaks)["jupymcp"]


def measure(
    checkouts: list[Checkout], runs: int, rounds: int, work: Path, leaks: list[str]
) -> tuple[dict[str, Rounds], Failures]:
    errors = Failures()
    systems: dict[str, Callable[[int, Path], list[float]]] = {
        "raw": raw_roundtrips,
        "jupymcp": lambda n, where: jupymcp_round(n, where, leaks),
    }
    try:
        ensure_jupymcp()
    except Exception as exc:
        errors.record("jupymcp install", exc)
        del systems["jupymcp"]
    for checkout in checkouts:
        systems[checkout.label] = lambda n, where, c=checkout: revision_round(c, n, where, leaks)
        where = work / f"warm-{uuid.uuid4().hex[:8]}"
        where.mkdir()
        log(f"warm-up of {checkout.name} (its kernel template, caches; not counted)")
        try:  # patient: the first kernel of a fresh install may wait for its template
            revision_round(checkout, 1, where, leaks, nbstage_cold_setup)
        except Exception as exc:  # the timed rounds will fail too, and say so
            errors.record(f"warm-up {checkout.label}", exc)
    samples: dict[str, Rounds] = {name: [] for name in systems}
    per_round = runs // rounds
    order = list(systems.items())
    for number in range(rounds):
        for name, run_round in order if number % 2 == 0 else order[::-1]:
            log(f"round {number + 1}/{rounds}: {name}, {WARMUP} + {per_round} calls")
            where = work / f"{number}-{uuid.uuid4().hex[:8]}"
            where.mkdir()
            taken: list[float] = []  # a failed round stays, empty, so rounds keep their places
            try:
                taken = run_round(per_round, where)
            except ServerFailed as failed:  # recorded; the run goes on
                errors.record(name, failed.error, failed.stderr)
            except Exception as exc:
                errors.record(name, exc)
            samples[name].append(taken)
    return samples, errors


# --- statistics ---------------------------------------------------------------------------


def p50(samples: list[float]) -> float:
    return statistics.median(samples)


def p90(samples: list[float]) -> float:
    """Nearest rank, as common.summarize."""
    ordered = sorted(samples)
    return ordered[int(len(ordered) * 0.9)]


QUANTILES = {"p50": p50, "p90": p90}


def figures(flat: dict[str, list[float]], old: str, new: str) -> dict[str, float]:
    """Every figure the report gives, from one set of samples (ms, or plain ratios)."""
    found: dict[str, float] = {}
    for q, of in QUANTILES.items():
        at = {name: of(samples) for name, samples in flat.items() if samples}
        for name, value in at.items():
            found[f"{name} {q}"] = value * 1000
        for rev in (old, new):
            for base in ("raw", "jupymcp"):
                if rev in at and base in at:
                    found[f"{rev}/{base} {q}"] = at[rev] / at[base]
        if old in at and new in at:
            found[f"{new}-{old} {q}"] = (at[new] - at[old]) * 1000
            found[f"{new}/{old} {q}"] = at[new] / at[old]
    return found


def flatten(rounds: Rounds) -> list[float]:
    return [s for one in rounds for s in one]


def bootstrap(
    samples: dict[str, Rounds], old: str, new: str, draws: int
) -> dict[str, tuple[float, float]]:
    """A 95% interval for every figure: each system's samples drawn again with
    replacement within each round (so a round's speed stays that round's)."""
    rng = random.Random(SEED)
    seen: dict[str, list[float]] = {}
    for _ in range(draws):
        again = {
            name: [s for one in rounds for s in rng.choices(one, k=len(one))]
            for name, rounds in samples.items()
        }
        for key, value in figures(again, old, new).items():
            seen.setdefault(key, []).append(value)
    low, high = int(draws * 0.025), int(draws * 0.975) - 1
    return {key: (sorted(v)[low], sorted(v)[high]) for key, v in seen.items()}


def by_round(samples: dict[str, Rounds], old: str, new: str) -> list[float]:
    """NEW's p50 minus OLD's, round by round (ms): the spread between rounds."""
    pairs = zip(samples.get(old, []), samples.get(new, []), strict=False)
    return [(p50(b) - p50(a)) * 1000 for a, b in pairs if a and b]


def verdict(interval: tuple[float, float]) -> str:
    low, high = interval
    if low <= 1.0 <= high:
        return "unchanged within noise (the interval holds 1.00x)"
    return "slower" if low > 1.0 else "faster"


# --- the report ---------------------------------------------------------------------------


def report(result: dict[str, Any], names: dict[str, str]) -> None:
    old, new = result["old"], result["new"]
    point, ci = result["figures"], result["intervals"]
    config = result["config"]

    def with_ci(key: str, unit: str, digits: int = 2) -> str:
        if key not in point:
            return "failed"
        low, high = ci[key]
        sign = "+" if unit == " ms" else ""
        return (
            f"{point[key]:{sign}.{digits}f}{unit} [{low:{sign}.{digits}f}, {high:{sign}.{digits}f}]"
        )

    print(
        f"execute_cell `1+1`, {config['per_round']} calls x {config['rounds']} rounds per system "
        f"after {WARMUP} warm-up each (client wall-clock, ms; [95% bootstrap interval])"
    )
    print(f"{'system':<34} {'p50':>8} {'p90':>8}")
    for key, name in names.items():
        if f"{key} p50" in point:
            print(f"{name:<34} {point[f'{key} p50']:8.2f} {point[f'{key} p90']:8.2f}")
        else:
            print(f"{name:<34} {'failed':>8}")
    print()
    for q in QUANTILES:
        print(f"{'ratio at ' + q:<34} {'/ raw':<22} {'/ jupymcp':<22}")
        for rev in (old, new):
            cells = [with_ci(f"{rev}/{base} {q}", "x") for base in ("raw", "jupymcp")]
            print(f"{names[rev]:<34} {cells[0]:<22} {cells[1]:<22}")
    print()
    label = f"{names[new]} - {names[old]}"
    print(label)
    for q in QUANTILES:
        print(
            f"  {q}: {with_ci(f'{new}-{old} {q}', ' ms')};"
            f" ratio {with_ci(f'{new}/{old} {q}', 'x', 3)}"
        )
    differences = result["p50_difference_by_round"]
    slower = sum(d > 0 for d in differences)
    rounds = ", ".join(f"{d:+.2f}" for d in differences)
    print(f"  p50 difference round by round (ms): {rounds} ({slower} of {len(differences)} slower)")
    if f"{new}/{old} p50" in ci:
        print(f"  verdict at p50: {verdict(ci[f'{new}/{old} p50'])}")
    load = config["load_average"]
    print()
    print(
        f"load average (1, 5, 15 min): {load['start'][0]:.2f} {load['start'][1]:.2f} "
        f"{load['start'][2]:.2f} at the start, {load['end'][0]:.2f} {load['end'][1]:.2f} "
        f"{load['end'][2]:.2f} at the end; {config['cpus']} CPUs; {config['duration_s']:.0f} s"
    )
    for name, error in result["errors"].items():
        print(f"FAILED {name}: {error}")
    for leak in result["leaks"]:
        print(f"LEAK {leak}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("old", nargs="?", default="aa4170e", help="the revision before")
    parser.add_argument("new", nargs="?", default="HEAD", help="the revision after")
    parser.add_argument("--runs", type=int, default=200, help="timed calls per system")
    parser.add_argument("--rounds", type=int, default=4, help="rounds the calls are split into")
    parser.add_argument("--draws", type=int, default=DRAWS, help="bootstrap draws")
    parser.add_argument("--json", dest="json_file", default=None, help="also write results here")
    args = parser.parse_args()
    if args.runs < 1 or not 1 <= args.rounds <= args.runs:
        parser.error("--runs must be at least 1, and --rounds between 1 and --runs")
    repo = repository(BENCH)
    checkouts = [prepare(repo, args.old), prepare(repo, args.new)]
    if checkouts[0].sha == checkouts[1].sha:
        log(f"{args.old} and {args.new} are one commit: the difference is the noise alone")
        checkouts[1] = Checkout(f"{args.new} (again)", checkouts[1].sha, checkouts[1].root)
    old, new = (c.label for c in checkouts)
    leaks: list[str] = []
    started, load_start = time.time(), os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="nbs-revisions-") as tmp:
        samples, errors = measure(checkouts, args.runs, args.rounds, Path(tmp), leaks)
    flat = {name: flatten(rounds) for name, rounds in samples.items()}
    result: dict[str, Any] = {
        "old": old,
        "new": new,
        "commits": {c.label: c.sha for c in checkouts},
        "figures": figures(flat, old, new),
        "intervals": bootstrap(samples, old, new, args.draws),
        "p50_difference_by_round": by_round(samples, old, new),
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
