"""Round trip of `1+1`: raw jupyter_client against the same through the daemon socket.

Both run in this one process against the same kernelspec, so the difference is
what the daemon adds (socket, edge, Room, Kernel actor and back). Also reports
the memory of an idle room without a kernel, and of a daemon holding 32 of them.

    .venv/bin/python bench/kernel_roundtrip.py [--runs 200]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import psutil
from common import WARMUP, daemon, raw_roundtrips, summarize

from nbstage.entrypoints.daemon_client import DaemonClient
from nbstage.entrypoints.statedir import state_paths


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


def memory_report(client: DaemonClient, daemon_pid: int) -> tuple[float, float]:
    """RSS of one idle room (no kernel), and of every daemon process with 32 such rooms."""
    for _ in range(32):
        client.request("create", runtime=None)
    rooms = client.request("list_rooms")["rooms"]
    idle = [r["room_pid"] for r in rooms if r["kernel_status"] == "none" and r["room_pid"]]
    one_room = statistics.median(rss_mb(pid) for pid in idle)
    total = 0.0
    for proc in psutil.process_iter():
        try:
            if proc.pid == daemon_pid or proc.environ().get("NBSTAGE_EDGE_PID") == str(daemon_pid):
                total += proc.memory_info().rss / 2**20
        except psutil.Error:
            continue
    return one_room, total


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
                one_room, total = memory_report(client, daemon_pid)
    raw_med, raw_p90 = summarize(raw)
    daemon_med, daemon_p90 = summarize(through)
    print(f"1+1 raw jupyter_client   median {raw_med:6.2f} ms   p90 {raw_p90:6.2f} ms")
    print(f"1+1 through the daemon   median {daemon_med:6.2f} ms   p90 {daemon_p90:6.2f} ms")
    print(f"daemon's added cost      median {daemon_med - raw_med:6.2f} ms   (budget 1 ms)")
    print(f"idle room without kernel RSS {one_room:6.1f} MB   (budget 40 MB)")
    print(f"whole daemon, 33 rooms   RSS {total:6.1f} MB")


if __name__ == "__main__":
    main()
