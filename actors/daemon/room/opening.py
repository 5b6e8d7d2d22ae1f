"""The Room's opening part: the joins held while the room starts, the reads the start
waits for (the file, the kernelspecs, the journal, the Daemon's record of the path), and
why it could not open; with the blocking work of the start, run on the edge's workers.
"""

from __future__ import annotations

import logging
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson

from nbstage.actors.daemon.kernel import placement
from nbstage.actors.daemon.kernel.kernelspecs import NoKernelspec, choose_kernelspec
from nbstage.actors.daemon.notebook.document import Document
from nbstage.actors.daemon.room.actions import (
    Action,
    Fail,
    FlushFirst,
    Loaded,
    Offload,
    ReadDone,
    ReadJournal,
    ReadKernelspecs,
    RefuseHeld,
    ReportStatus,
    Restart,
    Started,
    StartFailed,
)
from nbstage.actors.daemon.room.closing import closing_error
from nbstage.actors.daemon.room.environment import EnvironmentSeat, trusted_for
from nbstage.actors.daemon.room.room_support import save_error
from nbstage.protocol.common.errors import ErrorCode, NbstageError
from nbstage.protocol.common.offload import BlockingWorkDone
from nbstage.protocol.common.words import plural
from nbstage.protocol.daemon_actors.edge import Origin
from nbstage.protocol.daemon_actors.kernels import KernelspecInfo
from nbstage.protocol.daemon_actors.room_followups import (
    DiskStamp,
    KernelspecsRead,
    NotebookFileRead,
    StaleTempsSwept,
)
from nbstage.protocol.daemon_actors.rooms import JoinRoom, RoomSource, StartRoom

log = logging.getLogger("nbstage.room")


class Opening:
    def __init__(self) -> None:
        self.held: list[JoinRoom] | None = None
        """Joins that arrived before the room was ready: while a new notebook's first save,
        or a loaded notebook's kernelspec choice and journal read, was under way."""
        self.reads = 0
        """Reads a loaded notebook waits for before it takes joins (kernelspecs, journal)."""
        self.error: NbstageError | None = None

    def start(self, msg: StartRoom, lane: str) -> list[Action]:
        """Joins wait for every read the start makes; an open by path also waits until the
        Daemon has recorded the path (PathRecorded), which may come before the file. A
        file is read off the loop; other notebooks load at once."""
        self.reads = int(msg.binding_pending)
        if msg.source is RoomSource.FILE:
            self.hold(1)
            return [read_file(msg.path, msg.settings.max_file_bytes, lane)]
        try:
            return [Loaded(load(msg))]
        except NbstageError as exc:
            return [StartFailed(exc)]

    def file_read(self, done: BlockingWorkDone, closing: bool) -> list[Action]:
        if closing:
            return [RefuseHeld(closing_error("nobody joined it"))]
        if not done.ok:
            return [StartFailed(read_error(done))]
        return [Loaded(*done.result), ReadDone()]

    def kernelspecs_read(self, done: BlockingWorkDone, seat: Any, metadata: dict) -> list[Action]:
        """A kernelspec fits the notebook or none does; a restart that waited goes on."""
        fits = choose(done, seat.env, metadata)
        seat.life = replace(seat.life, has_runtime=fits)
        restart = done.token.restart
        if restart is None:
            return [ReadDone()]
        if fits:
            return [ReportStatus(), Restart(restart)]
        refused = NbstageError(ErrorCode.UNKNOWN_RUNTIME, seat.env.kernel_refused)
        return [ReportStatus(), Fail(restart, refused)]

    def loaded(self, msg: StartRoom, journalled: bool, lane: str) -> list[Action]:
        """The document is loaded: what the start reads next, or writes, before joins."""
        todo: list[Action] = [sweep(msg.path, lane)] if msg.source is RoomSource.FILE else []
        if msg.source is not RoomSource.NEW:
            self.hold(2 if journalled else 1)
            return [*todo, ReadKernelspecs(), *([ReadJournal()] if journalled else [])]
        if not msg.ephemeral:
            self.hold()
            return [*todo, FlushFirst()]
        return [*todo, Started()]

    def hold(self, reads: int = 0) -> None:
        """From now on joins wait, for ``reads`` more reads."""
        self.held = self.held or []
        self.reads += reads

    def held_back(self, join: JoinRoom) -> bool:
        if self.held is None:
            return False
        self.held.append(join)
        return True

    def release(self) -> list[JoinRoom]:
        held, self.held = self.held or [], None
        return held

    def read_done(self) -> list[Action]:
        """One read came back: the joins held are let in once it was the last."""
        self.reads -= 1
        return [] if self.reads > 0 else [Started(tuple(self.release()))]

    def first_flushed(self, error: BaseException | None) -> list[Action]:
        """A new persisted notebook exists once its untitled row is durable; joins wait."""
        if error is not None:
            return [StartFailed(save_error(error))]
        return [Started(tuple(self.release()))]

    def unloaded_error(self) -> NbstageError:
        if self.error is not None:
            return self.error
        if self.held is not None:
            message = "The notebook is still being opened; try again in a moment."
        else:
            message = "The notebook could not be loaded."
        return NbstageError(ErrorCode.NOTEBOOK_UNAVAILABLE, message)


def load(msg: StartRoom) -> Document:
    """The document of an untitled or a new notebook; a file's is read off the loop."""
    if msg.source is RoomSource.UNTITLED:
        if msg.content is None:
            raise NbstageError(
                ErrorCode.NOTEBOOK_UNAVAILABLE,
                f"Notebook {msg.notebook_id} is no longer available.",
            )
        return Document.from_json(orjson.loads(msg.content))
    doc = Document.empty(msg.kernelspec)
    if msg.kernel_host is not None:
        doc.metadata = placement.with_wished_host(doc.metadata, msg.kernel_host)
    return doc


def read_file(path: str, limit: int, lane: str) -> Offload:
    """Reading and parsing a large file would stall every room of the daemon."""
    return Offload(NotebookFileRead(), lambda: read_notebook_file(Path(path), limit), lane)


def read_error(done: BlockingWorkDone) -> NbstageError:
    error = done.error
    if isinstance(error, NbstageError):
        return error
    return NbstageError(
        ErrorCode.NOTEBOOK_UNAVAILABLE, f"The notebook file could not be read: {error}"
    )


def read_notebook_file(path: Path, limit: int) -> tuple[Document, DiskStamp, dict[str, Any]]:
    """Blocking: the room's document, the stamp of the file it came from, and the file's
    notebook as read (the base of a later merge with the disk)."""
    from nbstage.actors.daemon.notebook.notebook_files import load_notebook_stamped

    notebook, stamp = load_notebook_stamped(path, limit)
    doc = Document.from_json(notebook)
    return doc, stamp, doc.to_json()


def sweep(path: str, lane: str) -> Offload:
    from nbstage.actors.daemon.notebook.notebook_files import sweep_stale_temps

    return Offload(StaleTempsSwept(), lambda: sweep_stale_temps(Path(path), time.time()), lane)


def swept(done: BlockingWorkDone, path: str) -> None:
    if not done.ok:
        log.warning("could not sweep old temp files beside %s: %s", path, done.error)
    elif done.result:
        log.info(
            "removed %s that killed saves left beside %s", plural(done.result, "temp file"), path
        )


def read_kernelspecs(file: Any, restart: Origin | None) -> Offload:
    """At the start, the trusted dependency sets of the notebook's path (``file``, the
    room's file part) come too."""
    registry, path = file.registry_file, file.path if restart is None else None

    def read() -> tuple[dict[str, KernelspecInfo], set[str]]:
        from nbstage.actors.daemon.kernel.kernel_backend import installed_kernelspecs

        return installed_kernelspecs(), trusted_for(registry, path)

    return Offload(KernelspecsRead(restart), read)


def choose(done: BlockingWorkDone, env: EnvironmentSeat, metadata: dict) -> bool:
    """A loaded notebook's kernel is chosen from its metadata (kernelspecs.py); False
    when none fits (``env.kernel_refused`` says why)."""
    if done.ok:
        specs, trusted = done.result
        env.trusted |= trusted
        installed = {name: spec.language for name, spec in specs.items()}
        chosen = choose_kernelspec(metadata, installed)
    else:
        chosen = NoKernelspec(f"The installed kernelspecs could not be read: {done.error}")
    refused = isinstance(chosen, NoKernelspec)
    env.kernel_name = None if refused else chosen
    env.kernel_refused = chosen.message if refused else None
    return not refused
