"""Pieces the benchmark scripts share: a raw jupyter_client baseline, stats, a daemon."""

from __future__ import annotations

import math
import os
import statistics
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from jupyter_client.manager import KernelManager

from nbstage.entrypoints.common.lean import jsonschema_without_iri_grammar
from nbstage.entrypoints.common.python_command import module_command

NBSTAGE = module_command("nbstage.entrypoints.cli")
WARMUP = 20

# Every bench daemon (each in its own fresh state dir) takes its kernels' environments from
# one template kept in bench/.envs, as a user's daemon does from the second day on; the
# first bench run on a machine builds it (docs/notes/environments.md).
os.environ.setdefault("NBSTAGE_ENVS_DIR", str(Path(__file__).resolve().parent / ".envs"))


def warm_client_library() -> None:
    """Import what the SDK's client imports at its first result, before any clock starts.

    The SDK checks each structured result against the tool's ``outputSchema`` and imports
    jsonschema to do so, once per process. A bench's one process stands for many agents,
    each with its own client (or one not written in Python at all), so whichever system it
    happens to time first would pay that import on its clock: 2 s and more, since
    rfc3987-syntax, which JupyterLab's stack installs, builds its grammars when jsonschema
    imports it. That module is kept out as nbstage's daemon keeps it out
    (entrypoints/common/lean.py): the SDK checks no formats."""
    jsonschema_without_iri_grammar()
    import jsonschema.validators  # noqa: F401
    import referencing  # noqa: F401


def summarize(samples: list[float]) -> tuple[float, float]:
    """Median and p90, in milliseconds."""
    ordered = sorted(samples)
    return statistics.median(ordered) * 1000, ordered[int(len(ordered) * 0.9)] * 1000


def raw_roundtrips(runs: int, work: Path) -> list[float]:
    """`1+1` straight through jupyter_client (IPC), until the kernel is idle again."""
    with raw_kernel(work) as once:
        samples = [once() for _ in range(WARMUP + runs)]
    return samples[WARMUP:]


@contextmanager
def raw_kernel(work: Path) -> Iterator[Callable[[], float]]:
    """A python3 kernel over IPC, and a call that runs `1+1` on it until the kernel is idle
    again and answers its seconds."""
    km = KernelManager(kernel_name="python3", transport="ipc", ip=str(work / "raw"))
    km.start_kernel()
    kc = km.client()
    kc.start_channels()

    def once() -> float:
        start = time.perf_counter()
        msg_id = kc.execute("1+1")
        kc.get_shell_msg(timeout=10)
        while True:
            msg = kc.get_iopub_msg(timeout=10)
            idle = msg["content"].get("execution_state") == "idle"
            if idle and msg["parent_header"].get("msg_id") == msg_id:
                return time.perf_counter() - start

    try:
        kc.wait_for_ready(timeout=60)
        yield once
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


@contextmanager
def daemon(state: Path, env: dict[str, str] | None = None) -> Iterator[None]:
    subprocess.run([*NBSTAGE, "daemon", "start", "--state-dir", str(state)], check=True, env=env)
    try:
        yield
    finally:
        subprocess.run([*NBSTAGE, "daemon", "stop", "--state-dir", str(state)], check=True)


def percentile(samples: list[float], q: float) -> float | None:
    """Nearest-rank percentile (q in 0..100); None for no samples."""
    if not samples:
        return None
    ordered = sorted(samples)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]
