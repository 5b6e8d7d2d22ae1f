"""Saves to a new path (save_notebook with a path): the claim the Daemon grants or refuses
first, the write that follows, the binding the Daemon records, and the answer once the
binding is on disk. The file part (file_seat.py) holds this part and queues the write
with its other saves."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from nbstage.actors.daemon.notebook import persistence, save_target
from nbstage.actors.daemon.room.actions import (
    Action,
    Answer,
    BindPath,
    Fail,
    ReadDone,
    SaveFile,
    Send,
)
from nbstage.actors.daemon.room.environment import record_trust_after_save
from nbstage.actors.daemon.room.room_support import save_error
from nbstage.protocol.common.errors import NbstageError
from nbstage.protocol.common.offload import BlockingWorkDone
from nbstage.protocol.daemon.replies import NotebookSaved
from nbstage.protocol.daemon_actors import rooms
from nbstage.protocol.daemon_actors.edge import Origin
from nbstage.protocol.daemon_actors.room_followups import SaveFinished, SavePurpose

log = logging.getLogger("nbstage.room")


class NewPaths:
    def __init__(self) -> None:
        self.config: rooms.StartRoom | None = None
        self.daemon: Any = None
        self.claims: dict[Origin, tuple[str, bool]] = {}
        """A save to a new path → the path as asked (links unresolved) and its ``overwrite``."""

    def start(self, config: rooms.StartRoom, daemon: Any) -> None:
        self.config, self.daemon = config, daemon

    def claim(self, origin: Origin, path: str, overwrite: bool) -> Send:
        """A save to a new path asks the Daemon for the path first (PathClaimed or PathRefused)."""
        from nbstage.actors.daemon.notebook.notebook_files import absolute_notebook_path

        target = absolute_notebook_path(path)
        given = str(Path(path).expanduser())
        refusal = save_target.path_refusal(given, target)
        if refusal is not None:
            raise refusal
        self.claims[origin] = (given, overwrite)
        return Send(self.daemon, rooms.ClaimPath(self.config.notebook_id, target, origin))

    def claimed(self, msg: rooms.PathClaimed, sender: Any) -> list[Action]:
        return [SaveFile(msg.path, SavePurpose.NEW_PATH, msg.origin)]

    def refused(self, msg: rooms.PathRefused, sender: Any) -> list[Action]:
        self.claims.pop(msg.origin, None)
        return [Fail(msg.origin, NbstageError(msg.code, msg.message))]

    def write(
        self, origin: Origin, path: str, snapshot: bytes, own: str | None, trusted: str | None
    ) -> Callable[[], Any]:
        """Worker-thread work: write the claimed path (``own`` is the room's path), then
        trust there the dependency set the notebook carries."""
        given, overwrite = self.claims.pop(origin, (path, False))
        target, limit = Path(path), self.config.settings.max_file_bytes
        registry = Path(self.config.state_dir) / "registry.sqlite3"

        def save_there() -> Any:
            saved = persistence.save_to_new_path(
                Path(given), target, snapshot, own, overwrite, limit
            )
            record_trust_after_save(registry, path, trusted)
            return saved

        return save_there

    def written(self, token: SaveFinished, done: BlockingWorkDone) -> list[Action]:
        """Written: the Daemon binds the path and the room takes it; else it lets it go."""
        notebook_id = self.config.notebook_id
        if done.ok:
            bound = rooms.PathBound(notebook_id, token.path, token.origin)
            return [Send(self.daemon, bound), BindPath(token.path)]
        released = rooms.PathReleased(notebook_id, token.path)
        return [Send(self.daemon, released), Fail(token.origin, save_error(done.error))]

    def recorded(self, msg: rooms.PathRecorded, sender: Any) -> list[Action]:
        """An open or a save to a new path is answered once the Daemon holds the binding on
        disk; a binding that could not be written is logged and the answer goes out."""
        if msg.problem is not None:
            log.error("%s at %s: %s", self.config.notebook_id, msg.path, msg.problem)
        if msg.origin is None:
            return [ReadDone()]
        return [Answer(msg.origin, NotebookSaved(self.config.notebook_id, msg.path))]
