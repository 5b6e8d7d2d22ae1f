"""What the journal adds to an acknowledged edit: set_cell through the daemon socket.

An ephemeral notebook journals nothing, so its set_cell is the edit as it was before
the journal; a persisted untitled and a file-backed notebook answer only once the
edit's journal record is written. The three are edited in turn, one call each, so
they share the machine's moments. Autosave is put an hour away and the notebook file
names no installed kernelspec, so no save and no kernel runs beside the edits. The
numbers feed docs/notes/journal.md.

    .venv/bin/python bench/journal_latency.py [--runs 2000]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import orjson
from common import WARMUP, daemon

from nbstage.entrypoints.common.statedir import state_paths
from nbstage.entrypoints.control.daemon_client import DaemonClient

QUIET = {"NBSTAGE_AUTOSAVE_DELAY_SECS": "3600", "NBSTAGE_AUTOSAVE_MAX_DELAY_SECS": "3600"}
NO_KERNEL = {"kernelspec": {"name": "nosuch", "display_name": "-", "language": "nosuch"}}


def percentiles(samples: list[float]) -> str:
    ordered = sorted(samples)
    at = [ordered[int(len(ordered) * q)] * 1000 for q in (0.5, 0.9, 0.99)]
    return (
        f"median {at[0]:6.3f}  p90 {at[1]:6.3f}  p99 {at[2]:6.3f}  max {ordered[-1] * 1000:6.3f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=2000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="nbs-bench-") as tmp:
        work = Path(tmp)
        state = work / "state"
        path = work / "bench.ipynb"
        path.write_bytes(
            orjson.dumps({"cells": [], "metadata": NO_KERNEL, "nbformat": 4, "nbformat_minor": 5})
        )
        with (
            daemon(state, {**os.environ, **QUIET}),
            DaemonClient(state_paths(state).socket) as client,
        ):
            notebooks = {
                "ephemeral (no journal)": client.request("create", runtime=None)["notebook_id"],
                "persisted untitled": client.request("create", runtime=None, ephemeral=False)[
                    "notebook_id"
                ],
                "file-backed": client.request("open", path=str(path))["notebook_id"],
            }
            cells = {
                name: client.request("create_cell", notebook_id=nid, source="")["cell_id"]
                for name, nid in notebooks.items()
            }
            samples: dict[str, list[float]] = {name: [] for name in notebooks}
            for i in range(WARMUP + args.runs):
                source = f"df = load(path)  # {i}\n" * 12
                for name, nid in notebooks.items():
                    start = time.perf_counter()
                    client.request("set_cell", notebook_id=nid, cell_id=cells[name], source=source)
                    if i >= WARMUP:
                        samples[name].append(time.perf_counter() - start)
    print(f"set_cell through the daemon socket, {args.runs} calls each")
    for name, taken in samples.items():
        print(f"{name:24} {percentiles(taken)}")


if __name__ == "__main__":
    main()
