"""What a Room leaves for later and gets back in its own mailbox.

Two kinds, neither seen by any other actor: the payloads of the timers a Room arms
(``wakeupAfter``, back as a ``WakeupMessage``), and the tokens of the blocking work
it hands to its edge (``NbActor.offload``, back as ``BlockingWorkDone.token``), with
what the work on its file hands back (``BlockingWorkDone.result``).
thespian timers cannot be cancelled, so each timer payload says which arming it
belongs to and the Room drops the ones that are stale.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from nbstage.protocol.common.frozen import frozen
from nbstage.protocol.daemon.dependency_modes import ApplyDependencies, DependencyPlan
from nbstage.protocol.daemon_actors.edge import Origin


@frozen
class AutosaveDue:
    """Autosave timer payload."""

    generation: int
    """The Room's autosave generation when armed; a later edit re-arms and makes this stale."""


@frozen
class ChangeSayDue:
    """The end of the Room's pause between two ``changed`` events (change_beacon.py)."""


@frozen
class KeepAliveExpired:
    """Keep-alive timer payload; also accepted as a message so tests can fire it in order."""

    generation: int
    """The lifetime generation it was armed in; a join since then makes it stale."""


@frozen
class WaitExpired:
    """Timer payload: a caller waiting on an execution gets its report as it stands."""

    execution_id: str
    origin: Origin
    """The waiting request; it is answered unless the execution finished first."""


class SavePurpose(StrEnum):
    """Why a save was started, which says what to do once it is done."""

    AUTOSAVE = "autosave"
    REQUEST = "request"
    NEW_PATH = "new_path"
    CLOSE = "close"
    FIRST = "first"


@frozen
class SaveFinished:
    """Offload token of one save: the snapshot of ``revision`` went to ``path``."""

    path: str | None
    """The notebook file, or None for the registry's untitled row."""
    revision: int
    purpose: SavePurpose
    origin: Origin | None
    """The request to answer, for a save someone asked for."""
    journal_seq: int = 0
    """The room's last journal record when the snapshot was taken: once the save is
    durable, the records up to it are truncated."""


@frozen
class FileCheckDue:
    """Timer payload: look whether the room's file changed on disk."""

    generation: int
    """The Room's check generation when armed; any other is stale."""


@frozen
class NotebookFileRead:
    """Offload token: the room's notebook file was read and parsed at its start (the
    result is the Document, the stamp of the file read, and the file's JSON as read)."""


@frozen
class StaleTempsSwept:
    """Offload token: the temp files that killed saves left beside the room's file were
    removed (the result says how many)."""


@frozen
class FileLooked:
    """Offload token of a look at the room's file (a stat, and a read when it changed)."""

    path: str


@frozen
class DiskStamp:
    """What tells one version of a file from another without reading it.

    Not ``st_ctime``: renaming the Room's temp file over the notebook changes it.
    """

    device: int
    inode: int
    size: int
    mtime_ns: int


@frozen
class FileWritten:
    """Result of a save that wrote: the stamp of the file as the Room itself wrote it."""

    stamp: DiskStamp


@frozen
class FileOnDisk:
    """Result of a look or a save that found the file changed from outside (nothing written)."""

    stamp: DiskStamp | None
    """None: there is no file."""
    notebook: dict[str, Any] | None
    """The file as a v4.5 notebook dict, cells without an id of their own having ``id`` None;
    None when there is no file or it is not a notebook."""
    problem: str | None = None
    """Why the file is not a notebook, when it is not."""


@frozen
class ExecutionRecorded:
    """Offload token: an execution's record was written to executions/."""

    execution_id: str


@frozen
class LiveExecutionRecorded:
    """Offload token: the live record of an execution is on disk, and ``origin`` may now be
    told of the execution."""

    execution_id: str
    origin: Origin


@frozen
class StoredExecutionRead:
    """Offload token: the record of an execution this room's book does not hold was read."""

    execution_id: str
    origin: Origin


@frozen
class KernelspecsRead:
    """Offload token: the installed kernelspecs were read, to choose the notebook's kernel."""

    restart: Origin | None = None
    """A restart_kernel that asked to choose again; None for the choice at the room's start."""


@frozen
class JournalAppended:
    """Offload token: a mutation's journal record is durable, so its answer can go."""

    seq: int
    origin: Origin
    reply: object
    """The mutation's answer, held until the record is written."""


@frozen
class JournalRead:
    """Offload token: the room's journal records, read at its start to restore them."""


@frozen
class JournalTruncated:
    """Offload token: records up to ``upto`` were deleted after a durable save."""

    upto: int


@frozen
class JournalClosed:
    """Offload token: the room's journal connection was closed at its close."""


@frozen
class DependenciesPrepared:
    """Offload token: manage_dependencies' environment work finished. ``apply=restart``
    built the new set's environment; ``apply=sync`` installed into the running kernel's."""

    origin: Origin
    plan: DependencyPlan
    """Carried out once this is done."""
    mode: ApplyDependencies
    started: float


@frozen
class DependenciesRecorded:
    """Offload token: a dependency edit's journal record and trust row are durable."""

    origin: Origin
    reply: object
    restart: bool
    """Start the kernel again in its (new) environment before answering."""


@frozen
class ProjectTrustRecorded:
    """Offload token: the fingerprint of an approved project after uv locked it is on
    record, so the next start finds it approved (actors/daemon/environment/projects.py)."""


@frozen
class SharedDocBuilt:
    """Offload token: a worker built the room's shared Y document (the result is a
    ``shared_build.Built``); only the build of ``generation`` is taken."""

    generation: int


@frozen
class SharedDocMirrorDue:
    """Back to the Room through its host (``TellAfterMail``): the people's shared document
    takes what the Room changed, now that the answers those changes produced have gone
    out (lab_people.py)."""


@frozen
class SharedDocFrozen:
    """Offload token: a worker froze the room's shared Y document (the result is a
    ``shared_build.Frozen``); only the freeze of ``generation`` is taken, and only if
    nobody asked for the document meanwhile."""

    generation: int


@frozen
class FreedPagesReleased:
    """Offload token: a worker gave back to the system the pages malloc held free, after
    a shared document's build was taken or its live form let go (freed_pages.py)."""


@frozen
class SharedDocIdle:
    """Timer payload: no person has been in the room since ``generation``; its shared
    document is frozen unless one joined since."""

    generation: int
