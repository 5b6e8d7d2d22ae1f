"""The Room actor: one open notebook, the only place its document changes.

It answers room requests from the edge directly, keeps its peers, applies each
mutation at most once per idempotency key, saves atomically and autosaves. Its
kernel side (the Kernel child's lifetime, executions, interrupt, restart) is the
KernelSide mixin in room_kernel.py; decisions come from lifetime.py and the
execution bookkeeping from executions.py.
"""

from __future__ import annotations

import logging
import os
import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass
from datetime import timedelta
from enum import StrEnum
from pathlib import Path
from typing import Any

import orjson
from thespian.actors import ActorAddress, WakeupMessage

from nbstage.actors import lifetime, persistence
from nbstage.actors.base import NbActor
from nbstage.actors.document import Document
from nbstage.actors.executions import ExecutionBook
from nbstage.actors.registry import Registry
from nbstage.actors.room_kernel import (
    ExecutionRecorded,
    KeepAliveExpired,
    KernelSide,
    WaitExpired,
    scoped_key,
)
from nbstage.protocol.edge import EventKind, Origin, RoomEventOccurred
from nbstage.protocol.errors import ErrorCode, NbstageError
from nbstage.protocol.kernels import (
    KernelState,
)
from nbstage.protocol.offload import BlockingWorkDone
from nbstage.protocol.replies import (
    CellCreated,
    CellDeleted,
    CellMoved,
    CellShown,
    CellsShown,
    CellsSummarized,
    CellUpdated,
    ExecutionCounts,
    ExecutionReported,
    KeepAlive,
    Latch,
    NotebookJoined,
    NotebookSaved,
    PeerView,
    RoomDescribed,
    RoomLeft,
)
from nbstage.protocol.requests import (
    CellsFormat,
    CreateCell,
    DeleteCell,
    DescribeRoom,
    ExecuteCell,
    GetCell,
    GetCells,
    GetExecution,
    InterruptKernel,
    LeaveRoom,
    MoveCell,
    ReplaceMatch,
    ReplaceRegex,
    RestartKernel,
    SaveNotebook,
    SetCell,
    ShutdownKernelNow,
)
from nbstage.protocol.rooms import (
    ClaimPath,
    CloseRoom,
    JoinRoom,
    PathBound,
    PathClaimed,
    PathRefused,
    PathReleased,
    RoomClosed,
    RoomSource,
    RoomStarted,
    RoomStartFailed,
    RoomStatus,
    StartRoom,
)

log = logging.getLogger("nbstage.room")

REMEMBERED_KEYS = 512


class SavePurpose(StrEnum):
    AUTOSAVE = "autosave"
    REQUEST = "request"
    NEW_PATH = "new_path"
    CLOSE = "close"
    FIRST = "first"


@dataclass(frozen=True, slots=True)
class SaveFinished:
    """Offload token of one save: the snapshot of ``revision`` went to ``path`` (None: the
    registry's untitled row)."""

    path: str | None
    revision: int
    purpose: SavePurpose
    origin: Origin | None


def _save_error(error: BaseException | None) -> NbstageError:
    if isinstance(error, NbstageError):
        return error
    return NbstageError(ErrorCode.SAVE_FAILED, f"The notebook was not saved: {error}")


@dataclass(frozen=True, slots=True)
class AutosaveDue:
    generation: int


class Room(KernelSide, NbActor):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.config: StartRoom | None = None
        self.daemon: ActorAddress | None = None
        self.doc: Document | None = None
        self.path: str | None = None
        self.ephemeral = True
        self.peers: dict[str, str] = {}
        self.idle_since: float | None = time.monotonic()
        self.applied: OrderedDict[str, object] = OrderedDict()
        """Scoped idempotency key → the reply (or execution id) it was first answered with."""
        self.saved_revision = 0
        self.autosave_generation = 0
        self.first_unsaved_at: float | None = None
        self.life = lifetime.Lifetime(has_runtime=False)
        self.kernel: ActorAddress | None = None
        self.kernel_state = KernelState.NONE
        self.kernel_pid: int | None = None
        self.kernel_actor_pid: int | None = None
        self.teardown_armed: int | None = None
        """Generation of the last keep-alive timer armed, shown by admin."""
        self.kernel_problem: str | None = None
        self.pending_restart: list[Origin] = []
        self.book = ExecutionBook()
        self.finished_count = 0
        self.joins_seen = 0
        self._registry: Registry | None = None
        self.load_error: NbstageError | None = None
        self.closing: ActorAddress | None = None
        self.held_joins: list[JoinRoom] | None = None
        """Joins that arrived while a new notebook's first save was under way."""
        """Who asked this room to close; from then on it acknowledges no mutation."""

    # --- start ----------------------------------------------------------------------------

    def receiveMsg_StartRoom(self, msg: StartRoom, sender: ActorAddress) -> None:
        self.config = msg
        self.daemon = sender
        self.edge = msg.edge
        self.path = msg.path
        self.ephemeral = msg.ephemeral
        self.life = lifetime.Lifetime(has_runtime=msg.runtime is not None)
        try:
            self.doc = self._load(msg)
        except NbstageError as exc:
            self.load_error = exc
            self.send(sender, RoomStartFailed(msg.notebook_id, exc.code, exc.message))
            return
        self.saved_revision = self.doc.revision
        if msg.source is RoomSource.NEW and not msg.ephemeral:
            self.held_joins = []
            self.saved_revision = -1
            self._flush_untitled(SavePurpose.FIRST)
            return
        self._started()

    def _started(self) -> None:
        self.send(self.daemon, RoomStarted(self.notebook_id, os.getpid()))
        self._report_status()

    def _first_flush_finished(self, done: BlockingWorkDone) -> None:
        """A new persisted notebook exists once its untitled row is durable; joins wait."""
        held, self.held_joins = self.held_joins, None
        if done.ok:
            self._started()
            for join in held:
                self.receiveMsg_JoinRoom(join, self.daemon)
            return
        self.doc = None
        self.load_error = _save_error(done.error)
        error = self.load_error
        self.send(self.daemon, RoomStartFailed(self.notebook_id, error.code, error.message))
        for join in held:
            self.fail(join.origin, error)

    def _load(self, msg: StartRoom) -> Document:
        if msg.source is RoomSource.FILE:
            from nbstage.actors.notebook_files import load_notebook

            return Document.from_json(load_notebook(Path(msg.path)))
        if msg.source is RoomSource.UNTITLED:
            content = self.registry.load_untitled(msg.notebook_id)
            if content is None:
                raise NbstageError(
                    ErrorCode.NOTEBOOK_UNAVAILABLE,
                    f"Notebook {msg.notebook_id} is no longer available.",
                )
            return Document.from_json(orjson.loads(content))
        return Document.empty("python3" if msg.runtime else None)

    @property
    def registry(self) -> Registry:
        if self._registry is None:
            self._registry = Registry(Path(self.config.state_dir) / "registry.sqlite3")
        return self._registry

    @property
    def notebook_id(self) -> str:
        return self.config.notebook_id

    @property
    def executions_dir(self) -> Path:
        return Path(self.config.state_dir) / "executions"

    # --- peers and the kernel's lifetime --------------------------------------------------

    def receiveMsg_JoinRoom(self, msg: JoinRoom, sender: ActorAddress) -> None:
        if self.held_joins is not None:
            self.held_joins.append(msg)
            return
        if self.doc is None:
            self.joins_seen = max(self.joins_seen, msg.join_seq)
            unloaded = NbstageError(
                ErrorCode.NOTEBOOK_UNAVAILABLE, "The notebook could not be loaded."
            )
            self.fail(msg.origin, self.load_error or unloaded)
            return
        self.joins_seen = max(self.joins_seen, msg.join_seq)
        peer_id = uuid.uuid4().hex[:12]
        self.peers[peer_id] = msg.peer_label
        self.idle_since = None
        self._carry_out(lifetime.peer_joined, self.life)
        joined = NotebookJoined(**self._describe(), peer_id=peer_id, created=msg.created)
        self.answer(msg.origin, joined)
        self._event(EventKind.PEER_JOINED, {"peer_id": peer_id, "label": msg.peer_label})
        self._report_status()

    def _leave(self, origin: Origin, req: LeaveRoom) -> None:
        label = self.peers.pop(req.peer_id, None)
        if label is None:
            raise NbstageError(ErrorCode.NOT_A_PEER, f"{req.peer_id} is not in this room.")
        if not self.peers:
            self.idle_since = time.monotonic()
        self._carry_out(lifetime.peer_left, self.life)
        self.answer(origin, RoomLeft())
        self._event(EventKind.PEER_LEFT, {"peer_id": req.peer_id, "label": label})
        self._report_status()

    def _describe(self) -> dict[str, Any]:
        """The NotebookFacts fields, shared by NotebookJoined and RoomDescribed."""
        return {
            "notebook_id": self.notebook_id,
            "path": self.path,
            "ephemeral": self.ephemeral,
            "runtime": self.config.runtime,
            "cell_count": len(self.doc.cells),
            "kernel_status": self.kernel_state,
        }

    def _report_status(self) -> None:
        self.send(
            self.daemon,
            RoomStatus(
                self.notebook_id,
                self.path,
                self.ephemeral,
                tuple(self.peers.items()),
                self.kernel_state.value,
                self.kernel_pid,
                self.idle_since,
                self.joins_seen,
                self.kernel_actor_pid,
            ),
        )

    def _event(self, kind: EventKind, detail: dict[str, Any]) -> None:
        self.send(self.edge, RoomEventOccurred(kind, self.notebook_id, detail))

    # --- requests -------------------------------------------------------------------------

    def request_handlers(self):
        return {
            LeaveRoom: self._leave,
            GetCell: self._get_cell,
            GetCells: self._get_cells,
            CreateCell: self._mutation(self._create_cell),
            SetCell: self._mutation(self._set_cell),
            DeleteCell: self._mutation(self._delete_cell),
            MoveCell: self._mutation(self._move_cell),
            ReplaceMatch: self._mutation(self._replace_match),
            ReplaceRegex: self._mutation(self._replace_regex),
            SaveNotebook: self._save_request,
            ExecuteCell: self._execute,
            GetExecution: self._get_execution,
            InterruptKernel: self._interrupt,
            RestartKernel: self._restart,
            DescribeRoom: self._describe_room,
            ShutdownKernelNow: self._shutdown_kernel,
        }

    def _describe_room(self, origin: Origin, req: DescribeRoom) -> None:
        life = self.life
        described = RoomDescribed(
            **self._describe(),
            peers=[PeerView(p, label) for p, label in self.peers.items()],
            kernel_pid=self.kernel_pid,
            kernel_actor_pid=self.kernel_actor_pid,
            executions=ExecutionCounts(self.book.live_ids(), self.finished_count),
            latch=Latch(life.kernel_attached, life.generation),
            keep_alive=KeepAlive(
                self.config.settings.keep_alive_secs,
                self.teardown_armed,
                self.teardown_armed == life.generation and not self.peers,
            ),
            unsaved=self.doc.revision != self.saved_revision,
            room_pid=os.getpid(),
        )
        self.answer(origin, described)

    def _get_cell(self, origin: Origin, req: GetCell) -> None:
        self.answer(origin, CellShown(self.doc.cell(req.cell_id).view()))

    def _get_cells(self, origin: Origin, req: GetCells) -> None:
        total = len(self.doc.cells)
        if req.format is CellsFormat.SUMMARY:
            self.answer(origin, CellsSummarized(self.doc.summaries(req.start, req.count), total))
        else:
            cells = self.doc.cells_json(req.start, req.count, req.include_outputs)
            self.answer(origin, CellsShown(cells, total))

    # --- mutations ------------------------------------------------------------------------

    def _mutation(self, apply):
        """Wrap a mutation so a repeated idempotency key returns the first result unchanged."""

        def handle(origin: Origin, req: Any) -> None:
            if self.closing is not None:
                raise NbstageError(
                    ErrorCode.SHUTTING_DOWN,
                    "This notebook is closing, so the change was not made; try again.",
                )
            key = scoped_key(req)
            if key is not None and key in self.applied:
                self.answer(origin, self.applied[key])
                return
            result = apply(req)
            self._remember(key, result)
            self.answer(origin, result)
            self._edited()

        return handle

    def _remember(self, key: str | None, result: object) -> None:
        if key is None:
            return
        self.applied[key] = result
        while len(self.applied) > REMEMBERED_KEYS:
            self.applied.popitem(last=False)

    def _create_cell(self, req: CreateCell) -> CellCreated:
        cell, index = self.doc.create_cell(req.source, req.cell_type, req.index)
        return CellCreated(cell.id, index)

    def _set_cell(self, req: SetCell) -> CellUpdated:
        cell = self.doc.set_cell(req.cell_id, req.source, req.cell_type)
        return CellUpdated(cell.id)

    def _delete_cell(self, req: DeleteCell) -> CellDeleted:
        self.doc.delete_cell(req.cell_id)
        return CellDeleted(req.cell_id)

    def _move_cell(self, req: MoveCell) -> CellMoved:
        index = self.doc.move_cell(req.cell_id, req.after_cell_id)
        return CellMoved(req.cell_id, index)

    def _replace_match(self, req: ReplaceMatch) -> CellUpdated:
        cell = self.doc.replace_match(
            req.cell_id, req.match, req.content, req.context_before, req.context_after
        )
        return CellUpdated(cell.id)

    def _replace_regex(self, req: ReplaceRegex) -> CellUpdated:
        cell = self.doc.replace_regex(req.cell_id, req.pattern, req.content)
        return CellUpdated(cell.id)

    # --- timers ---------------------------------------------------------------------------

    def receiveMsg_WakeupMessage(self, msg: WakeupMessage, sender: ActorAddress) -> None:
        match msg.payload:
            case AutosaveDue(generation) if generation == self.autosave_generation:
                self._persist_if_changed()
            case KeepAliveExpired() as expired:
                self.receiveMsg_KeepAliveExpired(expired, sender)
            case WaitExpired(execution_id, origin) if self.book.release_waiter(
                execution_id, origin
            ):
                record = self.book.get(execution_id)
                self.answer(origin, ExecutionReported(record.report()))

    # --- saving ---------------------------------------------------------------------------

    def _edited(self) -> None:
        """Schedule an autosave: about ``delay`` after the last edit, at most ``max_delay``."""
        if self.ephemeral and self.path is None:
            return
        now = time.monotonic()
        if self.first_unsaved_at is None:
            self.first_unsaved_at = now
        settings = self.config.settings
        deadline = self.first_unsaved_at + settings.autosave_max_delay_secs
        delay = max(0.0, min(settings.autosave_delay_secs, deadline - now))
        self.autosave_generation += 1
        self.wakeupAfter(timedelta(seconds=delay), payload=AutosaveDue(self.autosave_generation))

    def _persist_if_changed(self, purpose: SavePurpose = SavePurpose.AUTOSAVE) -> bool:
        """Start saving if there are unsaved edits; False when there is nothing to do."""
        if self.ephemeral and self.path is None:
            return False
        if self.doc.revision == self.saved_revision:
            self.first_unsaved_at = None
            return False
        if self.path is not None:
            self._save_file(self.path, purpose)
        else:
            self._flush_untitled(purpose)
        return True

    def _save_request(self, origin: Origin, req: SaveNotebook) -> None:
        if req.path is None:
            if self.path is None:
                raise NbstageError(
                    ErrorCode.NO_PATH,
                    "This notebook has no file yet. Call save_notebook with a path.",
                )
            self._save_file(self.path, SavePurpose.REQUEST, origin)
            return
        from nbstage.actors.notebook_files import absolute_notebook_path

        target = absolute_notebook_path(req.path)
        if not target.endswith(".ipynb"):
            raise NbstageError(ErrorCode.BAD_REQUEST, "A notebook path must end in .ipynb.")
        self.send(self.daemon, ClaimPath(self.notebook_id, target, origin))

    def receiveMsg_PathClaimed(self, msg: PathClaimed, sender: ActorAddress) -> None:
        self._save_file(msg.path, SavePurpose.NEW_PATH, msg.origin)

    def receiveMsg_PathRefused(self, msg: PathRefused, sender: ActorAddress) -> None:
        self.fail(msg.origin, NbstageError(msg.code, msg.message))

    def _save_file(self, path: str, purpose: SavePurpose, origin: Origin | None = None) -> None:
        """Write an immutable snapshot, taken now, on the edge's worker (this room's lane)."""
        snapshot = orjson.dumps(self.doc.to_json())
        token = SaveFinished(path, self.doc.revision, purpose, origin)
        self.offload(token, lambda: persistence.write_snapshot(Path(path), snapshot), self._lane)

    def _flush_untitled(self, purpose: SavePurpose = SavePurpose.AUTOSAVE) -> None:
        snapshot = orjson.dumps(self.doc.to_json())
        token = SaveFinished(None, self.doc.revision, purpose, None)
        registry = self.registry
        notebook_id = self.notebook_id
        self.offload(token, lambda: registry.store_untitled(notebook_id, snapshot), self._lane)

    @property
    def _lane(self) -> str:
        return f"room:{self.notebook_id}"

    def work_handlers(self):
        return {SaveFinished: self._save_finished, ExecutionRecorded: self._execution_recorded}

    def _save_finished(self, done: BlockingWorkDone) -> None:
        token: SaveFinished = done.token
        if done.ok:
            self.saved_revision = max(self.saved_revision, token.revision)
            if self.saved_revision == self.doc.revision:
                self.first_unsaved_at = None
            if token.path is not None:
                self._event(EventKind.SAVED, {"path": token.path})
        else:
            log.error("saving %s failed: %s", self.notebook_id, done.error)
        match token.purpose:
            case SavePurpose.REQUEST:
                self._answer_save(token, done)
            case SavePurpose.NEW_PATH:
                self._new_path_saved(token, done)
            case SavePurpose.CLOSE:
                self._finish_close(done.ok)
            case SavePurpose.FIRST:
                self._first_flush_finished(done)

    def _answer_save(self, token: SaveFinished, done: BlockingWorkDone) -> None:
        if done.ok:
            self.answer(token.origin, NotebookSaved(self.notebook_id, token.path))
        else:
            self.fail(token.origin, _save_error(done.error))

    def _new_path_saved(self, token: SaveFinished, done: BlockingWorkDone) -> None:
        if not done.ok:
            self.send(self.daemon, PathReleased(self.notebook_id, token.path))
            self.fail(token.origin, _save_error(done.error))
            return
        self.send(self.daemon, PathBound(self.notebook_id, token.path))
        self.path = token.path
        self.ephemeral = False
        self._answer_save(token, done)
        self._report_status()

    # --- closing --------------------------------------------------------------------------

    def receiveMsg_CloseRoom(self, msg: CloseRoom, sender: ActorAddress) -> None:
        """Stop the kernel, then save what is unsaved; RoomClosed once the save is done."""
        self.closing = sender
        if self.kernel is not None:
            self._detach_kernel(msg.reason)
        if self.doc is None or not self._persist_if_changed(SavePurpose.CLOSE):
            self._finish_close(saved=True)

    def _finish_close(self, saved: bool) -> None:
        if self._registry is not None:
            self._registry.close()
            self._registry = None
        self.send(self.closing, RoomClosed(self.notebook_id, saved))
