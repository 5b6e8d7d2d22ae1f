"""Pieces the benchmark scripts share: a raw jupyter_client baseline, stats, a daemon."""

from __future__ import annotations

import os
import statistics
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from jupyter_client.manager import KernelManager

from nbstage.entrypoints.common.python_command import module_command

NBSTAGE = module_command("nbstage.entrypoints.cli")
WARMUP = 20

# Every bench daemon (each in its own fresh state dir) takes its kernels' environments from
# one template kept in bench/.envs, as a user's daemon does from the second day on; the
# first bench run on a machine builds it (docs/notes/environments.md).
os.environ.setdefault("NBSTAGE_ENVS_DIR", str(Path(__file__).resolve().parent / ".envs"))


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
