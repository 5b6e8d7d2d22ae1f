"""Issue 12's budgets, as ratios measured in one run.

- **First `1+1` in a new notebook, pool ready**: from `create` on the daemon socket to the
  result of its first cell, against raw jupyter_client's kernel start (start_kernel to
  the first kernel_info reply) of the same kernelspec. Budget: at most 1.2x.
- **A cached inline environment reused on reopen**: the placement of a kernel whose
  trusted set is already built (`place_kernel`: no build, only the resolution), and the
  first `1+1` after reopening the notebook, against the pool's. Budget: under 0.2 s of
  resolution.

    .venv/bin/python bench/environments.py [--runs 5]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from common import daemon
from jupyter_client.manager import KernelManager

from nbstage.actors.daemon.environment import dependencies, environments
from nbstage.actors.daemon.kernel.kernel_environment import place_kernel, project_around
from nbstage.entrypoints.common.statedir import state_paths
from nbstage.entrypoints.control.daemon_client import DaemonClient
from nbstage.protocol.daemon_actors.kernels import EnvironmentWanted

SET = ["six"]


def raw_kernel_start(work: Path) -> float:
    km = KernelManager(kernel_name="python3", transport="ipc", ip=str(work / "raw"))
    start = time.perf_counter()
    km.start_kernel()
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=60)
        return time.perf_counter() - start
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def first_result(client: DaemonClient, opened: dict) -> float:
    """From the open or create (already sent, ``opened`` its answer) to the first 1+1."""
    notebook = opened["notebook_id"]
    cell = client.request("create_cell", notebook_id=notebook, source="1+1")["cell_id"]
    answer = client.request("execute", notebook_id=notebook, cell_id=cell, wait_secs=120)
    assert answer["execution"]["status"] == "done", answer
    client.request("evict", notebook_id=notebook)
    return time.perf_counter()


def new_notebook(client: DaemonClient) -> float:
    start = time.perf_counter()
    return first_result(client, client.request("create")) - start


def reopened(client: DaemonClient, path: str) -> float:
    start = time.perf_counter()
    return first_result(client, client.request("open", path=path)) - start


def placement(state: Path) -> float:
    fp = dependencies.fingerprint(SET)
    wanted = EnvironmentWanted(dependencies.normalised_set(SET), fp)
    start = time.perf_counter()
    placed = place_kernel(wanted, str(state), "bench", project_around(wanted))
    took = time.perf_counter() - start
    assert placed.view.source == "inline", placed
    assert placed.view.problem is None, placed
    return took


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="nbs-bench-") as tmp:
        work = Path(tmp)
        state = work / "state"
        environments.ensure_template(environments.envs_dir(state))
        with daemon(state), DaemonClient(state_paths(state).socket, timeout=600) as client:
            raw, fresh, inline, resolve = [], [], [], []
            notebook = client.request("create")["notebook_id"]
            client.request(
                "manage_dependencies", notebook_id=notebook, add=SET, remove=[], apply="restart"
            )
            path = str(work / "inline.ipynb")
            client.request("save", notebook_id=notebook, path=path)
            client.request("evict", notebook_id=notebook)
            for _ in range(args.runs):
                raw.append(raw_kernel_start(work))
                fresh.append(new_notebook(client))
                inline.append(reopened(client, path))
                resolve.append(placement(state))
    raw_ms, fresh_ms, inline_ms = median_ms(raw), median_ms(fresh), median_ms(inline)
    print(f"raw jupyter_client kernel start      median {raw_ms:7.1f} ms")
    print(
        f"new notebook, first 1+1 (pool)       median {fresh_ms:7.1f} ms   "
        f"{fresh_ms / raw_ms:4.2f}x raw (budget 1.2x)"
    )
    print(
        f"reopened inline notebook, first 1+1  median {inline_ms:7.1f} ms   "
        f"{inline_ms / raw_ms:4.2f}x raw"
    )
    resolve_ms = median_ms(resolve)
    print(f"cached inline env resolution         median {resolve_ms:7.1f} ms   (budget 200 ms)")


if __name__ == "__main__":
    main()
