"""Compare thespian's system bases on this machine: ask round trip and TCP exposure.

    .venv/bin/python bench/thespian_bases.py [--runs 500]

For each base it prints the median and p90 of an ask() round trip to an echo
actor, and whether any process of the system listens on TCP. This is the
measurement behind the base nbstage uses (see README and docs/adr/0002).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import psutil
from thespian.actors import ActorSystem

sys.path.insert(0, os.path.dirname(__file__))
from bench_actors import Echo

BASES = {
    "simpleSystemBase": {},
    "multiprocQueueBase": {"Process Startup Method": "spawn"},
    "multiprocTCPBase": {"Admin Port": 19777},
}


def listeners(root_pid: int) -> int:
    count = 0
    for proc in psutil.process_iter():
        try:
            mine = proc.pid == root_pid or proc.environ().get("NBSTAGE_BENCH") == str(root_pid)
            if mine:
                count += sum(
                    c.status == psutil.CONN_LISTEN for c in proc.net_connections(kind="inet")
                )
        except psutil.Error:
            continue
    return count


def measure(base: str, caps: dict, runs: int) -> tuple[float, float, int]:
    system = ActorSystem(base, caps, transientUnique=True)
    try:
        echo = system.createActor(Echo)
        for i in range(20):
            system.ask(echo, i, 10)
        samples = []
        for i in range(runs):
            start = time.perf_counter()
            system.ask(echo, i, 10)
            samples.append(time.perf_counter() - start)
        samples.sort()
        return (
            statistics.median(samples) * 1e3,
            samples[int(len(samples) * 0.9)] * 1e3,
            listeners(os.getpid()),
        )
    finally:
        system.shutdown()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=500)
    args = parser.parse_args()
    os.environ["NBSTAGE_BENCH"] = str(os.getpid())
    for base, caps in BASES.items():
        median, p90, listening = measure(base, caps, args.runs)
        print(
            f"{base:20s} ask median {median:6.3f} ms  p90 {p90:6.3f} ms  TCP listeners {listening}"
        )


if __name__ == "__main__":
    main()
