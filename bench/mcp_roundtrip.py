"""`execute_cell` of `1+1` through `nbstage mcp` with the official SDK client, against
raw jupyter_client in the same run; `get_all_cells` on 1,000 cells; time to `initialize`.

`get_all_cells` is timed three ways, to say whose time it is: through the SDK client;
through a bare line client (write the request, read one line back), which is the
server's own share; and the SDK's parse of that very answer line in this process.

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
from mcp.client.stdio import _parse_line
from mcp_types import Implementation

INITIALIZE = {"protocolVersion": "2025-11-25", "capabilities": {}}


def server(state: Path, cwd: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=NBSTAGE[0], args=[*NBSTAGE[1:], "mcp", "--state-dir", str(state)], cwd=str(cwd)
    )


async def mcp_samples(state: Path, cwd: Path, runs: int) -> tuple[list[float], list[float], str]:
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
        saved = await client.call_tool("save_notebook", {"path": str(cwd / "big.ipynb")})
        assert not saved.is_error, saved
        summaries = []
        for _ in range(30):
            start = time.perf_counter()
            result = await client.call_tool("get_all_cells", {})
            summaries.append(time.perf_counter() - start)
            assert result.structured_content["total"] == 1000
    return executes, summaries, str(cwd / "big.ipynb")


def line_client_samples(state: Path, notebook: str, runs: int = 30) -> tuple[list[float], str]:
    """get_all_cells through a bare JSON-RPC line client; also the last answer line."""
    proc = subprocess.Popen(
        [*NBSTAGE, "mcp", "--state-dir", str(state)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )

    def call(request_id: int, method: str, params: dict) -> bytes:
        request = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        proc.stdin.write(orjson.dumps(request) + b"\n")
        proc.stdin.flush()
        while True:
            line = proc.stdout.readline()
            if orjson.loads(line).get("id") == request_id:
                return line

    call(1, "initialize", {**INITIALIZE, "clientInfo": {"name": "b", "version": "1"}})
    proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
    call(2, "tools/call", {"name": "connect_notebook", "arguments": {"path": notebook}})
    samples = []
    for i in range(runs):
        start = time.perf_counter()
        line = call(10 + i, "tools/call", {"name": "get_all_cells", "arguments": {}})
        samples.append(time.perf_counter() - start)
    proc.stdin.close()
    proc.wait(timeout=10)
    return samples, line.decode()


def sdk_parse_seconds(line: str, runs: int = 30) -> float:
    """The SDK stdio client's parse of one answer line, median, in this process."""
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        parsed = _parse_line(line)
        samples.append(time.perf_counter() - start)
    assert not isinstance(parsed, Exception), parsed
    return statistics.median(samples)


def initialize_times(state: Path, tries: int = 5) -> list[float]:
    """Process start to the initialize answer on stdout, for a fresh `nbstage mcp`."""
    request = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {**INITIALIZE, "clientInfo": {"name": "b"}},
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
            executes, summaries, notebook = anyio.run(mcp_samples, state, work, args.runs)
            served, answer = line_client_samples(state, notebook)
            inits = initialize_times(state)
    raw_med, raw_p90 = summarize(raw)
    mcp_med, mcp_p90 = summarize(executes)
    print(f"1+1 raw jupyter_client      median {raw_med:7.2f} ms   p90 {raw_p90:7.2f} ms")
    print(f"execute_cell via nbstage mcp median {mcp_med:7.2f} ms   p90 {mcp_p90:7.2f} ms")
    print(f"nbstage's added cost         median {mcp_med - raw_med:7.2f} ms   (budget 2 ms)")
    print(
        f"get_all_cells, 1,000 cells   median {statistics.median(summaries) * 1000:7.2f} ms"
        "   (budget 10 ms; SDK client)"
    )
    print(f"  served, line client        median {statistics.median(served) * 1000:7.2f} ms")
    print(
        f"  the SDK's parse of it      median {sdk_parse_seconds(answer) * 1000:7.2f} ms"
        f"   ({len(answer):,} bytes)"
    )
    print(
        f"initialize after start       median {statistics.median(inits) * 1000:7.0f} ms"
        "   (budget 300 ms)"
    )


if __name__ == "__main__":
    main()
