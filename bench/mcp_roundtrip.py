"""`execute_cell` of `1+1` through `nbstage mcp` with the official SDK client, against
raw jupyter_client in the same run; `get_all_cells` on 1,000 cells; time to `initialize`.

    .venv/bin/python bench/mcp_roundtrip.py [--runs 100]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import anyio
import orjson
from common import NBSTAGE, WARMUP, daemon, raw_roundtrips, summarize
from mcp import Client, StdioServerParameters
from mcp_types import Implementation


def server(state: Path, cwd: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=NBSTAGE[0], args=[*NBSTAGE[1:], "mcp", "--state-dir", str(state)], cwd=str(cwd)
    )


async def mcp_samples(state: Path, cwd: Path, runs: int) -> tuple[list[float], list[float]]:
    info = Implementation(name="bench", version="1")
    async with Client(server(state, cwd), mode="legacy", client_info=info) as client:
        await client.call_tool("create_notebook", {})
        made = await client.call_tool("create_cell", {"source": "1+1", "and_run": True})
        cell = made.structured_content["cell_id"]
        executes = []
        for i in range(WARMUP + runs):
            start = time.perf_counter()
            result = await client.call_tool("execute_cell", {"cell_id": cell})
            assert result.structured_content["execution"]["status"] == "done", result
            if i >= WARMUP:
                executes.append(time.perf_counter() - start)
        await client.call_tool("create_notebook", {"runtime": "python"})
        for i in range(1000):
            await client.call_tool("create_cell", {"source": f"x{i} = {i}"})
        summaries = []
        for _ in range(30):
            start = time.perf_counter()
            result = await client.call_tool("get_all_cells", {})
            summaries.append(time.perf_counter() - start)
            assert result.structured_content["total"] == 1000
    return executes, summaries


def initialize_times(state: Path, tries: int = 5) -> list[float]:
    """Process start to the initialize answer on stdout, for a fresh `nbstage mcp`."""
    request = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "b"},
        },
    }
    samples = []
    for _ in range(tries):
        start = time.perf_counter()
        proc = subprocess.Popen(
            [*NBSTAGE, "mcp", "--state-dir", str(state)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        proc.stdin.write(orjson.dumps(request) + b"\n")
        proc.stdin.flush()
        proc.stdout.readline()
        samples.append(time.perf_counter() - start)
        proc.stdin.close()
        proc.wait(timeout=10)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=100)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="nbs-bench-") as tmp:
        work = Path(tmp)
        state = work / "state"
        with daemon(state, {**os.environ}):
            raw = raw_roundtrips(args.runs, work)
            executes, summaries = anyio.run(mcp_samples, state, work, args.runs)
            inits = initialize_times(state)
    raw_med, raw_p90 = summarize(raw)
    mcp_med, mcp_p90 = summarize(executes)
    print(f"1+1 raw jupyter_client      median {raw_med:7.2f} ms   p90 {raw_p90:7.2f} ms")
    print(f"execute_cell via nbstage mcp median {mcp_med:7.2f} ms   p90 {mcp_p90:7.2f} ms")
    print(f"nbstage's added cost         median {mcp_med - raw_med:7.2f} ms   (budget 2 ms)")
    print(
        f"get_all_cells, 1,000 cells   median {statistics.median(summaries) * 1000:7.2f} ms"
        "   (budget 10 ms)"
    )
    print(
        f"initialize after start       median {statistics.median(inits) * 1000:7.0f} ms"
        "   (budget 300 ms)"
    )


if __name__ == "__main__":
    main()
