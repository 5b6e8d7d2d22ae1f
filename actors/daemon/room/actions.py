"""What a part of the Room asks the Room to do: the Room carries these out (``Room.act``),
so no part sends, offloads or arms a timer itself, and none imports thespian (ADR 0003)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from nbstage.protocol.common.errors import NbstageError
from nbstage.protocol.common.frozen import frozen
from nbstage.protocol.daemon_actors.edge import Origin


@frozen
class Send:
    """A message to an address the part was given (the Daemon, the edge, the kernel)."""

    to: Any
    message: Any


@frozen
class Offload:
    """Blocking work for the edge's worker threads; ``BlockingWorkDone(token)`` comes back."""

    token: Any
    work: Callable[..., Any]
    lane: str | None = None
    reports: bool = False


@frozen
class Wake:
    """A timer: ``payload`` comes back after ``seconds`` (payloads carry generations)."""

    seconds: float
    payload: Any


@frozen
class Answer:
    origin: Origin
    reply: object


@frozen
class Fail:
    origin: Origin
    error: NbstageError


@frozen
class StartKernelChild:
    """The kernel is wanted: the Room creates a Kernel actor (only an actor can)."""


@frozen
class DetachKernel:
    """The latch: the Room lets the current kernel go, for ``reason``."""

    reason: str


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
class SetOutputs:
    """Write an execution's outputs (and, once finished, its count) into the document."""

    cell_id: str
    outputs: Any
    count: int | None


Action = (
    Send
    | Offload
    | Wake
    | Answer
    | Fail
    | StartKernelChild
    | DetachKernel
    | Persist
    | SaveFile
    | FinishClose
    | FirstFlushed
    | BindPath
    | TruncateJournal
    | SetOutputs
    | Edited
    | WantKernel
    | ReportStatus
    | ReadKernelspecs
    | ReadJournal
    | FlushFirst
    | Started
)
