"""The Room's file part: its path, saves, autosave, and what follows a save.

It owns the room's path, the one-at-a-time queue of saves and looks at the file, the
autosave timer's generation and the registry connection. What the room knows of the file
on disk, and the watch on it, is its ``disk`` (disk_watch.py); saves to a new path are
its ``new_paths`` (new_paths.py).
It returns its work and timers as actions. It never changes the document: a merge with
the disk comes back as the notebook the Room then takes (docs/notes/file-watch.md).
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

import orjson

from nbstage.actors.daemon.notebook import persistence
from nbstage.actors.daemon.notebook.document import Document
from nbstage.actors.daemon.registry import Registry
from nbstage.actors.daemon.room.actions import (
    Action,
    Answer,
    Fail,
    FinishClose,
    FirstFlushed,
    Merged,
    NextFileJob,
    Offload,
    Persist,
    ReportStatus,
    ResumeAutosave,
    SaveFile,
    Send,
    TruncateJournal,
    Wake,
)
from nbstage.actors.daemon.room.autosave_timing import autosave_wait
from nbstage.actors.daemon.room.disk_watch import DiskWatch
from nbstage.actors.daemon.room.new_paths import NewPaths
from nbstage.actors.daemon.room.notices import NoticeBoard
from nbstage.actors.daemon.room.room_support import save_error
from nbstage.protocol.common.errors import ErrorCode, NbstageError
from nbstage.protocol.common.offload import BlockingWorkDone
from nbstage.protocol.daemon.replies import NotebookSaved
from nbstage.protocol.daemon.requests import SaveNotebook
from nbstage.protocol.daemon_actors.edge import EventKind, Origin, RoomEventOccurred
from nbstage.protocol.daemon_actors.room_followups import (
    AutosaveDue,
    FileCheckDue,
    FileOnDisk,
    SaveFinished,
    SavePurpose,
)
from nbstage.protocol.daemon_actors.rooms import StartRoom

log = logging.getLogger("nbstage.room")


class FileSeat:
    def __init__(self, notices: NoticeBoard) -> None:
        self.notices = notices
        self.config: StartRoom | None = None
        self.daemon: Any = None
        self.path: str | None = None
        """The room's file; None for an untitled notebook."""
        self.ephemeral = True
        self.saved_revision = 0
        self.autosave_generation = 0
        self.first_unsaved_at: float | None = None
        self.disk = DiskWatch(notices)
        self.busy = False
        """A save or a look at the file is under way; others wait in ``queue``, so each
        one starts from what the one before it found."""
        self.queue: list[tuple[SavePurpose, str, Origin | None]] = []
        self.writing: dict | None = None
        """The notebook the save under way writes: the base once it is written."""
        self.new_paths = NewPaths()
        self._registry: Registry | None = None

    def start(self, config: StartRoom, daemon: Any = None) -> None:
        self.config, self.daemon = config, daemon
        self.new_paths.start(config, daemon)
        self.path, self.ephemeral = config.path, config.ephemeral

    @property
    def journalled(self) -> bool:
        """Ephemeral rooms stay in memory only; every other room journals its edits."""
        return not (self.ephemeral and self.path is None)

    def bind(self, path: str, has_peers: bool) -> list[Action]:
        """The notebook now lives at ``path`` (a save to a new path was recorded)."""
        self.path, self.ephemeral = path, False
        return [*self.arm_check(path, has_peers), ReportStatus()]

    @property
    def registry_file(self) -> Path:
        return Path(self.config.state_dir) / "registry.sqlite3"

    @property
    def registry(self) -> Registry:
        if self._registry is None:
            self._registry = Registry(self.registry_file)
        return self._registry

    def close_registry(self) -> None:
        if self._registry is not None:
            self._registry.close()
            self._registry = None

    @property
    def lane(self) -> str:
        return f"room:{self.config.notebook_id}"

    # --- autosave -------------------------------------------------------------------------

    def edited(self) -> list[Wake]:
        """Schedule an autosave: about ``delay`` after the last edit, at most ``max_delay``."""
        if not self.journalled:
            return []
        settings = self.config.settings
        self.first_unsaved_at, delay = autosave_wait(
            self.first_unsaved_at,
            time.monotonic(),
            settings.autosave_delay_secs,
            settings.autosave_max_delay_secs,
        )
        self.autosave_generation += 1
        return [Wake(delay, AutosaveDue(self.autosave_generation))]

    def autosave_due(self, due: AutosaveDue) -> list[Action]:
        return [Persist(SavePurpose.AUTOSAVE)] if due.generation == self.autosave_generation else []

    def saved_up_to(self, revision: int, current: int) -> None:
        self.saved_revision = max(self.saved_revision, revision)
        if self.saved_revision == current:
            self.first_unsaved_at = None

    def wants_save(self, revision: int, purpose: SavePurpose) -> bool:
        if revision == self.saved_revision:
            self.first_unsaved_at = None
            return False
        return purpose is not SavePurpose.AUTOSAVE or self.disk.problem is None

    # --- saves ----------------------------------------------------------------------------

    def persist(self, doc: Document, purpose: SavePurpose, seq: int) -> list[Action]:
        """Save unsaved edits; a close with nothing to save is finished at once."""
        if self.journalled and self.wants_save(doc.revision, purpose):
            if self.path is not None:
                return [SaveFile(None, purpose)]
            return [self.flush_untitled(doc, purpose, seq)]
        return [FinishClose(True)] if purpose is SavePurpose.CLOSE else []

    def save_request(self, origin: Origin, req: SaveNotebook) -> list[Action]:
        """save_notebook: to a new path (claimed first), or to the room's own file."""
        if req.path is not None:
            return [self.new_paths.claim(origin, req.path, req.overwrite)]
        if self.path is None:
            raise NbstageError(
                ErrorCode.NO_PATH, "This notebook has no file yet. Call save_notebook with a path."
            )
        return [SaveFile(None, SavePurpose.REQUEST, origin)]

    def save(
        self,
        doc: Document,
        path: str,
        purpose: SavePurpose,
        origin: Origin | None,
        seq: int,
        own: str | None = None,
        trusted: str | None = None,
    ) -> list[Offload]:
        """Write an immutable snapshot, taken now, on the edge's worker (this room's lane).

        Except to a new path, the write happens only over the file as this room last
        saw it; a file changed from outside comes back instead, to be merged first.
        ``own`` is the room's path and ``trusted`` the dependency set a new path carries.
        """
        if self.busy:
            self.queue.append((purpose, path, origin))
            return []
        self.busy = True
        self.first_unsaved_at = None  # the snapshot takes every edit made so far
        self.writing = doc.to_json()
        snapshot = orjson.dumps(self.writing)
        token = SaveFinished(path, doc.revision, purpose, origin, seq)
        if purpose is SavePurpose.NEW_PATH:
            write = self.new_paths.write(origin, path, snapshot, own, trusted)
            return [Offload(token, write, self.lane)]
        target, limit = Path(path), self.config.settings.max_file_bytes
        expected, explicit = self.disk.stamp, purpose is SavePurpose.REQUEST
        return [
            Offload(
                token,
                lambda: persistence.save_checked(target, snapshot, expected, explicit, limit),
                self.lane,
            )
        ]

    def flush_untitled(self, doc: Document, purpose: SavePurpose, seq: int) -> Offload:
        self.first_unsaved_at = None
        snapshot = orjson.dumps(doc.to_json())
        token = SaveFinished(None, doc.revision, purpose, None, seq)
        registry, notebook_id = self.registry, self.config.notebook_id
        return Offload(token, lambda: registry.store_untitled(notebook_id, snapshot), self.lane)

    def first_flush(self, doc: Document, seq: int) -> Offload:
        """A new persisted notebook is unsaved until its untitled row is written."""
        self.saved_revision = -1
        return self.flush_untitled(doc, SavePurpose.FIRST, seq)

    def save_done(self) -> dict | None:
        """A save to a file came back: the next job may start; the notebook it wrote."""
        self.busy = False
        written, self.writing = self.writing, None
        return written

    def next_job(self) -> Persist | SaveFile | None:
        """The save or close waiting for the one before it, once nothing is under way."""
        if self.busy or not self.queue:
            return None
        purpose, path, origin = self.queue.pop(0)
        if purpose in (SavePurpose.AUTOSAVE, SavePurpose.CLOSE):
            return Persist(purpose)
        return SaveFile(path if purpose is SavePurpose.NEW_PATH else None, purpose, origin)

    def save_returned(self, done: BlockingWorkDone, doc: Document) -> list[Action]:
        """What follows a save; when the file changed from outside instead, the merge,
        then the save again from there."""
        seen = self.finished(done)
        if seen is None:
            return [*self.settled(done, doc.revision), NextFileJob()]
        return [self.merge(seen, doc), *self.again(done.token), NextFileJob()]

    def finished(self, done: BlockingWorkDone) -> FileOnDisk | None:
        """A save came back; what the file held instead, when it changed from outside and
        nothing was written."""
        if done.token.path is None:
            return None
        written = self.save_done()
        if done.ok and isinstance(done.result, FileOnDisk):
            return done.result
        if done.ok:
            self.disk.wrote(done.result.stamp, written)
        return None

    def settled(self, done: BlockingWorkDone, revision: int) -> list[Action]:
        """A save is over (written or failed): what follows for whoever waited on it."""
        token: SaveFinished = done.token
        todo: list[Action] = []
        if not done.ok:
            log.error("saving %s failed: %s", self.config.notebook_id, done.error)
        else:
            self.saved_up_to(token.revision, revision)
            if token.journal_seq > 0:
                todo.append(TruncateJournal(token.journal_seq))
            if token.path is not None:
                event = (EventKind.SAVED, self.config.notebook_id, {"path": token.path})
                todo.append(Send(self.config.edge, RoomEventOccurred(*event)))
        return todo + self._then(token, done)

    def _then(self, token: SaveFinished, done: BlockingWorkDone) -> list[Action]:
        notebook_id, origin = self.config.notebook_id, token.origin
        match token.purpose:
            case SavePurpose.REQUEST if done.ok:
                return [Answer(origin, NotebookSaved(notebook_id, token.path))]
            case SavePurpose.REQUEST:
                return [Fail(origin, save_error(done.error))]
            case SavePurpose.NEW_PATH:
                return self.new_paths.written(token, done)
            case SavePurpose.CLOSE:
                return [FinishClose(done.ok, done.error)]
            case SavePurpose.FIRST:
                return [FirstFlushed(None if done.ok else done.error)]
        return []

    def again(self, token: SaveFinished) -> list[Action]:
        """A save found the file changed from outside and wrote nothing; once the change
        is merged (or the file is gone, or not a notebook), the save goes on from there."""
        match token.purpose:
            case SavePurpose.REQUEST:
                return [SaveFile(None, SavePurpose.REQUEST, token.origin)]
            case SavePurpose.CLOSE if self.disk.problem is not None:
                return [FinishClose(False, NbstageError(ErrorCode.SAVE_FAILED, self.disk.problem))]
            case SavePurpose.CLOSE:
                return [Persist(SavePurpose.CLOSE)]
            case SavePurpose.AUTOSAVE if not self.disk.missing:
                return [Persist(SavePurpose.AUTOSAVE)]
        return []

    # --- the watch on the file (disk_watch.py) --------------------------------------------

    def arm_check(self, path: str | None, has_peers: bool) -> list[Wake]:
        return self.disk.arm(self.config.settings.file_check_secs, path, has_peers)

    def check_due(self, due: FileCheckDue, has_peers: bool, closing: bool) -> list[Action]:
        """A look waits for the save under way; a closing room looks no more."""
        if not self.disk.due(due):
            return []
        if self.busy or closing:
            return self.arm_check(self.path, has_peers)
        if self.path is None or not has_peers:
            return []
        self.busy = True
        return [self.disk.look(self.path, self.config.settings.max_file_bytes, self.lane)]

    def looked(self, done: BlockingWorkDone) -> FileOnDisk | None:
        """A look came back: what the file holds, if it changed and is still the room's."""
        self.busy = False
        if not done.ok:
            log.warning("could not look at %s: %s", done.token.path, done.error)
        elif done.result is not None and done.token.path == self.path:
            return done.result
        return None

    def look_returned(self, done: BlockingWorkDone, doc: Document, has_peers: bool) -> list[Action]:
        seen = self.looked(done)
        merged = [] if seen is None else [self.merge(seen, doc), ResumeAutosave()]
        return [*merged, *self.arm_check(self.path, has_peers), NextFileJob()]

    def merge(self, seen: FileOnDisk, doc: Document) -> Merged:
        return Merged(*self.changed(seen, self.path, doc.to_json()))

    def resumed(self, revision: int) -> list[Wake]:
        return self.edited() if self.autosave_resumes(revision) else []

    def autosave_resumes(self, revision: int) -> bool:
        """After a look: unsaved edits are saved again once the file is a notebook again."""
        unsaved = revision != self.saved_revision
        return unsaved and self.disk.problem is None and not self.disk.missing

    def changed(self, seen: FileOnDisk, path: str, ours: dict) -> tuple[dict | None, bool]:
        """The merge (disk_watch.py); a file gone from disk waits for an edit to be saved."""
        merged, holds_all, gone = self.disk.changed(seen, path, ours)
        if gone:
            self.autosave_generation += 1
        return merged, holds_all
