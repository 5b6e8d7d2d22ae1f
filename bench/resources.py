"""`resources/read` of a 1,000-cell notebook against `get_all_cells(format="json")` of
the same notebook, interleaved, through `nbstage mcp` with the official SDK client
(issue 25's budget: at most 1.5x).

The notebook's cells each have a short source and a printed line; every 100th also a
small PNG. get_all_cells is timed as the issue names it (its default leaves outputs
out) and with include_outputs=true, which carries what the read carries.

    .venv/bin/python bench/resources.py [--runs 30]
"""

from __future__ import annotations

import argparse
import base64
import os
import statistics
import struct
import tempfile
import time
import zlib
from pathlib import Path

import anyio
import nbformat
from common import NBSTAGE, daemon
from mcp import Client, StdioServerParameters
from mcp_types import Implementation

CELLS = 1000


def png_bytes(width: int, height: int) -> bytes:
    """A black 8-bit RGB PNG."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return (
            struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
        )

    rows = b"".join(b"\0" + b"\0" * 3 * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def write_notebook(path: Path) -> None:
    notebook = nbformat.v4.new_notebook()
    png = base64.b64encode(png_bytes(64, 48)).decode()
    for i in range(CELLS):
        cell = nbformat.v4.new_code_cell(f"x{i} = {i}\nprint(x{i} * 2)")
        cell.id = f"c{i}"
        cell.execution_count = i + 1
        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=f"{i * 2}\n")]
        if i % 100 == 0:
            data = {"image/png": png, "text/plain": "<Figure size 64x48>"}
            cell.outputs.append(nbformat.v4.new_output("display_data", data=data))
        notebook.cells.append(cell)
    nbformat.write(notebook, path)


async def samples(state: Path, path: Path, runs: int) -> dict[str, list[float]]:
    params = StdioServerParameters(
        command=NBSTAGE[0],
        args=[*NBSTAGE[1:], "mcp", "--state-dir", str(state)],
        cwd=str(path.parent),
    )
    info = Implementation(name="bench", version="1")
    async with Client(params, mode="legacy", client_info=info) as client:
        joined = await client.call_tool("connect_notebook", {"path": str(path)})
        uri = f"nbstage://notebook/{joined.structured_content['notebook_id']}"

        async def read() -> None:
            contents = (await client.read_resource(uri)).contents
            assert len(contents) == 1 + CELLS // 100, len(contents)

        async def cells(include_outputs: bool) -> None:
            arguments = {"format": "json", "include_outputs": include_outputs}
            result = await client.call_tool("get_all_cells", arguments)
            assert result.structured_content["total"] == CELLS

        ways = {
            "resources/read": read,
            'get_all_cells(format="json")': lambda: cells(False),
            "... include_outputs=true": lambda: cells(True),
        }
        timed: dict[str, list[float]] = {name: [] for name in ways}
        for i in range(runs + 3):
            for name, way in ways.items():
                start = time.perf_counter()
                await way()
                if i >= 3:
                    timed[name].append(time.perf_counter() - start)
    return timed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="nbs-bench-") as tmp:
        work = Path(tmp)
        write_notebook(work / "big.ipynb")
        with daemon(work / "state", {**os.environ}):
            timed = anyio.run(samples, work / "state", work / "big.ipynb", args.runs)
    medians = {name: statistics.median(values) * 1000 for name, values in timed.items()}
    for name, median in medians.items():
        print(f"{name:30} median {median:8.2f} ms")
    read, plain, full = medians.values()
    print(
        f"resources/read / get_all_cells(format=json):          {read / plain:5.2f}x (budget 1.5x)"
    )
    print(f"resources/read / get_all_cells(json, with outputs):   {read / full:5.2f}x")


if __name__ == "__main__":
    main()
