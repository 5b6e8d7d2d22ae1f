"""The Room's file part: saves, autosave, the watch on the file and what it found there.

It owns what the Room knows of its file (the stamp and notebook it last read or wrote,
why autosave is paused, whether the file went missing), the one-at-a-time queue of saves
and looks, the claims of new paths, and the autosave and file-check timers' generations.
It returns its work and timers as actions. It never changes the document: a merge with
the disk comes back as the notebook the Room then takes (docs/notes/file-watch.md).
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

import orjson

from nbstage.actors.daemon.notebook import notebook_merge, persistence, save_target
from nbstage.actors.daemon.notebook.document import Document
from nbstage.actors.daemon.registry import Registry
from nbstage.actors.daemon.room.actions import (
    Action,
    Answer,
    BindPath,
    Fail,
    FinishClose,
    FirstFlushed,
    Offload,
    Persist,
    SaveFile,
    Send,
    TruncateJournal,
    Wake,
)
from nbstage.actors.daemon.room.environment import record_trust_after_save
from nbstage.actors.daemon.room.notices import NoticeBoard
from nbstage.actors.daemon.room.room_support import save_error
from nbstage.protocol.common.errors import ErrorCode, NbstageError
from nbstage.protocol.common.offload import BlockingWorkDone
from nbstage.protocol.daemon.notices import Notice, NoticeKind
from nbstage.protocol.daemon.replies import NotebookSaved
from nbstage.protocol.daemon_actors.edge import EventKind, Origin, RoomEventOccurred
from nbstage.protocol.daemon_actors.room_followups import (
    AutosaveDue,
    DiskStamp,
    FileCheckDue,
    FileLooked,
    FileOnDisk,
    SaveFinished,
    SavePurpose,
)
from nbstage.protocol.daemon_actors.rooms import (
    ClaimPath,
    PathBound,
    PathClaimed,
    PathRefused,
    PathReleased,
    StartRoom,
)

log = logging.getLogger("nbstage.room")


class FileSeat:
    def __init__(self, notices: NoticeBoard) -> None:
        self.notices = notices
        self.config: StartRoom | None = None
        self.daemon: Any = None
        self.saved_revision = 0
        self.autosave_generation = 0
        self.first_unsaved_at: float | None = None
        self.disk_stamp: DiskStamp | None = None
        """The file as this room last read or wrote it; None: the room knows it is gone."""
        self.disk_base: dict | None = None
        """The notebook as last read from or written to the file: the merge's base."""
        self.disk_problem: str | None = None
        """Why the file on disk is not a notebook; autosave is paused while it is set."""
        self.disk_bad_stamp: DiskStamp | None = None
        self.missing = False
        """The file was deleted under the room; the next save writes it again."""
        self.busy = False
        """A save or a look at the file is under way; others wait in ``queue``, so each
        one starts from what the one before it found."""
        self.queue: list[tuple[SavePurpose, str, Origin | None]] = []
        self.writing: dict | None = None
        """The notebook the save under way writes: the base once it is written."""
        self.claims: dict[Origin, tuple[str, bool]] = {}
        """A save to a new path → the path as asked (links unresolved) and its ``overwrite``."""
        self.check_generation = 0
        self.check_armed = False
        self._registry: Registry | None = None

    def start(self, config: StartRoom, daemon: Any = None) -> None:
        self.config, self.daemon = config, daemon

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

    def edited(self) -> Wake:
        """Schedule an autosave: about ``delay`` after the last edit, at most ``max_delay``."""
        now = time.monotonic()
        if self.first_unsaved_at is None:
            self.first_unsaved_at = now
        settings = self.config.settings
        deadline = self.first_unsaved_at + settings.autosave_max_delay_secs
        delay = max(0.0, min(settings.autosave_delay_secs, deadline - now))
        self.autosave_generation += 1
        return Wake(delay, AutosaveDue(self.autosave_generation))

    def saved_up_to(self, revision: int, current: int) -> None:
        self.saved_revision = max(self.saved_revision, revision)
        if self.saved_revision == current:
            self.first_unsaved_at = None

    def wants_save(self, revision: int, purpose: SavePurpose) -> bool:
        if revision == self.saved_revision:
            self.first_unsaved_at = None
            return False
        return purpose is not SavePurpose.AUTOSAVE or self.disk_problem is None

    # --- saves ----------------------------------------------------------------------------

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
        self.writing = doc.to_json()
        snapshot = orjson.dumps(self.writing)
        token = SaveFinished(path, doc.revision, purpose, origin, seq)
        target, limit = Path(path), self.config.settings.max_file_bytes
        if purpose is SavePurpose.NEW_PATH:
            given, overwrite = self.claims.pop(origin, (path, False))
            where = self.registry_file

            def save_there() -> Any:
                saved = persistence.save_to_new_path(
                    Path(given), target, snapshot, own, overwrite, limit
                )
                record_trust_after_save(where, path, trusted)
                return saved

            return [Offload(token, save_there, self.lane)]
        expected, explicit = self.disk_stamp, purpose is SavePurpose.REQUEST
        return [
            Offload(
                token,
                lambda: persistence.save_checked(target, snapshot, expected, explicit, limit),
                self.lane,
            )
        ]

    def flush_untitled(self, doc: Document, purpose: SavePurpose, seq: int) -> Offload:
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

    def claim(self, origin: Origin, path: str, overwrite: bool) -> Send:
        """A save to a new path asks the Daemon for the path first (PathClaimed/Refused)."""
        from nbstage.actors.daemon.notebook.notebook_files import absolute_notebook_path

        target = absolute_notebook_path(path)
        given = str(Path(path).expanduser())
        refusal = save_target.path_refusal(given, target)
        if refusal is not None:
            raise refusal
        self.claims[origin] = (given, overwrite)
        return Send(self.daemon, ClaimPath(self.config.notebook_id, target, origin))

    def claimed(self, msg: PathClaimed) -> SaveFile:
        return SaveFile(msg.path, SavePurpose.NEW_PATH, msg.origin)

    def refused(self, msg: PathRefused) -> Fail:
        self.claims.pop(msg.origin, None)
        return Fail(msg.origin, NbstageError(msg.code, msg.message))

    def finished(self, done: BlockingWorkDone) -> FileOnDisk | None:
        """A save came back; what the file held instead, when it changed from outside and
        nothing was written."""
        if done.token.path is None:
            return None
        written = self.save_done()
        if done.ok and isinstance(done.result, FileOnDisk):
            return done.result
        if done.ok:
            self.wrote(done.result.stamp, written)
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
            case SavePurpose.NEW_PATH if done.ok:
                bound = PathBound(notebook_id, token.path, origin)
                return [Send(self.daemon, bound), BindPath(token.path)]
            case SavePurpose.NEW_PATH:
                released = PathReleased(notebook_id, token.path)
                return [Send(self.daemon, released), Fail(origin, save_error(done.error))]
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
            case SavePurpose.CLOSE if self.disk_problem is not None:
                return [FinishClose(False, NbstageError(ErrorCode.SAVE_FAILED, self.disk_problem))]
            case SavePurpose.CLOSE:
                return [Persist(SavePurpose.CLOSE)]
            case SavePurpose.AUTOSAVE if not self.missing:
                return [Persist(SavePurpose.AUTOSAVE)]
        return []

    # --- the file on disk -----------------------------------------------------------------

    def wrote(self, stamp: DiskStamp, notebook: dict) -> None:
        self.disk_stamp = stamp
        self.disk_base = notebook
        self.missing = False
        self.resume_autosave()

    def resume_autosave(self) -> None:
        self.disk_problem = None
        self.disk_bad_stamp = None
        self.notices.stand("file", None)

    def arm_check(self, path: str | None, has_peers: bool) -> list[Wake]:
        every = self.config.settings.file_check_secs
        if self.check_armed or every <= 0 or path is None or not has_peers:
            return []
        self.check_armed = True
        self.check_generation += 1
        return [Wake(every, FileCheckDue(self.check_generation))]

    def check_due(
        self, due: FileCheckDue, path: str | None, has_peers: bool, closing: bool
    ) -> list[Action]:
        if due.generation != self.check_generation:
            return []
        self.check_armed = False
        if self.busy or closing:
            return self.arm_check(path, has_peers)
        return [self.look(path)] if path is not None and has_peers else []

    def looked(self, done: BlockingWorkDone, path: str | None) -> FileOnDisk | None:
        """A look came back: what the file holds, if it changed and is still the room's."""
        self.busy = False
        if not done.ok:
            log.warning("could not look at %s: %s", done.token.path, done.error)
        elif done.result is not None and done.token.path == path:
            return done.result
        return None

    def autosave_resumes(self, revision: int) -> bool:
        """After a look: unsaved edits are saved again once the file is a notebook again."""
        unsaved = revision != self.saved_revision
        return unsaved and self.disk_problem is None and not self.missing

    def look(self, path: str) -> Offload:
        """Stat the file (read it only when it changed), between saves, on this room's lane."""
        self.busy = True
        known = (self.disk_stamp,)
        if self.disk_problem is not None:
            known += (self.disk_bad_stamp,)
        limit = self.config.settings.max_file_bytes
        return Offload(
            FileLooked(path), lambda: persistence.look_at_file(Path(path), known, limit), self.lane
        )

    def changed(self, seen: FileOnDisk, path: str, ours: dict) -> tuple[dict | None, bool]:
        """What the file holds now, seen by a look or a save: merged, or why not said.
        Returns the notebook the room should hold when a merge changed it, and whether
        the file now holds all the room has (so nothing is unsaved)."""
        if seen.notebook is not None:
            try:
                disk = Document.from_json(seen.notebook).to_json()
            except NbstageError as exc:
                seen = FileOnDisk(seen.stamp, None, f"{path}: {exc.message}")
            else:
                return self._merge(seen, disk, path, ours)
        if seen.stamp is None:
            if self.disk_stamp is not None:
                self.disk_stamp = None
                self.missing = True
                self.autosave_generation += 1
                self.resume_autosave()
                self.notices.post(
                    Notice(
                        NoticeKind.DELETED_ON_DISK,
                        f"{path} was deleted on disk. The notebook stays open here, "
                        "unsaved; the next save (save_notebook, or autosave after an edit) "
                        "writes the file again.",
                        "save_notebook()",
                    )
                )
        else:
            self.disk_bad_stamp = seen.stamp
            self.disk_problem = seen.problem
            self.notices.stand(
                "file",
                Notice(
                    NoticeKind.AUTOSAVE_PAUSED,
                    f"Autosave is paused and the file is left as it is: {seen.problem} "
                    "Autosave resumes once it parses again; save_notebook writes over it now.",
                    "save_notebook()",
                ),
            )
        return None, False

    def _merge(
        self, seen: FileOnDisk, disk: dict, path: str, ours: dict
    ) -> tuple[dict | None, bool]:
        cells = seen.notebook["cells"]
        missing = {i for i, cell in enumerate(cells) if cell.get("id") is None}
        base = self.disk_base or {"cells": [], "metadata": {}}
        in_room = frozenset(c["id"] for c in ours["cells"])
        theirs = notebook_merge.recover_ids(base["cells"], disk["cells"], missing, in_room)
        merged = notebook_merge.merge_cells(base["cells"], ours["cells"], theirs)
        metadata = notebook_merge.merge_metadata(
            base["metadata"], ours["metadata"], disk["metadata"]
        )
        self.disk_stamp = seen.stamp
        self.disk_base = {**disk, "cells": theirs}
        self.missing = False
        self.resume_autosave()
        if merged.summary.changed:
            self.notices.post(notebook_merge.notice_line(path, merged.summary))
        holds_all = merged.cells == theirs and metadata == disk["metadata"]
        if merged.cells != ours["cells"] or metadata != ours["metadata"]:
            return {"cells": merged.cells, "metadata": metadata}, holds_all
        return None, holds_all
