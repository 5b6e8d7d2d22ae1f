"""Round trip of `1+1`: raw jupyter_client against the same through the daemon socket.

Both run in this one process against the same kernelspec, so the difference is
what the daemon adds (socket, edge, Room, Kernel actor and back). Also reports
the memory of an idle room without a kernel, and of a daemon holding 32 of them.

    .venv/bin/python bench/kernel_roundtrip.py [--runs 200]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import psutil
from common import WARMUP, daemon, raw_roundtrips, summarize

from nbstage.entrypoints.common.lifelines import EDGE_PID_ENV
from nbstage.entrypoints.common.statedir import state_paths
from nbstage.entrypoints.control.daemon_client import DaemonClient

ADDED_ROOMS = 32


def daemon_roundtrips(client: DaemonClient, runs: int) -> list[float]:
    notebook = client.request("create")["notebook_id"]
    cell = client.request("create_cell", notebook_id=notebook, source="1+1")["cell_id"]
    samples = []
    for i in range(WARMUP + runs):
        start = time.perf_counter()
        result = client.request("execute", notebook_id=notebook, cell_id=cell, wait_secs=30)
        assert result["execution"]["status"] == "done", result
        if i >= WARMUP:
            samples.append(time.perf_counter() - start)
    return samples


def rss_mb(pid: int) -> float:
    return psutil.Process(pid).memory_info().rss / 2**20


def memory_report(client: DaemonClient, daemon_pid: int) -> tuple[float, float, int]:
    """What one idle room (no kernel) adds to the daemon, the daemon's own RSS with 32 such
    rooms more, and how many processes the daemon is (itself and its kernels)."""
    before = rss_mb(daemon_pid)
    for _ in range(ADDED_ROOMS):
        client.request("create", runtime=None)
    after = rss_mb(daemon_pid)
    processes = 0
    for proc in psutil.process_iter():
        try:
            if proc.pid == daemon_pid or proc.environ().get(EDGE_PID_ENV) == str(daemon_pid):
                processes += 1
        except psutil.Error:
            continue
    return (after - before) / ADDED_ROOMS, after, processes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="nbs-bench-") as tmp:
        work = Path(tmp)
        state = work / "state"
        with daemon(state):
            raw = raw_roundtrips(args.runs, work)
            with DaemonClient(state_paths(state).socket) as client:
                daemon_pid = client.request("identity")["pid"]
                through = daemon_roundtrips(client, args.runs)
                per_room, total, processes = memory_report(client, daemon_pid)
    raw_med, raw_p90 = summarize(raw)
    daemon_med, daemon_p90 = summarize(through)
    print(f"1+1 raw jupyter_client   median {raw_med:6.2f} ms   p90 {raw_p90:6.2f} ms")
    print(f"1+1 through the daemon   median {daemon_med:6.2f} ms   p90 {daemon_p90:6.2f} ms")
    print(f"daemon's added cost      median {daemon_med - raw_med:6.2f} ms   (budget 0.5 ms)")
    print(f"an idle room adds        RSS {per_room:6.2f} MB   (budget 5 MB)")
    print(f"the daemon, 33 rooms     RSS {total:6.1f} MB in {processes} processes (1 kernel)")


if __name__ == "__main__":
    main()
