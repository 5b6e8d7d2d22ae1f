"""Where the time of `bench/lab_first_draw.py` goes: one Lab page in headless Chromium,
split by marks the page itself takes (``performance.now()``, from the navigation's start).

A script put into every new document before Lab's own marks: Lab's app object exposed
(its scripts are fetched and ran), ``app.started`` (the plugins that start at once are
active), ``app.restored`` (the layout is back), the notebook's room websocket made,
opened, and its sync step 2 received (the document is in the page), the notebook widget,
its first cell node, and the first cell's source drawn. Each round opens an empty Lab
page (no notebook: until it is restored), a 3-cell notebook and a big one. The
navigation and resource timings say what the HTML, the scripts and the API calls took.

Each variant is an `nbstage lab` of its own, with Jupyter config and settings dirs of
its own, so that a lever that is a setting (plugins disabled or deferred in
``labconfig/page_config.json``, a notebook setting in the user settings) can be tried
against the current code without changing it; the variants are opened by turns. The
variant ``main`` is another checkout's code (``NBSTAGE_BENCH_OTHER_PYTHON``). Never
asserts.

    .venv/bin/python bench/lab_draw_split.py [--rounds 3] [--cells 1000] [--variant NAME]...
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

import psutil
from common import NBSTAGE
from lab_sync import write_notebook
from lab_variants import VARIANTS
from y_client import Nbstage

from nbstage.entrypoints.common.statedir import client_paths
from nbstage.entrypoints.lab.room_link import RoomLink

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.headless_chromium import INSTALL, MISSING, headless_chromium

MARKS = r"""
(() => {
  const marks = (window.__drawMarks = {});
  const mark = (name) => { if (!(name in marks)) marks[name] = performance.now(); };
  const Native = window.WebSocket;
  window.WebSocket = class extends Native {
    constructor(url, protocols) {
      super(url, protocols);
      if (!String(url).includes('/api/collaboration/room/json:notebook')) return;
      mark('ws_made');
      this.addEventListener('open', () => mark('ws_open'));
      this.addEventListener('message', (event) => {
        mark('ws_first_message');
        const data = event.data;
        if (data instanceof ArrayBuffer) {
          const head = new Uint8Array(data, 0, Math.min(2, data.byteLength));
          if (head[0] === 0 && head[1] === 1) mark('ws_sync_step2');
        }
      });
    }
  };
  const poll = setInterval(() => {
    const app = window.jupyterapp;
    if (!app) return;
    clearInterval(poll);
    mark('app_exposed');
    app.started.then(() => mark('app_started'));
    app.restored.then(() => mark('app_restored'));
  }, 2);
  const seen = new MutationObserver(() => {
    if (document.querySelector('.jp-Notebook')) mark('notebook_widget');
    if (document.querySelector('.jp-Notebook .jp-Cell')) mark('first_cell_node');
    const cell = document.querySelector('.jp-Notebook .jp-Cell .cm-content');
    if (cell !== null && cell.textContent.includes('x_0 = 0')) {
      mark('first_cell_drawn');
      seen.disconnect();
    }
  });
  seen.observe(document, { subtree: true, childList: true, characterData: true });
})();
"""

ORDER = (
    "html",
    "app_exposed",
    "app_started",
    "ws_made",
    "ws_open",
    "ws_sync_step2",
    "notebook_widget",
    "first_cell_node",
    "first_cell_drawn",
    "app_restored",
)

CPU = ("main", "renderer", "lab", "daemon")

TIMINGS = """
const nav = performance.getEntriesByType('navigation')[0];
const resources = performance.getEntriesByType('resource').map(r => ({
  name: r.name, start: r.startTime, end: r.responseEnd, ttfb: r.responseStart - r.requestStart,
  size: r.transferSize, body: r.encodedBodySize, kind: r.initiatorType}));
return {marks: window.__drawMarks, html: nav.responseEnd, dom: nav.domContentLoadedEventEnd,
        resources};
"""


def prepare_dirs(work: Path, name: str, variant: dict) -> dict[str, str]:
    """Jupyter dirs of the variant's own; the environment that points Lab at them."""
    base = work / f"jupyter-{name}"
    config = base / "config"
    (config / "labconfig").mkdir(parents=True)
    page_config = {"exposeAppInBrowser": True, **variant.get("page_config", {})}
    (config / "labconfig" / "page_config.json").write_text(json.dumps(page_config))
    for plugin, values in variant.get("settings", {}).items():
        package, _, file = plugin.partition(":")
        where = base / "settings" / package
        where.mkdir(parents=True, exist_ok=True)
        (where / f"{file}.jupyterlab-settings").write_text(json.dumps(values))
    return {
        "JUPYTER_CONFIG_DIR": str(config),
        "JUPYTERLAB_SETTINGS_DIR": str(base / "settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(base / "workspaces"),
    }


def daemon_pid(side: Nbstage) -> int:
    async def ask() -> int:
        link = await RoomLink.open(client_paths(side.state).socket)
        try:
            return int((await link.request("identity"))["pid"])
        finally:
            link.close()

    return asyncio.run(ask())


def cpu_seconds(pids: list[int]) -> float:
    total = 0.0
    for pid in pids:
        try:
            times = psutil.Process(pid).cpu_times()
        except psutil.Error:
            continue
        total += times.user + times.system
    return total


def server_cpu(side: Nbstage) -> dict[str, float]:
    """CPU seconds so far of the Lab server's process and the daemon's."""
    return {"lab": cpu_seconds([side.process.pid]), "daemon": cpu_seconds([side.daemon_pid])}


def page_cpu(driver) -> dict[str, float]:
    """CPU seconds so far of the page's renderer: its main thread and the whole process."""
    metrics = driver.execute_cdp_cmd("Performance.getMetrics", {})["metrics"]
    found = {m["name"]: m["value"] for m in metrics}
    return {"main": found["ThreadTime"], "renderer": found["ProcessTime"]}


def open_page(driver, side: Nbstage, name: str, workspace: str, timeout: float) -> dict:
    """Open the notebook's page and wait until Lab is restored and its first cell drawn.

    The page comes from about:blank, as lab_first_draw.py's do (a renderer of its own, as
    a new tab's), by a navigation that returns once the page is committed; the CPU of
    the page's renderer is counted from then, that of the servers from before it."""
    tree = f"/tree/{quote(name)}" if name else ""
    url = f"{side.base}/lab/workspaces/{workspace}{tree}?token={quote(side.token)}"
    driver.get("about:blank")
    before = server_cpu(side)
    start = time.perf_counter()
    driver.execute_cdp_cmd("Page.navigate", {"url": url})
    driver.execute_cdp_cmd("Performance.enable", {"timeDomain": "threadTicks"})
    page_before = page_cpu(driver)
    done = "const m = window.__drawMarks || {}; return [m.first_cell_drawn, m.app_restored];"
    while None in driver.execute_script(done)[0 if name else 1 :]:
        if time.perf_counter() - start > timeout:
            break
        time.sleep(0.01)
    outside = time.perf_counter() - start
    found = driver.execute_script(TIMINGS)
    page_after, after = page_cpu(driver), server_cpu(side)
    found["outside"] = outside * 1000
    found["cpu"] = {k: (page_after[k] - page_before[k]) * 1000 for k in page_before}
    found["cpu"].update({k: (after[k] - before[k]) * 1000 for k in before})
    return found


def show(label: str, found: dict) -> None:
    marks = {"html": found["html"], **found["marks"]}
    line = "  ".join(f"{k} {marks[k]:.0f}" for k in ORDER if k in marks)
    cpu = "  ".join(f"{k} {v:.0f}" for k, v in found["cpu"].items())
    print(f"  {label}: selenium {found['outside']:.0f} ms | {line} | cpu ms {cpu}", flush=True)


def calls(found: dict) -> None:
    """Every call of the page but its static files, in the order they were made."""
    made = [r for r in found["resources"] if "/static/" not in r["name"]]
    made.sort(key=lambda r: r["start"])
    for r in made:
        path = r["name"].split("?")[0].split("/", 3)[-1]
        print(f"      {r['start']:6.0f} → {r['end']:6.0f}  ttfb {r['ttfb']:5.0f}  {path}")
    scripts = [r for r in found["resources"] if "/static/" in r["name"]]
    if scripts:
        last = max(r["end"] for r in scripts)
        fetched = sum(r["size"] for r in scripts)
        print(
            f"      {len(scripts)} static files, last at {last:.0f} ms,"
            f" {fetched / 1e6:.2f} MB over the wire"
        )


def main(rounds: int, cells: int, timeout: float, chosen: list[str], detail: bool) -> None:
    if MISSING:
        sys.exit(f"needs Debian's chromium and chromium-driver: {INSTALL}")
    print(f"load average before: {os.getloadavg()}")
    with tempfile.TemporaryDirectory(prefix="nblab-split-") as tmp:
        work = Path(tmp)
        sides: dict[str, Nbstage] = {}
        results: dict[str, dict[str, list[float]]] = {}
        try:
            for name in chosen:
                (work / name).mkdir()
                variant = VARIANTS[name]
                nbstage = variant.get("nbstage", NBSTAGE)
                sides[name] = Nbstage(work / name, prepare_dirs(work, name, variant), nbstage)
                sides[name].daemon_pid = daemon_pid(sides[name])
                results[name] = {}
            with headless_chromium(prefix="nbc-split-") as driver:
                driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": MARKS})
                for side in sides.values():
                    write_notebook(side.root / "warm.ipynb", 3)
                    open_page(driver, side, "warm.ipynb", "warm", timeout)
                for k in range(rounds):
                    order = list(sides.items())
                    order = order[k % len(order) :] + order[: k % len(order)]
                    for label, side in order:
                        for kind, size in (("empty", 0), ("small", 3), ("big", cells)):
                            name = f"{kind}-{k}.ipynb" if size else ""
                            if size:
                                write_notebook(side.root / name, size, outputs=kind == "big")
                            found = open_page(driver, side, name, f"{kind}{k}", timeout)
                            show(f"round {k} {label} {kind}", found)
                            if detail:
                                calls(found)
                            marks = {"html": found["html"], **found["marks"]}
                            marks.update({f"cpu {k}": v for k, v in found["cpu"].items()})
                            for mark, value in marks.items():
                                results[label].setdefault(f"{kind} {mark}", []).append(value)
        finally:
            for side in sides.values():
                side.stop()
    for label, series in results.items():
        print(f"{label} (p50 ms):")
        for kind in ("empty", "small", "big"):
            line = "  ".join(
                f"{m} {statistics.median(series[f'{kind} {m}']):.0f}"
                for m in (*ORDER, *(f"cpu {k}" for k in CPU))
                if f"{kind} {m}" in series
            )
            print(f"  {kind}: {line}")
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cells", type=int, default=1000)
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--variant", action="append", choices=sorted(VARIANTS))
    parser.add_argument("--detail", action="store_true", help="the slowest calls of each page")
    args = parser.parse_args()
    main(args.rounds, args.cells, args.timeout, args.variant or ["current"], args.detail)
