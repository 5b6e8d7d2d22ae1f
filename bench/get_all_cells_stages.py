"""`get_all_cells` (summary) on 1,000 cells, one stage at a time, in this process.

Each stage is the code one process runs for the answer, from the Room's rows to the
SDK client's parse of the line `nbstage mcp` writes; what it leaves out is the time on
the sockets and pipes between the three processes and in their loops. Each figure is
the median over rounds of the best of five runs, so a loaded machine shifts it less.

    .venv/bin/python bench/get_all_cells_stages.py [--rounds 40] [--ran]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import orjson
from mcp.client.stdio import _parse_line

from nbstage.actors.daemon.notebook.document import Document
from nbstage.actors.session.tool_handlers import ToolContext, get_all_cells
from nbstage.protocol.common.codec import dumps
from nbstage.protocol.daemon.frames import decode_body, encode_result_frame
from nbstage.protocol.daemon.replies import CellsSummarized, decode_reply
from nbstage.protocol.mcp.jsonrpc import encode_response
from nbstage.protocol.mcp.tools import GetAllCellsArgs

CELLS = 1000


def notebook(ran: bool) -> Document:
    doc = Document.empty()
    for i in range(CELLS):
        cell, _ = doc.create_cell(f"x{i} = {i}")
        if ran:
            output = {"output_type": "stream", "name": "stdout", "text": f"{i}\n"}
            doc.set_outputs(cell.id, [output], i + 1)
    return doc


def tool_result_of(reply: CellsSummarized) -> dict:
    """The session child's handler, answered with ``reply``."""
    handler = get_all_cells(ToolContext("nb", "key", "/"), GetAllCellsArgs())
    handler.send(None)
    try:
        handler.send(reply)
    except StopIteration as done:
        return done.value
    raise AssertionError("get_all_cells asked the daemon twice")


def best_of_five(stage: Callable[[], object]) -> float:
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        stage()
        best = min(best, time.perf_counter() - start)
    return best * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--ran", action="store_true", help="every cell has run, one output")
    args = parser.parse_args()
    doc = notebook(args.ran)
    rows = doc.summaries()
    reply_json = dumps(CellsSummarized(rows, CELLS))
    body = encode_result_frame(7, reply_json)[4:]
    frame = decode_body(body, null_id_ok=True)
    reply = decode_reply(frame, CellsSummarized)
    result = tool_result_of(reply)
    line = encode_response(10, orjson.dumps(result)).decode()

    def after_an_edit() -> object:
        doc.revision += 1
        return doc.summaries()

    stages = {
        "daemon: summaries": doc.summaries,
        "daemon: summaries, after an edit": after_an_edit,
        "daemon: encode the reply": lambda: dumps(CellsSummarized(rows, CELLS)),
        "child: decode the frame": lambda: decode_body(body, null_id_ok=True),
        "child: check the reply": lambda: decode_reply(frame, CellsSummarized),
        "child: table and result": lambda: tool_result_of(reply),
        "child: encode the result": lambda: orjson.dumps(result),
        "SDK client: _parse_line": lambda: _parse_line(line),
    }
    samples: dict[str, list[float]] = {name: [] for name in stages}
    for _ in range(args.rounds):
        for name, stage in stages.items():
            samples[name].append(best_of_five(stage))
    for name, values in samples.items():
        print(f"{name:34s} {statistics.median(values):7.3f} ms")
    text = result["content"][0]["text"]
    structured = orjson.dumps(result["structuredContent"])
    print(
        f"answer line {len(line):,} bytes: text {len(text.encode()):,}, "
        f"structuredContent {len(structured):,}; reply frame {len(body):,}"
    )
    print("a row:", orjson.dumps(rows[5]).decode())


if __name__ == "__main__":
    main()
