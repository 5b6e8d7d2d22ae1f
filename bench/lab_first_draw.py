"""The person's view (issue 24): a 1,000-cell notebook opened in Chromium, until its first
cell is drawn, in `nbstage lab` and in a stock JupyterLab with jupyter-collaboration's
server side on, started in the same run.

Debian's chromium, headless, driven by selenium through chromium-driver (as
tests/e2e/test_lab_browser.py drives it). Each round opens a notebook of its own (so
nbstage builds a shared document and stock loads a room, each from the file) in a
workspace of its own, the two servers by turns; the clock runs from the page's request
to the moment the first cell's source is in the page. One page of each server is loaded
first, so Lab's scripts come from the browser's cache in every timed round. Each round
also opens a 3-cell notebook first: what a page of Lab costs before any notebook is
big (its scripts run again in every new page), so that the 1,000 cells' own share is
the difference. Never asserts.

    .venv/bin/python bench/lab_first_draw.py [--rounds 5] [--cells 1000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

from lab_sync import write_notebook
from y_client import Nbstage, StockLab

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.headless_chromium import INSTALL, MISSING, headless_chromium

FIRST_CELL = """
const cell = document.querySelector('.jp-Notebook .jp-Cell .cm-content');
return cell !== null && cell.textContent.includes(arguments[0]);
"""


def first_draw(driver, base: str, token: str, name: str, workspace: str, timeout: float) -> float:
    """Seconds from asking for the page until the notebook's first cell is drawn."""
    url = f"{base}/lab/workspaces/{workspace}/tree/{quote(name)}?token={quote(token)}"
    start = time.perf_counter()
    driver.get(url)
    while not driver.execute_script(FIRST_CELL, "x_0 = 0"):
        if time.perf_counter() - start > timeout:
            return float("nan")
        time.sleep(0.01)
    drawn = time.perf_counter() - start
    driver.get("about:blank")
    return drawn


def summary(samples: list[float]) -> str:
    shown = ", ".join(f"{s * 1000:.0f}" for s in samples)
    return f"p50 {statistics.median(samples) * 1000:7.0f} ms  ({shown})"


def main(rounds: int, cells: int, timeout: float) -> None:
    if MISSING:
        sys.exit(f"needs Debian's chromium and chromium-driver: {INSTALL}")
    print(f"load average before: {os.getloadavg()}")
    with tempfile.TemporaryDirectory(prefix="nblab-draw-") as tmp:
        ours, stock = Nbstage(Path(tmp)), StockLab(Path(tmp))
        times: dict[str, list[float]] = {"nbstage": [], "stock": []}
        floors: dict[str, list[float]] = {"nbstage": [], "stock": []}
        try:
            with headless_chromium(prefix="nbc-bench-") as driver:
                sides = {"nbstage": ours, "stock": stock}
                for side in sides.values():
                    write_notebook(side.root / "warm.ipynb", 3)
                    first_draw(driver, side.base, side.token, "warm.ipynb", "warm", timeout)
                for k in range(rounds):
                    order = list(sides.items()) if k % 2 == 0 else list(sides.items())[::-1]
                    for label, side in order:
                        small, big = f"small-{k}.ipynb", f"draw-{k}.ipynb"
                        write_notebook(side.root / small, 3)
                        write_notebook(side.root / big, cells, outputs=True)
                        floor = first_draw(driver, side.base, side.token, small, f"s{k}", timeout)
                        drawn = first_draw(driver, side.base, side.token, big, f"w{k}", timeout)
                        floors[label].append(floor)
                        times[label].append(drawn)
                        print(
                            f"  round {k} {label}: {drawn * 1000:.0f} ms"
                            f" (3 cells: {floor * 1000:.0f} ms)",
                            flush=True,
                        )
        finally:
            stock.stop()
            ours.stop()
    mine, theirs = times["nbstage"], times["stock"]
    print(f"first cell drawn, {cells} cells: nbstage {summary(mine)}")
    print(f"  stock jupyter-collaboration: {summary(theirs)}")
    print(f"  ({statistics.median(mine) / statistics.median(theirs):.2f}x)")
    for label, floor in floors.items():
        added = [t - f for t, f in zip(times[label], floor, strict=True)]
        print(f"  {label}: a 3-cell notebook {summary(floor)}; the {cells} cells add")
        print(f"    {summary(added)}")
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--cells", type=int, default=1000)
    parser.add_argument("--timeout", type=float, default=120.0)
    args = parser.parse_args()
    main(args.rounds, args.cells, args.timeout)
