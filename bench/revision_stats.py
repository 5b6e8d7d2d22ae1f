"""The figures bench/revisions.py reports, their noise, and the report itself.

Every figure (a system's p50 and p90, a revision's ratio to raw and to jupymcp, NEW minus
OLD) is computed from one set of samples, so the same function gives the point value and,
on samples drawn again, its bootstrap interval.
"""

from __future__ import annotations

import random
import statistics
from typing import Any

from common import WARMUP

DRAWS = 2000
SEED = 23
Rounds = list[list[float]]
"""One system's samples (seconds), one list per round."""


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


def verdict(interval: tuple[float, float], differences: list[float]) -> str:
    """NEW against OLD at p50, from the interval of NEW/OLD and the rounds' differences.

    The bootstrap keeps each round's speed, so it misses the noise between rounds; where
    the rounds disagree in sign, that noise is the larger and the verdict says so."""
    low, high = interval
    if low <= 1.0 <= high:
        return "unchanged within noise (the interval holds 1.00x)"
    word = "slower" if low > 1.0 else "faster"
    if any(d > 0 for d in differences) and any(d < 0 for d in differences):
        return f"{word} by the interval, but the rounds disagree in sign: not settled"
    return word


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
        print(f"  verdict at p50: {verdict(ci[f'{new}/{old} p50'], differences)}")
    print()
    print("CPU of each server's processes per timed call (ms; round by round, the mean,")
    print("and the mean by kind of process):")
    for key, values in result["cpu_ms_per_call_by_round"].items():
        known = [v for v in values if v is not None]
        shown = ", ".join("-" if v is None else f"{sum(v.values()):.2f}" for v in values)
        mean = f"{statistics.fmean(sum(v.values()) for v in known):.2f}" if known else "-"
        kinds = sorted({kind for v in known for kind in v})
        parts = [f"{k} {statistics.fmean(v.get(k, 0.0) for v in known):.2f}" for k in kinds]
        print(f"  {names[key]:<32} {shown}  mean {mean}  ({', '.join(parts)})")
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
