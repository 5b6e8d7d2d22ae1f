"""An MCP server over stdio that answers every request at once, with no work behind it.

`bench/peers.py` drives it with the same SDK client as the real servers: the time one of
its `tools/call` takes is what the client and the pipes cost, the floor under any stdio
MCP server's latency on this machine.
"""

from __future__ import annotations

import sys

import orjson

TOOL = {"name": "execute", "description": "answers 2", "inputSchema": {"type": "object"}}
RESULT = {"content": [{"type": "text", "text": "2"}], "isError": False}


def answer(request: dict) -> dict:
    method = request.get("method")
    if method == "initialize":
        return {
            "protocolVersion": request["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "instant", "version": "1"},
        }
    if method == "tools/list":
        return {"tools": [TOOL]}
    if method == "tools/call":
        return RESULT
    return {}


def main() -> None:
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        request = orjson.loads(line)
        if "id" in request:
            reply = {"jsonrpc": "2.0", "id": request["id"], "result": answer(request)}
            out.write(orjson.dumps(reply) + b"\n")
            out.flush()


if __name__ == "__main__":
    main()
