"""What a Room knows of its file on disk, and its watch on it: the stamp and notebook it
last read or wrote (the merge's base), why the file is not a notebook (autosave waits),
whether it went missing, and the timer of the next look. A change from outside is merged
here; the notebook the merge makes comes back for the Room to take
(docs/notes/file-watch.md)."""

from __future__ import annotations

from pathlib import Path

from nbstage.actors.daemon.notebook import notebook_merge, persistence
from nbstage.actors.daemon.notebook.document import Document
from nbstage.actors.daemon.room.actions import Offload, Wake
from nbstage.actors.daemon.room.notices import NoticeBoard
from nbstage.protocol.common.errors import NbstageError
from nbstage.protocol.daemon.notices import Notice, NoticeKind
from nbstage.protocol.daemon_actors import room_followups as followups


class DiskWatch:
    def __init__(self, notices: NoticeBoard) -> None:
        self.notices = notices
        self.stamp: followups.DiskStamp | None = None
        """The file as this room last read or wrote it; None: the room knows it is gone."""
        self.base: dict | None = None
        """The notebook as last read from or written to the file: the merge's base."""
        self.problem: str | None = None
        """Why the file on disk is not a notebook; autosave is paused while it is set."""
        self.bad_stamp: followups.DiskStamp | None = None
        self.missing = False
        """The file was deleted under the room; the next save writes it again."""
        self.check_generation = 0
        self.check_armed = False

    def wrote(self, stamp: followups.DiskStamp, notebook: dict) -> None:
        self.stamp = stamp
        self.base = notebook
        self.missing = False
        self.clear_problem()

    def clear_problem(self) -> None:
        self.problem = None
        self.bad_stamp = None
        self.notices.stand("file", None)

    def arm(self, every: float, path: str | None, has_peers: bool) -> list[Wake]:
        """Arm the next look, once, while there is a file and someone to tell."""
        if self.check_armed or every <= 0 or path is None or not has_peers:
            return []
        self.check_armed = True
        self.check_generation += 1
        return [Wake(every, followups.FileCheckDue(self.check_generation))]

    def due(self, due: followups.FileCheckDue) -> bool:
        """The timer that fired is the one armed last (it is no longer armed)."""
        if due.generation != self.check_generation:
            return False
        self.check_armed = False
        return True

    def look(self, path: str, limit: int, lane: str) -> Offload:
        """Stat the file (read it only when it changed)."""
        known = (self.stamp,)
        if self.problem is not None:
            known += (self.bad_stamp,)
        return Offload(
            followups.FileLooked(path),
            lambda: persistence.look_at_file(Path(path), known, limit),
            lane,
        )

    def changed(
        self, seen: followups.FileOnDisk, path: str, ours: dict
    ) -> tuple[dict | None, bool, bool]:
        """What the file holds now, seen by a look or a save: merged, or why not said.
        Returns the notebook the room should hold when a merge changed it, whether the
        file now holds all the room has (so nothing is unsaved), and whether it is gone."""
        if seen.notebook is not None:
            try:
                disk = Document.from_json(seen.notebook).to_json()
            except NbstageError as exc:
                seen = followups.FileOnDisk(seen.stamp, None, f"{path}: {exc.message}")
            else:
                return (*self._merge(seen, disk, path, ours), False)
        if seen.stamp is None:
            return None, False, self._gone(path)
        self._not_a_notebook(seen)
        return None, False, False

    def _gone(self, path: str) -> bool:
        """The file was deleted: said once; True when this look is the one that found it."""
        if self.stamp is None:
            return False
        self.stamp = None
        self.missing = True
        self.clear_problem()
        self.notices.post(
            Notice(
                NoticeKind.DELETED_ON_DISK,
                f"{path} was deleted on disk. The notebook stays open here, "
                "unsaved; the next save (save_notebook, or autosave after an edit) "
                "writes the file again.",
                "save_notebook()",
            )
        )
        return True

    def _not_a_notebook(self, seen: followups.FileOnDisk) -> None:
        self.bad_stamp = seen.stamp
        self.problem = seen.problem
        self.notices.stand(
            "file",
            Notice(
                NoticeKind.AUTOSAVE_PAUSED,
                f"Autosave is paused and the file is left as it is: {seen.problem} "
                "Autosave resumes once it parses again; save_notebook writes over it now.",
                "save_notebook()",
            ),
        )

    def _merge(
        self, seen: followups.FileOnDisk, disk: dict, path: str, ours: dict
    ) -> tuple[dict | None, bool]:
        cells = seen.notebook["cells"]
        missing = {i for i, cell in enumerate(cells) if cell.get("id") is None}
        base = self.base or {"cells": [], "metadata": {}}
        in_room = frozenset(c["id"] for c in ours["cells"])
        theirs = notebook_merge.recover_ids(base["cells"], disk["cells"], missing, in_room)
        merged = notebook_merge.merge_cells(base["cells"], ours["cells"], theirs)
        metadata = notebook_merge.merge_metadata(
            base["metadata"], ours["metadata"], disk["metadata"]
        )
        self.stamp = seen.stamp
        self.base = {**disk, "cells": theirs}
        self.missing = False
        self.clear_problem()
        if merged.summary.changed:
            self.notices.post(notebook_merge.notice_line(path, merged.summary))
        holds_all = merged.cells == theirs and metadata == disk["metadata"]
        if merged.cells != ours["cells"] or metadata != ours["metadata"]:
            return {"cells": merged.cells, "metadata": metadata}, holds_all
        return None, holds_all
