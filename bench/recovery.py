"""How fast a client is served again after a crash (SPEC §11).

    .venv/bin/python bench/recovery.py [--rounds 10]

1. SIGKILL of the session manager → the next tool call served on the same notebook.
2. SIGKILL of the daemon, then a start → a file-backed session served again, counted
   from the moment the new daemon answers; and how long the watch loop took to notice
   the old daemon was gone (heartbeat-bound).
Each is the median of ``--rounds`` runs through a real `nbstage mcp` and the SDK client.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from common import NBSTAGE, daemon
from mcp import Client, StdioServerParameters
from mcp_types import Implementation

from nbstage.entrypoints.common.statedir import state_paths
from nbstage.entrypoints.control.daemon_client import DaemonClient


def request(state: Path, kind: str, **fields):
    with DaemonClient(state_paths(state).socket) as client:
        return client.request(kind, **fields)


def session_manager(state: Path, old: int | None = None) -> int:
    while True:
        for record in request(state, "clients")["clients"]:
            pid = record["session_manager_pid"]
            if pid != old:
                return pid
        time.sleep(0.01)


def served_live(result: Any) -> bool:
    """Answered by the daemon: not an error, and not the session's stale snapshot, which
    answers reads while the daemon is away (README, "stale reads")."""
    return not result.is_error and not (result.structured_content or {}).get("stale")


async def served_again(client: Client) -> float:
    """Call until the daemon answers a call; return when it did."""
    while True:
        if served_live(await client.call_tool("get_all_cells", {})):
            return time.perf_counter()
        await anyio.sleep(0.01)


async def measure(state: Path, work: Path, rounds: int) -> dict[str, list[float]]:
    params = StdioServerParameters(
        command=NBSTAGE[0], args=[*NBSTAGE[1:], "mcp", "--state-dir", str(state)], cwd=str(work)
    )
    found: dict[str, list[float]] = {"child": [], "daemon": [], "noticed": []}
    info = Implementation(name="bench", version="1")
    async with Client(params, mode="legacy", client_info=info) as client:
        await client.call_tool("create_notebook", {})
        await client.call_tool("save_notebook", {"path": str(work / "bench.ipynb")})
        for _ in range(rounds):
            pid = session_manager(state)
            start = time.perf_counter()
            os.kill(pid, signal.SIGKILL)
            found["child"].append(await served_again(client) - start)
            session_manager(state, pid)
        for _ in range(rounds):
            daemon_pid = request(state, "identity")["pid"]
            os.kill(daemon_pid, signal.SIGKILL)
            killed = time.perf_counter()
            while served_live(await client.call_tool("get_all_cells", {})):
                await anyio.sleep(0.005)
            found["noticed"].append(time.perf_counter() - killed)
            start = [*NBSTAGE, "daemon", "start", "--state-dir", str(state)]
            subprocess.run(start, check=True, stdout=subprocess.DEVNULL)
            up = time.perf_counter()
            found["daemon"].append(await served_again(client) - up)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="nbs-bench-") as tmp:
        work = Path(tmp)
        state = work / "state"
        with daemon(state):
            found = anyio.run(measure, state, work, args.rounds)
    child = statistics.median(found["child"])
    back = statistics.median(found["daemon"])
    print(
        f"session manager SIGKILL → next call served   median {child * 1000:7.0f} ms (budget 0.5 s)"
    )
    print(f"daemon up → file-backed session served       median {back * 1000:7.0f} ms (budget 1 s)")
    print(
        f"daemon SIGKILL → first degraded answer       median "
        f"{statistics.median(found['noticed']) * 1000:7.0f} ms"
    )


if __name__ == "__main__":
    main()
