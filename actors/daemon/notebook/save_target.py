"""Where ``save_notebook(path=…)`` may write: the rules, as pure functions.

The path as asked (absolute, links not yet resolved) and its target (links resolved
once) must both end in ``.ipynb``. On disk, a dangling link and a directory are refused;
a file that is not this room's own is refused with ``path_exists`` unless the call
passes ``overwrite`` and the file is a notebook. A file that does not parse as a
notebook is never replaced. The facts come from ``notebook_files.look_at_save_target``,
on the room's worker lane.
"""

from __future__ import annotations

from enum import StrEnum

from nbstage.protocol.common.errors import ErrorCode, NbstageError
from nbstage.protocol.common.frozen import frozen
from nbstage.protocol.daemon_actors.room_followups import DiskStamp

SUFFIX = ".ipynb"


class TargetKind(StrEnum):
    ABSENT = "absent"
    NOTEBOOK = "notebook"
    NOT_A_NOTEBOOK = "not_a_notebook"
    DIRECTORY = "directory"
    DANGLING_LINK = "dangling_link"


@frozen
class SaveTarget:
    given: str
    target: str
    kind: TargetKind
    stamp: DiskStamp | None = None
    """The stamp of the file at ``target`` when it was looked at; None: no file."""
    problem: str | None = None
    """Why a file that is there is not a notebook."""


def path_refusal(given: str, target: str) -> NbstageError | None:
    """What is wrong with the names alone, before anything is claimed or looked at."""
    if not given.endswith(SUFFIX):
        return NbstageError(ErrorCode.BAD_REQUEST, "A notebook path must end in .ipynb.")
    if not target.endswith(SUFFIX):
        return NbstageError(
            ErrorCode.BAD_REQUEST,
            f"{given} leads to {target}, which does not end in .ipynb; a notebook is "
            "saved only to an .ipynb file.",
        )
    return None


def existing_refusal(
    seen: SaveTarget, own_path: str | None, overwrite: bool
) -> NbstageError | None:
    """Why the save must not write at ``seen.target``, or None when it may."""
    if seen.kind is TargetKind.DANGLING_LINK:
        return NbstageError(
            ErrorCode.BAD_REQUEST,
            f"{seen.given} is a symbolic link to {seen.target}, which does not exist. "
            "Save to the link's target itself, or to another path.",
        )
    if seen.target == own_path:
        return None
    match seen.kind:
        case TargetKind.ABSENT:
            return None
        case TargetKind.DIRECTORY:
            return NbstageError(
                ErrorCode.BAD_REQUEST, f"{seen.target} is a directory; save to a file path."
            )
        case TargetKind.NOT_A_NOTEBOOK:
            return NbstageError(
                ErrorCode.PATH_EXISTS,
                f"{seen.target} already exists and is not a notebook ({seen.problem}). It is "
                "never overwritten, also not with overwrite=true; save to another path.",
            )
        case TargetKind.NOTEBOOK if not overwrite:
            return NbstageError(
                ErrorCode.PATH_EXISTS,
                f"{seen.target} already exists and is another notebook, not this one's file. "
                "Pass overwrite=true to replace it, or save to another path.",
            )
    return None
