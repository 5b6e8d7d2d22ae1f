"""The Daemon's sweep of inline environments: those unused for a while that no open
room's kernel runs in are removed, off the loop, one sweep at a time."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection
from pathlib import Path

from nbstage.actors.daemon.environment import environments
from nbstage.protocol.common.errors import ErrorCode, NbstageError
from nbstage.protocol.common.offload import BlockingWorkDone
from nbstage.protocol.daemon.replies import EnvironmentsCollected

log = logging.getLogger("nbstage.daemon")

LANE = "environments"


def sweep_work(
    state_dir: str, in_use: Collection[str], older_than: float
) -> Callable[[], list[Path]]:
    """Blocking work: remove the environments unused for ``older_than`` seconds."""
    root = environments.envs_dir(state_dir)
    return lambda: environments.collect_envs(root, in_use, time.time(), older_than)


def sweep_outcome(
    done: BlockingWorkDone, kept: Collection[str]
) -> EnvironmentsCollected | NbstageError:
    """What a finished sweep removed (logged), or what a failed one met."""
    if not done.ok:
        log.warning("the environment sweep failed: %s", done.error)
        return NbstageError(ErrorCode.INTERNAL, str(done.error))
    removed = [str(path) for path in done.result]
    if removed:
        log.info("removed %d unused environments: %s", len(removed), ", ".join(removed))
    return EnvironmentsCollected(removed, list(kept))
