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
from pathlib import Path
from typing import Any

import orjson
from thespian.actors import ActorAddress, WakeupMessage

from nbstage.actors import lifetime, persistence
from nbstage.actors.base import NbActor
from nbstage.actors.document import Document
from nbstage.actors.executions import ExecutionBook
from nbstage.actors.registry import Registry
from nbstage.actors.room_kernel import KeepAliveExpired, KernelSide, WaitExpired, scoped_key
from nbstage.protocol.edge import Origin, RoomEventOccurred
from nbstage.protocol.errors import ErrorCode, NbstageError
from nbstage.protocol.kernels import (
    KernelState,
)
from nbstage.protocol.requests import (
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
        self.applied: OrderedDict[str, dict[str, Any]] = OrderedDict()
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
            self._flush_untitled()
        self.send(sender, RoomStarted(msg.notebook_id, os.getpid()))
        self._report_status()

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
        self.answer(msg.origin, {**self._describe(), "peer_id": peer_id, "created": msg.created})
        self._event("peer_joined", {"peer_id": peer_id, "label": msg.peer_label})
        self._report_status()

    def _leave(self, origin: Origin, req: LeaveRoom) -> None:
        label = self.peers.pop(req.peer_id, None)
        if label is None:
            raise NbstageError(ErrorCode.NOT_A_PEER, f"{req.peer_id} is not in this room.")
        if not self.peers:
            self.idle_since = time.monotonic()
        self._carry_out(lifetime.peer_left, self.life)
        self.answer(origin, {"left": True})
        self._event("peer_left", {"peer_id": req.peer_id, "label": label})
        self._report_status()

    def _describe(self) -> dict[str, Any]:
        return {
            "notebook_id": self.notebook_id,
            "path": self.path,
            "ephemeral": self.ephemeral,
            "runtime": self.config.runtime,
            "cell_count": len(self.doc.cells),
            "kernel_status": self.kernel_state.value,
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

    def _event(self, kind: str, detail: dict[str, Any]) -> None:
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
        self.answer(
            origin,
            {
                **self._describe(),
                "peers": [{"peer_id": p, "label": label} for p, label in self.peers.items()],
                "kernel_pid": self.kernel_pid,
                "kernel_actor_pid": self.kernel_actor_pid,
                "executions": {"live": self.book.live_ids(), "finished": self.finished_count},
                "latch": {"kernel_attached": life.kernel_attached, "generation": life.generation},
                "keep_alive": {
                    "secs": self.config.settings.keep_alive_secs,
                    "armed_generation": self.teardown_armed,
                    "pending": self.teardown_armed == life.generation and not self.peers,
                },
                "unsaved": self.doc.revision != self.saved_revision,
                "room_pid": os.getpid(),
            },
        )

    def _get_cell(self, origin: Origin, req: GetCell) -> None:
        self.answer(origin, {"cell": self.doc.cell(req.cell_id).to_json_with_id()})

    def _get_cells(self, origin: Origin, req: GetCells) -> None:
        if req.format == "summary":
            cells = self.doc.summaries(req.start, req.count)
        elif req.format == "json":
            cells = self.doc.cells_json(req.start, req.count, req.include_outputs)
        else:
            raise NbstageError(ErrorCode.BAD_REQUEST, "format must be 'summary' or 'json'")
        self.answer(origin, {"cells": cells, "total": len(self.doc.cells)})

    # --- mutations ------------------------------------------------------------------------

    def _mutation(self, apply):
        """Wrap a mutation so a repeated idempotency key returns the first result unchanged."""

        def handle(origin: Origin, req: Any) -> None:
            key = scoped_key(req)
            if key is not None and key in self.applied:
                self.answer(origin, self.applied[key])
                return
            result = apply(req)
            self._remember(key, result)
            self.answer(origin, result)
            self._edited()

        return handle

    def _remember(self, key: str | None, result: dict[str, Any]) -> None:
        if key is None:
            return
        self.applied[key] = result
        while len(self.applied) > REMEMBERED_KEYS:
            self.applied.popitem(last=False)

    def _create_cell(self, req: CreateCell) -> dict[str, Any]:
        cell, index = self.doc.create_cell(req.source, req.cell_type, req.index)
        return {"cell_id": cell.id, "index": index}

    def _set_cell(self, req: SetCell) -> dict[str, Any]:
        cell = self.doc.set_cell(req.cell_id, req.source, req.cell_type)
        return {"cell_id": cell.id}

    def _delete_cell(self, req: DeleteCell) -> dict[str, Any]:
        self.doc.delete_cell(req.cell_id)
        return {"deleted": req.cell_id}

    def _move_cell(self, req: MoveCell) -> dict[str, Any]:
        index = self.doc.move_cell(req.cell_id, req.after_cell_id)
        return {"cell_id": req.cell_id, "index": index}

    def _replace_match(self, req: ReplaceMatch) -> dict[str, Any]:
        cell = self.doc.replace_match(
            req.cell_id, req.match, req.content, req.context_before, req.context_after
        )
        return {"cell_id": cell.id}

    def _replace_regex(self, req: ReplaceRegex) -> dict[str, Any]:
        cell = self.doc.replace_regex(req.cell_id, req.pattern, req.content)
        return {"cell_id": cell.id}

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
                self.answer(origin, {"execution": record.to_wire()})

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

    def _persist_if_changed(self) -> None:
        if self.ephemeral and self.path is None:
            return
        if self.doc.revision == self.saved_revision:
            self.first_unsaved_at = None
            return
        try:
            if self.path is not None:
                self._write_file(self.path)
            else:
                self._flush_untitled()
        except NbstageError as exc:
            log.error("autosave of %s failed: %s", self.notebook_id, exc.message)

    def _save_request(self, origin: Origin, req: SaveNotebook) -> None:
        if req.path is None:
            if self.path is None:
                raise NbstageError(
                    ErrorCode.NO_PATH,
                    "This notebook has no file yet. Call save_notebook with a path.",
                )
            self._write_file(self.path)
            self.answer(origin, {"notebook_id": self.notebook_id, "path": self.path})
            return
        from nbstage.actors.notebook_files import absolute_notebook_path

        target = absolute_notebook_path(req.path)
        if not target.endswith(".ipynb"):
            raise NbstageError(ErrorCode.BAD_REQUEST, "A notebook path must end in .ipynb.")
        self.send(self.daemon, ClaimPath(self.notebook_id, target, origin))

    def receiveMsg_PathClaimed(self, msg: PathClaimed, sender: ActorAddress) -> None:
        self.guarded(msg.origin, self._save_claimed, msg.path)

    def _save_claimed(self, origin: Origin, path: str) -> None:
        try:
            self._write_file(path)
        except Exception:
            self.send(self.daemon, PathReleased(self.notebook_id, path))
            raise
        self.send(self.daemon, PathBound(self.notebook_id, path))
        self.path = path
        self.ephemeral = False
        self.answer(origin, {"notebook_id": self.notebook_id, "path": path})
        self._report_status()

    def receiveMsg_PathRefused(self, msg: PathRefused, sender: ActorAddress) -> None:
        self.fail(msg.origin, NbstageError(msg.code, msg.message))

    def _write_file(self, path: str) -> None:
        persistence.write_notebook_file(Path(path), self.doc.to_json())
        self._mark_saved()
        self._event("saved", {"path": path})

    def _flush_untitled(self) -> None:
        persistence.flush_untitled(self.registry, self.notebook_id, self.doc.to_json())
        self._mark_saved()

    def _mark_saved(self) -> None:
        self.saved_revision = self.doc.revision
        self.first_unsaved_at = None

    # --- closing --------------------------------------------------------------------------

    def receiveMsg_CloseRoom(self, msg: CloseRoom, sender: ActorAddress) -> None:
        saved = False
        if self.doc is not None:
            try:
                self._persist_if_changed()
                saved = True
            except Exception:
                log.exception("closing %s: final save failed", self.notebook_id)
        if self.kernel is not None:
            self._detach_kernel(msg.reason)
        if self._registry is not None:
            self._registry.close()
            self._registry = None
        self.send(sender, RoomClosed(self.notebook_id, saved))
