"""The person's view (issue 24): how fast the Room's shared document moves, beside stock
jupyter-collaboration measured in the same run.

1. the agent's `create_cell` (daemon socket) until a connected Y client has the cell,
   against a stock JupyterLab relaying one Y client's new cell to another;
2. a person's keystroke in the Y client until the agent's next `get_cell` shows it,
   against the stock relay of a keystroke to another Y client;
3. opening a 1,000-cell notebook in a Y client until it holds every cell, both servers;
4. the Y document of an idle 1,000-cell notebook: its encoded size and what it adds to
   the daemon's RSS, against the notebook's JSON size, watched (a Y client connected,
   the document frozen under it) and not;
5. `execute` of `1+1` with no one watching against one Y client connected.

Samples of the two sides alternate, so a loaded machine weighs on both alike; the load
average is printed with the numbers. Never asserts.

    .venv/bin/python bench/lab_sync.py [--runs 100] [--only CASE]

The daemon freezes a shared document after 2 s with no sync message and nothing to
mirror, watched or not (the setting ``shared_doc_idle_secs``), so that the idle and
reopening cases need not wait 30 s. The timing cases keep their document busy: one
sample follows another well within 2 s.
"""

from __future__ import annotations

import argparse
import asyncio
import ctypes
import gc
import os
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
import zlib
from collections.abc import Awaitable, Callable
from pathlib import Path

import nbformat
import psutil
from pycrdt import Doc, create_sync_message
from y_client import Nbstage, StockLab, YClient

from nbstage.actors.daemon.notebook.document import Document
from nbstage.actors.daemon.room.shared_doc import SharedDoc

BIG = 1000


def stats(samples: list[float]) -> str:
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return f"p50 {statistics.median(ordered) * 1000:7.2f} ms  p99 {p99 * 1000:7.2f} ms"


def ratio(ours: list[float], theirs: list[float]) -> str:
    return f"{statistics.median(ours) / statistics.median(theirs):.2f}x"


def write_notebook(path: Path, cells: int, outputs: bool = False) -> Path:
    nb = nbformat.v4.new_notebook()
    for i in range(cells):
        cell = nbformat.v4.new_code_cell(f"x_{i} = {i}\nprint(x_{i})")
        if outputs:
            cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=f"{i}\n")]
            cell.execution_count = i + 1
        nb.cells.append(cell)
    nbformat.write(nb, path)
    return path


async def timed(act: Callable[[], Awaitable[None]]) -> float:
    start = time.perf_counter()
    await act()
    return time.perf_counter() - start


async def new_cells(ours: Nbstage, stock: StockLab, runs: int) -> tuple[list, list]:
    write_notebook(ours.root / "made.ipynb", 10)
    write_notebook(stock.root / "made.ipynb", 10)
    seen = await YClient.join(ours.base, ours.token, "made.ipynb")
    nid = (await ours.ask("open", path=str(ours.root / "made.ipynb")))["notebook_id"]
    writer = await YClient.join(stock.base, stock.token, "made.ipynb")
    reader = await YClient.join(stock.base, stock.token, "made.ipynb")
    for client in (seen, writer, reader):
        await client.until(lambda c=client: c.count() >= 10)
    mine, theirs = [], []

    async def agent(i: int) -> None:
        made = asyncio.create_task(
            ours.ask("create_cell", notebook_id=nid, source=f"a{i}", index=0)
        )
        await seen.until(lambda: seen.has_source(0, f"a{i}"))
        await made

    async def relayed(i: int) -> None:
        cell = {"cell_type": "code", "source": f"s{i}", "metadata": {}, "outputs": []}
        writer.notebook.ycells.insert(0, writer.notebook.create_ycell(cell))
        await writer.flush()
        await reader.until(lambda: reader.has_source(0, f"s{i}"))

    for i in range(runs):
        mine.append(await timed(lambda i=i: agent(i)))
        theirs.append(await timed(lambda i=i: relayed(i)))
    for client in (seen, writer, reader):
        await client.close()
    return mine, theirs


async def big_creates(ours: Nbstage, runs: int) -> tuple[list, list]:
    """create_cell in a 1,000-cell notebook: answered with no one watching, against
    seen by a Y client watching another such notebook (the mirror's structural step)."""
    ids = []
    for name in ("big-alone.ipynb", "big-watched.ipynb"):
        write_notebook(ours.root / name, BIG, outputs=True)
        ids.append((await ours.ask("open", path=str(ours.root / name)))["notebook_id"])
    seen = await YClient.join(ours.base, ours.token, "big-watched.ipynb")
    await seen.until(lambda: seen.count() >= BIG)
    alone, watched = [], []

    async def answered(i: int) -> None:
        await ours.ask("create_cell", notebook_id=ids[0], source=f"a{i}", index=BIG // 2)

    async def shown(i: int) -> None:
        made = asyncio.create_task(
            ours.ask("create_cell", notebook_id=ids[1], source=f"a{i}", index=BIG // 2)
        )
        await seen.until(lambda: seen.has_source(BIG // 2, f"a{i}"))
        await made

    for i in range(runs):
        alone.append(await timed(lambda i=i: answered(i)))
        watched.append(await timed(lambda i=i: shown(i)))
    await seen.close()
    return alone, watched


async def keystrokes(ours: Nbstage, stock: StockLab, runs: int) -> tuple[list, list]:
    write_notebook(ours.root / "typed.ipynb", 3)
    write_notebook(stock.root / "typed.ipynb", 3)
    person = await YClient.join(ours.base, ours.token, "typed.ipynb")
    nid = (await ours.ask("open", path=str(ours.root / "typed.ipynb")))["notebook_id"]
    writer = await YClient.join(stock.base, stock.token, "typed.ipynb")
    reader = await YClient.join(stock.base, stock.token, "typed.ipynb")
    for client in (person, writer, reader):
        await client.until(lambda c=client: c.count() >= 3)
    mine, theirs = [], []

    async def typed() -> None:
        await keystroke(ours, nid, person)

    async def relayed() -> None:
        text = writer.notebook.ycells[0]["source"]
        text += "k"
        expected = str(text)
        await writer.flush()
        await reader.until(lambda: str(reader.notebook.ycells[0]["source"]) == expected)

    for _ in range(runs):
        mine.append(await timed(typed))
        theirs.append(await timed(relayed))
    for client in (person, writer, reader):
        await client.close()
    return mine, theirs


async def opening(ours: Nbstage, stock: StockLab, runs: int) -> tuple[list, list]:
    mine, theirs = [], []
    for k in range(runs):
        for side, into in ((ours, mine), (stock, theirs)):
            name = f"big-{k}.ipynb"
            write_notebook(side.root / name, BIG, outputs=True)
            into.append(await timed(lambda side=side, name=name: synced(side, name)))
    return mine, theirs


async def synced(side: Nbstage | StockLab, name: str) -> None:
    """A Y client joins the notebook and holds every cell."""
    client = await YClient.join(side.base, side.token, name)
    await client.synced.wait()
    await client.until(lambda: client.count() == BIG)
    await client.close()


async def shared_doc(ours: Nbstage, nid: str) -> dict:
    return (await ours.ask("describe_room", notebook_id=nid))["shared_doc"]


async def frozen(ours: Nbstage, nid: str) -> dict:
    """Once the room's shared document is frozen (the daemon's shared_doc_idle_secs)."""
    while (state := await shared_doc(ours, nid))["state"] != "frozen":
        await asyncio.sleep(0.1)
    return state


async def reopening(ours: Nbstage, runs: int) -> list[float]:
    """A 1,000-cell notebook someone watched before, its shared document frozen since:
    the next Y client's join makes it again from the frozen update."""
    name = "big-again.ipynb"
    write_notebook(ours.root / name, BIG, outputs=True)
    nid = (await ours.ask("open", path=str(ours.root / name)))["notebook_id"]
    await synced(ours, name)
    samples = []
    for _ in range(runs):
        await frozen(ours, nid)
        samples.append(await timed(lambda: synced(ours, name)))
    return samples


async def agent_during_builds(ours: Nbstage, runs: int) -> tuple[list[float], list[float]]:
    """The agent's get_cell on a 1,000-cell notebook while a Y client's join builds its
    shared document, against the same calls with no build under way."""
    busy, quiet = [], []
    for k in range(runs):
        name = f"busy-{k}.ipynb"
        write_notebook(ours.root / name, BIG, outputs=True)
        nid = (await ours.ask("open", path=str(ours.root / name)))["notebook_id"]
        cell_id = (await ours.ask("get_cells", notebook_id=nid, count=1))["cells"][0]["cell_id"]

        async def get_cell(nid: str = nid, cell_id: str = cell_id) -> None:
            await ours.ask("get_cell", notebook_id=nid, cell_id=cell_id)

        for _ in range(10):
            quiet.append(await timed(get_cell))
        opening = asyncio.create_task(synced(ours, name))
        while (await shared_doc(ours, nid))["state"] != "live" and not opening.done():
            busy.append(await timed(get_cell))
        await opening
    return busy, quiet


async def memory(ours: Nbstage) -> None:
    path = write_notebook(ours.root / "idle.ipynb", BIG, outputs=True)
    size = path.stat().st_size
    shared = SharedDoc.of(Document.from_json(nbformat.read(path, as_version=4)))
    encoded = len(shared.ydoc.get_update())
    nid = (await ours.ask("open", path=str(path)))["notebook_id"]
    before = psutil.Process(ours.pid).memory_info().rss
    client = await YClient.join(ours.base, ours.token, "idle.ipynb")
    await client.until(lambda: client.count() == BIG)
    grown = psutil.Process(ours.pid).memory_info().rss - before
    watched = (await frozen(ours, nid))["frozen_bytes"]
    watched_rss = psutil.Process(ours.pid).memory_info().rss - before
    made, typed, focused, live = await thawed(ours, nid, client)
    await client.close()
    kept = (await frozen(ours, nid))["frozen_bytes"]
    after = psutil.Process(ours.pid).memory_info().rss - before
    alone = subprocess.run(
        [sys.executable, __file__, "--y-memory", str(path)], capture_output=True, check=True
    )
    held, idle, yrs, python = map(int, alone.stdout.split())
    print(f"  notebook JSON {size / 1024:.0f} kB; Y document encoded {encoded / 1024:.0f} kB")
    print(f"    ({encoded / size:.2f}x); a fresh process holding the Room's shared document")
    print(f"    after its first join grows {held / 1024:.0f} kB ({held / size:.2f}x) of RSS:")
    print(f"    yrs's store alone {yrs / 1024:.0f} kB ({yrs / size:.2f}x, malloc's bytes in")
    print(f"    use for a Doc made from the update), the Python side {python / 1024:.0f} kB")
    print(f"    ({python / size:.2f}x, tracemalloc); the daemon's RSS grew")
    print(f"    {grown / 1024:.0f} kB when the first person joined ({grown / size:.2f}x)")
    print("  idle, watched (frozen, the Y client still connected): the room keeps")
    print(f"    {watched / 1024:.0f} kB ({watched / size:.2f}x); the daemon's RSS is")
    print(f"    {watched_rss / 1024:.0f} kB above what it was before the join; the first")
    print("    change after it waits for a thaw: the agent's create_cell → the client has")
    print(f"    it {stats(made)}, the client's keystroke → the agent's get_cell {stats(typed)},")
    print(f"    max {max(typed) * 1000:.1f} ms; the same keystroke {FOCUS_LEAD * 1000:.0f} ms")
    print(f"    after the client's cursor moved (the thaw starts then): {stats(focused)},")
    print(f"    max {max(focused) * 1000:.1f} ms; a keystroke on the live document {stats(live)}")
    print(f"  idle (frozen, no one watching): the room keeps {kept / 1024:.0f} kB")
    print(f"    ({kept / size:.2f}x); the fresh process, frozen and trimmed, still holds")
    print(f"    {idle / 1024:.0f} kB more than before ({idle / size:.2f}x); the daemon's RSS is")
    print(f"    {after / 1024:.0f} kB above what it was before the join")


async def thawed(
    ours: Nbstage, nid: str, client: YClient, runs: int = 6
) -> tuple[list[float], list[float], list[float], list[float]]:
    """The first change of either side to a watched document frozen under its client:
    the agent's new cell until the client has it, the client's keystroke until the
    agent's get_cell shows it, and the same keystroke ``FOCUS_LEAD`` after the client
    moved its cursor (its awareness state changed, as Lab's does on focus), which starts
    the thaw ahead of it; each after the document froze again. Then a keystroke on the
    live document, the floor the three stand on."""
    made, typed, focused, live = [], [], [], []
    await client.aware({"user": {"name": "bench"}})
    for i in range(runs):
        await frozen(ours, nid)

        async def agent(i: int = i) -> None:
            asked = asyncio.create_task(
                ours.ask("create_cell", notebook_id=nid, source=f"t{i}", index=0)
            )
            await client.until(lambda: client.has_source(0, f"t{i}"))
            await asked

        made.append(await timed(agent))
        await frozen(ours, nid)
        typed.append(await timed(lambda: keystroke(ours, nid, client)))
        await frozen(ours, nid)
        cursor = {"anchor": i, "head": i + 1}
        await client.aware({"user": {"name": "bench"}, "cursors": [cursor]})
        await asyncio.sleep(FOCUS_LEAD)
        focused.append(await timed(lambda: keystroke(ours, nid, client)))
        live.append(await timed(lambda: keystroke(ours, nid, client)))
    return made, typed, focused, live


FOCUS_LEAD = 0.05
"""How long before its first keystroke a person's cursor moved (Lab's focus, a click)."""


async def keystroke(ours: Nbstage, nid: str, client: YClient) -> None:
    """The client types into its first cell until the agent's get_cell shows it."""
    cell_id = client.notebook.ycells[0]["id"]
    text = client.notebook.ycells[0]["source"]
    text += "k"
    expected = str(text)
    await client.flush()
    while True:
        shown = await ours.ask("get_cell", notebook_id=nid, cell_id=cell_id)
        if shown["cell"]["source"] == expected:
            return


MALLINFO2 = ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks")


class MallInfo2(ctypes.Structure):
    """glibc's ``struct mallinfo2``."""

    _fields_ = [(name, ctypes.c_size_t) for name in (*MALLINFO2, "fordblks", "keepcost")]


def malloced(libc: ctypes.CDLL) -> int:
    """glibc's bytes in use (allocated chunks, mmapped ones too)."""
    libc.mallinfo2.restype = MallInfo2
    gc.collect()
    info = libc.mallinfo2()
    return info.uordblks + info.hblkhd


def y_memory(path: str) -> tuple[int, int, int, int]:
    """RSS a SharedDoc of ``path`` adds to this process, its Document already loaded,
    once a person joined (their sync step 1 answered); then what is left once it is
    frozen (the frozen form included); then the split of the first: yrs's store (a Doc
    made from the document's update, in malloc's bytes), and the Python side."""
    libc = ctypes.CDLL("libc.so.6")
    doc = Document.from_json(nbformat.read(path, as_version=4))
    warm = SharedDoc.of(Document.from_json(nbformat.read(path, as_version=4)))  # imports
    warm.freeze(doc)
    warm.close()
    del warm
    gc.collect()
    libc.malloc_trim(0)
    before = psutil.Process().memory_info().rss
    shared = SharedDoc.of(doc)
    shared.join("person", 1)
    shared.receive(create_sync_message(Doc()))
    gc.collect()
    libc.malloc_trim(0)
    grown = psutil.Process().memory_info().rss - before
    kept = shared.freeze(doc)
    shared.close()
    del shared
    gc.collect()
    libc.malloc_trim(0)
    idle = psutil.Process().memory_info().rss - before
    assert kept.size > 0
    start = malloced(libc)
    alone = Doc()
    alone.apply_update(zlib.decompress(kept.update))
    yrs = malloced(libc) - start
    tracemalloc.start()
    python = SharedDoc.of(doc)
    python.join("person", 1)
    python.receive(create_sync_message(Doc()))
    gc.collect()
    traced, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return grown, idle, yrs, traced


async def executes(ours: Nbstage, runs: int, apart: bool = False) -> tuple[list, list]:
    """``apart``: the Y client runs in a process of its own, as a browser does, rather
    than on this bench's loop, where applying its updates delays the agent's answers."""
    tag = "-apart" if apart else ""
    alone, watched = f"alone{tag}.ipynb", f"watched{tag}.ipynb"
    ids = {}
    for name in (alone, watched):
        write_notebook(ours.root / name, 0)
        nid = (await ours.ask("open", path=str(ours.root / name)))["notebook_id"]
        made = await ours.ask("create_cell", notebook_id=nid, source="1+1")
        ids[name] = (nid, made["cell_id"])
    if apart:
        watcher = await asyncio.create_subprocess_exec(
            sys.executable,
            __file__,
            "--watch",
            ours.base,
            ours.token,
            watched,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        assert watcher.stdout is not None
        await watcher.stdout.readline()
    else:
        person = await YClient.join(ours.base, ours.token, watched)
        await person.until(lambda: person.count() == 1)
    room = await ours.ask("describe_room", notebook_id=ids[watched][0])
    people = [peer for peer in room["peers"] if peer["kind"] == "person"]
    print(f"   ({len(people)} person watching {watched})")
    samples: dict[str, list[float]] = {alone: [], watched: []}

    async def run(name: str) -> None:
        nid, cell_id = ids[name]
        await ours.ask("execute", notebook_id=nid, cell_id=cell_id, wait_secs=60)

    for name in samples:
        for _ in range(20):
            await run(name)
    for i in range(runs):
        for name in sorted(samples, reverse=bool(i % 2)):
            samples[name].append(await timed(lambda name=name: run(name)))
    if apart:
        assert watcher.stdin is not None
        watcher.stdin.close()
        await watcher.wait()
    else:
        await person.close()
    return samples[alone], samples[watched]


async def watch(base: str, token: str, name: str) -> None:
    """A Y client that keeps in step with ``name`` until its stdin closes; a line on
    stdout once it holds the notebook."""
    person = await YClient.join(base, token, name)
    await person.until(lambda: person.count() >= 1)
    print("synced", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    await person.close()


CASES = ("new-cell", "big-new-cell", "keystroke", "open", "memory", "execute")


async def main(runs: int, only: str | None) -> None:
    print(f"load average before: {os.getloadavg()}")
    wanted = [only] if only else list(CASES)
    with tempfile.TemporaryDirectory(prefix="nblab-bench-") as tmp:
        ours = Nbstage(Path(tmp), {"NBSTAGE_SHARED_DOC_IDLE_SECS": "2"})
        stock = StockLab(Path(tmp)) if {"new-cell", "keystroke", "open"} & set(wanted) else None
        try:
            for case in wanted:
                await CASE_RUNS[case](ours, stock, runs)
        finally:
            if stock is not None:
                stock.stop()
            ours.stop()
    print(f"load average after: {os.getloadavg()}")


async def case_new_cell(ours: Nbstage, stock: StockLab, runs: int) -> None:
    mine, theirs = await new_cells(ours, stock, runs)
    print(f"1. create_cell -> Y client: nbstage {stats(mine)}")
    print(f"   stock relay, Y client -> Y client: {stats(theirs)} ({ratio(mine, theirs)})")


async def case_big_new_cell(ours: Nbstage, stock: StockLab | None, runs: int) -> None:
    alone, watched = await big_creates(ours, max(10, runs // 4))
    print(f"1b. in {BIG} cells, answered, no one watching: {stats(alone)}")
    print(f"    in {BIG} cells, until a Y client has it: {stats(watched)}")
    print(f"    ({ratio(watched, alone)})")


async def case_keystroke(ours: Nbstage, stock: StockLab, runs: int) -> None:
    mine, theirs = await keystrokes(ours, stock, runs)
    print(f"2. keystroke -> agent's get_cell: nbstage {stats(mine)}")
    print(f"   stock relay of a keystroke: {stats(theirs)} ({ratio(mine, theirs)})")


async def case_open(ours: Nbstage, stock: StockLab, runs: int) -> None:
    mine, theirs = await opening(ours, stock, 5)
    print(f"3. open {BIG} cells until synced: nbstage {stats(mine)}")
    print(f"   stock: {stats(theirs)} ({ratio(mine, theirs)})")
    again = await reopening(ours, 5)
    print(f"   again, its shared document frozen since: nbstage {stats(again)}")
    busy, quiet = await agent_during_builds(ours, 3)
    print(f"   the agent's get_cell while the shared document is built: {stats(busy)},")
    print(f"   max {max(busy) * 1000:.1f} ms ({len(busy)} calls); with no build: {stats(quiet)}")


async def case_memory(ours: Nbstage, stock: StockLab | None, runs: int) -> None:
    print(f"4. idle {BIG}-cell notebook:")
    await memory(ours)


async def case_execute(ours: Nbstage, stock: StockLab | None, runs: int) -> None:
    alone, watched = await executes(ours, runs)
    diff = (statistics.median(watched) - statistics.median(alone)) * 1000
    print(f"5. execute 1+1, no one watching: {stats(alone)}")
    print(f"   one Y client connected: {stats(watched)} (difference {diff:+.2f} ms)")
    alone, watched = await executes(ours, runs, apart=True)
    diff = (statistics.median(watched) - statistics.median(alone)) * 1000
    print(f"   again, the Y client in a process of its own: no one watching {stats(alone)}")
    print(f"   one Y client connected: {stats(watched)} (difference {diff:+.2f} ms)")


CASE_RUNS = {
    "new-cell": case_new_cell,
    "big-new-cell": case_big_new_cell,
    "keystroke": case_keystroke,
    "open": case_open,
    "memory": case_memory,
    "execute": case_execute,
}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--only", choices=CASES, help="run this case alone")
    parser.add_argument("--y-memory", help=argparse.SUPPRESS)
    parser.add_argument("--watch", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.y_memory:
        print(*y_memory(args.y_memory))
    elif args.watch:
        asyncio.run(watch(*args.watch))
    else:
        asyncio.run(main(args.runs, args.only))
