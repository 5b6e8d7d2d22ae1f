"""What a part of the Room asks the Room to do: the Room carries these out (``Room.act``),
so no part sends, offloads or arms a timer itself, and none imports thespian (ADR 0003).

The first six (Send, Offload, Wake, AfterMail, Answer, Fail) are any actor's effects
(actors/common/effects.py), carried out by the base's ``effect_carriers``, the same ones
the Daemon's admissions return; the rest only the Room can carry out."""

from __future__ import annotations

from typing import Any

from nbstage.actors.common.effects import AfterMail, Answer, Fail, Offload, Send, Wake
from nbstage.protocol.common.errors import NbstageError
from nbstage.protocol.common.frozen import frozen
from nbstage.protocol.daemon_actors.edge import Origin


@frozen
class StartKernelChild:
    """The kernel is wanted: the Room creates a Kernel actor (only an actor can)."""


@frozen
class DetachKernel:
    """The latch: the Room lets the current kernel go, for ``reason``."""

    reason: str


@frozen
class EndChild:
    """A Kernel child said it stopped: the Room ends its actor (only an actor can)."""

    child: Any


@frozen
class Restart:
    """Restart the kernel for ``origin`` now (the kernelspecs it waited for are read)."""

    origin: Origin


@frozen
class ProjectReported:
    """The kernel is up: what its project says (a refusal, a lock newly trusted) is heard."""


@frozen
class CommitDependencies:
    """Make manage_dependencies' edit (``plan``), then trust and record it."""

    origin: Origin
    plan: Any
    applied: Any = None


@frozen
class ReadKernelspecs:
    """Read the installed kernelspecs (and, at the start, the trusted dependency sets);
    ``restart`` is the restart_kernel call that waits for them, if any."""

    restart: Origin | None = None


@frozen
class ReadJournal:
    """Read the journal's records, to replay them over the document at the start."""


@frozen
class FlushFirst:
    """Write a new persisted notebook's untitled row before anyone joins it."""


@frozen
class Loaded:
    """The document is loaded (from the file: with the file's stamp and notebook as read);
    the start goes on with the reads that follow."""

    doc: Any
    stamp: Any = None
    base: dict | None = None


@frozen
class StartFailed:
    """The room could not open: the Daemon is told, and the joins held are refused."""

    error: NbstageError


@frozen
class RefuseHeld:
    """Refuse the joins held for the start (the room is closing)."""

    error: NbstageError


@frozen
class ReadDone:
    """One read the start waits for came back: joins are let in after the last."""


@frozen
class Started:
    """The room is open: tell the Daemon, then let in ``joins`` held for the start."""

    joins: tuple[Any, ...] = ()


@frozen
class ReportStatus:
    """Tell the Daemon how the room stands now (``views.status``)."""


@frozen
class WantKernel:
    """A kernel is wanted again (after a restart let the old one go)."""


@frozen
class Persist:
    """Save if there are unsaved edits (for ``purpose``); a close with nothing to save is
    finished at once."""

    purpose: Any


@frozen
class SaveFile:
    """Save the document to ``path`` (None: the room's own path) now, or queue it."""

    path: str | None
    purpose: Any
    origin: Origin | None = None


@frozen
class FinishClose:
    """The close's last flush is over (``saved`` or not, and why): report once settled."""

    saved: bool
    error: BaseException | None = None


@frozen
class SettleClose:
    """Work the close waited for is over: the close is reported once nothing is left."""


@frozen
class FirstFlushed:
    """A new persisted notebook's untitled row is written (or not): the start goes on."""

    error: BaseException | None


@frozen
class BindPath:
    """The notebook now lives at ``path``: the Room takes it as its own."""

    path: str


@frozen
class TruncateJournal:
    """Edits up to ``seq`` are in the file: the journal may drop them."""

    seq: int


@frozen
class Edited:
    """The document changed outside a request (outputs, a merge): autosave is due."""


@frozen
class Merged:
    """The file changed from outside: the document takes ``notebook`` (None: the merge left
    it as it was); with ``holds_all``, the file holds every edit, so none is unsaved."""

    notebook: dict | None
    holds_all: bool


@frozen
class ResumeAutosave:
    """After a merge: unsaved edits are saved again once the file is a notebook again."""


@frozen
class NextFileJob:
    """Start the saves and looks waiting for the one that just came back."""


@frozen
class SetOutputs:
    """Write an execution's outputs (and, once finished, its count) into the document."""

    cell_id: str
    outputs: Any
    count: int | None


Action = (
    Send
    | Offload
    | Wake
    | AfterMail
    | Answer
    | Fail
    | StartKernelChild
    | DetachKernel
    | EndChild
    | ProjectReported
    | CommitDependencies
    | Restart
    | Persist
    | SaveFile
    | FinishClose
    | SettleClose
    | FirstFlushed
    | BindPath
    | TruncateJournal
    | SetOutputs
    | Merged
    | ResumeAutosave
    | NextFileJob
    | Edited
    | WantKernel
    | ReportStatus
    | ReadKernelspecs
    | ReadJournal
    | FlushFirst
    | Loaded
    | StartFailed
    | RefuseHeld
    | ReadDone
    | Started
)
