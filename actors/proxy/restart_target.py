"""The restart target: which notebook a restarted SessionManager rejoins (SPEC §8).

A successful connect or create sets it (the path where there is one, else the
UUID); a successful save turns a UUID target into the path; disconnecting the
active notebook clears it; failed calls never change it. The SessionManager says
which of these happened with RestartTargetChanged, beside the call's result.
"""

from __future__ import annotations

from nbstage.protocol.common.frozen import frozen
from nbstage.protocol.session.supervision import RestartTargetChanged, TargetChange


@frozen
class RestartTarget:
    value: str | None = None
    notebook_id: str | None = None


def after_change(target: RestartTarget, change: RestartTargetChanged) -> RestartTarget:
    """The target after a change the SessionManager reported (it reports only successes)."""
    match change.change:
        case TargetChange.JOINED:
            return RestartTarget(change.path or change.notebook_id, change.notebook_id)
        case TargetChange.SAVED if _same_notebook(target, change.notebook_id):
            return RestartTarget(change.path or target.value, change.notebook_id)
        case TargetChange.LEFT if _same_notebook(target, change.notebook_id):
            return RestartTarget()
    return target


def _same_notebook(target: RestartTarget, notebook_id: str) -> bool:
    known = target.notebook_id if target.notebook_id is not None else target.value
    return notebook_id == known


def active_changed(
    target: RestartTarget, notebook_id: str | None, path: str | None
) -> RestartTarget:
    """Learn the id of a target that was handed over by value (a path or a UUID)."""
    if notebook_id is not None and target.value is not None and target.value in (notebook_id, path):
        return RestartTarget(target.value, notebook_id)
    return target
