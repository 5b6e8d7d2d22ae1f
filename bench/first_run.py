"""A new user's first `1+1`, next to a returning user's and jupymcp's cold start.

Each round, in turn (the order reversed every other round, so a machine whose speed
drifts weighs on every case alike), spawn an MCP server with no daemon running and time
spawn → initialize → create_notebook → the first `1+1` result:

- **first run**: a fresh state dir and a fresh template folder (`NBSTAGE_TEMPLATE_DIR`),
  which the install step filled before the clock started, as `make install` does on a
  machine where nbstage was just installed;
- **returning user**: a fresh state dir, the template the user already has;
- **no template**: a fresh state dir and an empty template folder, as after a `pip
  install` that skipped `make` (the first kernel waits for uv);
- **jupymcp**: its own cold start (bench/peers.py installs it the first time).

Every run reports its medians and the ratios to jupymcp's in the same run.

    .venv/bin/python bench/first_run.py [--rounds 3] [--json results.json]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import anyio
import orjson
from common import warm_client_library
from peers import (
    Failures,
    Spawn,
    check_jupymcp_exec,
    check_nbstage_exec,
    cold_start,
    ensure_jupymcp,
    jupymcp_setup,
    jupymcp_spawn,
    nbstage_cold_setup,
    nbstage_spawn,
    reap,
    stop_daemon,
    tagged_processes,
)

from nbstage.actors.daemon.environment.environments import TEMPLATE_DIR_ENV

INSTALL_STEP = (
    "from nbstage.actors.daemon.environment.environments import ensure_template, template_root; "
    "ensure_template(template_root())"
)
CASES = ("first run", "returning user", "no template", "jupymcp")


def with_templates(spawn: Spawn, folder: Path | None) -> Spawn:
    if folder is None:
        return spawn
    env = {**spawn.params.env, TEMPLATE_DIR_ENV: str(folder)}
    return replace(spawn, params=spawn.params.model_copy(update={"env": env}))


def install_into(folder: Path) -> float:
    """What `make install` does for the template, into ``folder``; its seconds."""
    start = time.perf_counter()
    env = {**os.environ, TEMPLATE_DIR_ENV: str(folder)}
    subprocess.run([sys.executable, "-c", INSTALL_STEP], env=env, check=True, timeout=600)
    return time.perf_counter() - start


def one(case: str, work: Path, leaks: list[str], errors: Failures) -> dict | None:
    if case == "jupymcp":
        spawn = jupymcp_spawn("cold jupymcp", work / "jupymcp")
        try:
            return anyio.run(cold_start, spawn, jupymcp_setup, check_jupymcp_exec, leaks)
        except Exception as exc:
            errors.record(case, exc, spawn.stderr)
            return None
        finally:
            reap({p.pid for p in tagged_processes(spawn.tag)}, case, leaks)
    templates = None if case == "returning user" else work / "templates"
    extra: dict[str, float] = {}
    if case == "first run":
        extra["install_step_s"] = install_into(templates)
    state = work / "state"
    spawn = with_templates(nbstage_spawn(case, state, work), templates)
    try:
        timing = anyio.run(cold_start, spawn, nbstage_cold_setup, check_nbstage_exec, leaks)
        return {**timing, **extra}
    except Exception as exc:
        errors.record(case, exc, spawn.stderr)
        return None
    finally:
        stop_daemon(state, spawn.tag, leaks)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    warm_client_library()
    ensure_jupymcp()
    leaks: list[str] = []
    errors = Failures()
    samples: dict[str, list[float]] = {case: [] for case in CASES}
    with tempfile.TemporaryDirectory(prefix="nbs-first-") as tmp:
        for round_ in range(args.rounds):
            order = CASES if round_ % 2 == 0 else tuple(reversed(CASES))
            for case in order:
                work = Path(tmp) / f"{case.replace(' ', '-')}-{round_}"
                work.mkdir(parents=True)
                timing = one(case, work, leaks, errors)
                if timing is not None:
                    samples[case].append(timing["first_result_s"])
                    print(f"round {round_} {case}: {timing['first_result_s'] * 1000:.0f} ms")
    medians = {case: statistics.median(s) for case, s in samples.items() if s}
    report = {"rounds": args.rounds, "samples_s": samples, "median_s": medians}
    print()
    print("spawn to the first `1+1` result, median of", args.rounds)
    for case, median in medians.items():
        ratio = ""
        if "jupymcp" in medians and case != "jupymcp":
            ratio = f"  {median / medians['jupymcp']:.2f}x jupymcp"
            report.setdefault("ratio_to_jupymcp", {})[case] = median / medians["jupymcp"]
        print(f"  {case:15} {median * 1000:7.0f} ms{ratio}")
    if errors.lines:
        report["errors"] = errors.lines
        print("errors:", errors.lines, file=sys.stderr)
    if leaks:
        report["leaks"] = leaks
        print("leaks:", leaks, file=sys.stderr)
    if args.json:
        Path(args.json).write_bytes(orjson.dumps(report, option=orjson.OPT_INDENT_2))


if __name__ == "__main__":
    main()
