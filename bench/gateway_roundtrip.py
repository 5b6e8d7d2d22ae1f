"""`execute_cell` of `1+1` on a kernel behind a real Jupyter Kernel Gateway, through
`nbstage mcp` with the official SDK client, against a bare websocket client talking to
the same gateway in the same run (issue 26's first budget: at most 1.5 ms more).

The two are interleaved in batches, so a busy minute of the machine falls on both. The
gateway is `python -m kernel_gateway` from the test extra, on 127.0.0.1 with a token
(tests/gateway_support.py).

    .venv/bin/python bench/gateway_roundtrip.py [--runs 100] [--batch 10]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

import anyio
import orjson
from common import WARMUP, daemon, summarize
from mcp import Client
from mcp_roundtrip import server
from mcp_types import Implementation

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from nbstage.actors.daemon.kernel.gateway_client import GatewayClient, LoopThread
from nbstage.protocol.common.kernel_hosts import KernelHost
from tests.gateway_support import gateway_running


class BareClient:
    """One kernel on the gateway and its channels, driven with no nbstage in between."""

    def __init__(self, host: KernelHost) -> None:
        self.io = LoopThread("bare")
        self.client = GatewayClient(host)
        self.session = uuid.uuid4().hex
        self.kernel_id = self.io.call(self.client.start_kernel("python3"), 60)
        self.ws = self.io.call(self.client.channels(self.kernel_id, self.session), 10)
        self.inbox: asyncio.Queue[str] = self.io.call(self._reading(), 10)

    async def _reading(self) -> asyncio.Queue[str]:
        """Read every message as it comes (as nbstage's backend does: an unread message
        stops tornado reading frames, pongs among them), into a queue."""
        inbox: asyncio.Queue[str] = asyncio.Queue()

        async def read() -> None:
            while (message := await self.ws.read_message()) is not None:
                inbox.put_nowait(message)

        self.task = asyncio.get_running_loop().create_task(read())
        return inbox

    async def _one(self) -> float:
        msg_id = uuid.uuid4().hex
        header = {"msg_id": msg_id, "msg_type": "execute_request", "session": self.session}
        header |= {"username": "bench", "version": "5.3", "date": datetime.now(UTC).isoformat()}
        content = {"code": "1+1", "silent": False, "store_history": True}
        content |= {"user_expressions": {}, "allow_stdin": False, "stop_on_error": False}
        msg = {"header": header, "parent_header": {}, "metadata": {}, "content": content}
        msg["channel"] = "shell"
        start = time.perf_counter()
        await self.ws.write_message(orjson.dumps(msg).decode())
        while True:
            got = orjson.loads(await self.inbox.get())
            mine = got.get("parent_header", {}).get("msg_id") == msg_id
            if mine and got["content"].get("execution_state") == "idle":
                return time.perf_counter() - start

    async def _batch(self, runs: int) -> list[float]:
        return [await self._one() for _ in range(runs)]

    def batch(self, runs: int) -> list[float]:
        return self.io.call(self._batch(runs), 60)

    def close(self) -> None:
        self.io.loop.call_soon_threadsafe(self.ws.close)
        self.io.call(self.client.shutdown(self.kernel_id), 10)
        self.io.stop()


async def interleaved(state: Path, cwd: Path, bare: BareClient, runs: int, batch: int):
    info = Implementation(name="bench", version="1")
    async with Client(server(state, cwd), mode="legacy", client_info=info) as client:
        await client.call_tool("create_notebook", {"kernel_host": "kg"})
        made = await client.call_tool("create_cell", {"source": "1+1", "and_run": True})
        assert made.structured_content["execution"]["status"] == "done", made
        cell = made.structured_content["cell_id"]
        listed = await client.call_tool("list_active_notebooks", {})
        assert listed.structured_content["notebooks"][0]["kernel_host"] == "kg"

        async def ours(count: int) -> list[float]:
            samples = []
            for _ in range(count):
                start = time.perf_counter()
                result = await client.call_tool("execute_cell", {"cell_id": cell})
                assert result.structured_content["execution"]["status"] == "done", result
                samples.append(time.perf_counter() - start)
            return samples

        await ours(WARMUP)
        await anyio.to_thread.run_sync(bare.batch, WARMUP)
        through, direct = [], []
        while len(through) < runs:
            through += await ours(batch)
            direct += await anyio.to_thread.run_sync(bare.batch, batch)
    return through, direct


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--batch", type=int, default=10)
    args = parser.parse_args()
    with gateway_running() as gateway, tempfile.TemporaryDirectory(prefix="nbs-bench-") as tmp:
        work = Path(tmp)
        state = work / "state"
        state.mkdir(mode=0o700)
        (state / "config.toml").write_text(
            f'[[kernel_hosts]]\nname = "kg"\nurl = "{gateway.url}"\ntoken = "{gateway.token}"\n'
        )
        bare = BareClient(KernelHost("kg", gateway.url, gateway.token))
        try:
            with daemon(state, {**os.environ}):
                through, direct = anyio.run(interleaved, state, work, bare, args.runs, args.batch)
        finally:
            bare.close()
    bare_med, bare_p90 = summarize(direct)
    ours_med, ours_p90 = summarize(through)
    print(f"1+1 bare websocket client    median {bare_med:7.2f} ms   p90 {bare_p90:7.2f} ms")
    print(f"execute_cell via nbstage mcp median {ours_med:7.2f} ms   p90 {ours_p90:7.2f} ms")
    print(f"nbstage's added cost         median {ours_med - bare_med:7.2f} ms   (budget 1.5 ms)")
    print(f"ratio                        {ours_med / bare_med:7.2f}x   ({len(through)} runs each)")


if __name__ == "__main__":
    main()
