"""The Room's journal part: the records of acknowledged edits not yet saved
(docs/notes/journal.md; the records themselves are actors/daemon/notebook/journal.py).

It owns the store, the last sequence number and the count of journal work under way (a
close waits for it), and returns the work as ``Offload`` actions on the room's journal
lane, so that records are appended, read, truncated and closed in order.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from nbstage.actors.daemon.notebook import journal
from nbstage.actors.daemon.notebook.document import Document
from nbstage.actors.daemon.notebook.journal_store import JournalStore
from nbstage.actors.daemon.room.actions import (
    Action,
    Answer,
    Edited,
    Offload,
    ReadDone,
    SettleClose,
)
from nbstage.protocol.common.offload import BlockingWorkDone
from nbstage.protocol.daemon.notices import Notice
from nbstage.protocol.daemon_actors.edge import Origin
from nbstage.protocol.daemon_actors.room_followups import (
    JournalAppended,
    JournalClosed,
    JournalRead,
    JournalTruncated,
)

log = logging.getLogger("nbstage.room")


class Journalling:
    def __init__(self) -> None:
        self.notebook_id = ""
        self.state_dir: str | None = None
        self._store: JournalStore | None = None
        self.seq = 0
        """The last journal record this room appended (or found at its start)."""
        self.jobs = 0
        """Journal work under way; the close is reported once none is left."""
        self.restored = 0
        """Journal records applied at the start: edits the last daemon acknowledged."""

    def start(self, notebook_id: str, state_dir: str) -> None:
        self.notebook_id, self.state_dir = notebook_id, state_dir

    @property
    def store(self) -> JournalStore:
        if self._store is None:
            self._store = JournalStore(Path(self.state_dir) / "journal.sqlite3")
        return self._store

    def work(self, token: Any, work: Callable[[], Any]) -> Offload:
        """Work on the journal's lane; ``settled`` is called once it is done."""
        self.jobs += 1
        return Offload(token, work, f"journal:{self.notebook_id}")

    def settled(self) -> None:
        self.jobs -= 1

    def append(self, record: dict, origin: Origin, reply: object) -> Offload:
        """The answer goes once the record is durable (``JournalAppended``)."""
        seq, data = self.next_record(record)
        store, notebook_id = self.store, self.notebook_id
        return self.work(
            JournalAppended(seq, origin, reply), lambda: store.append(notebook_id, seq, data)
        )

    def next_record(self, record: dict) -> tuple[int, bytes]:
        self.seq += 1
        return self.seq, orjson.dumps(record)

    def appended(self, done: BlockingWorkDone) -> list[Action]:
        """The edit is durable (or logged as not): its answer goes now."""
        self.settled()
        if not done.ok:
            log.error(
                "could not journal edit %d of %s (durable from its next save): %s",
                done.token.seq,
                self.notebook_id,
                done.error,
            )
        return [Answer(done.token.origin, done.token.reply), SettleClose()]

    def read(self) -> Offload:
        store, notebook_id = self.store, self.notebook_id

        def read() -> list[tuple[int, dict]]:
            return [(seq, orjson.loads(record)) for seq, record in store.read(notebook_id)]

        return self.work(JournalRead(), read)

    def replay(self, done: BlockingWorkDone, doc: Document) -> tuple[bool, list[Offload]]:
        """Apply the records read at the start to ``doc``: (whether it changed, the work
        that follows). Records that no longer apply are dropped from the store."""
        self.settled()
        if not done.ok:
            log.error("could not read the journal of %s: %s", self.notebook_id, done.error)
            return False, []
        if not done.result:
            return False, []
        self.seq = max(self.seq, done.result[-1][0])
        replay = journal.apply_records(doc.to_json(), [r for _, r in done.result])
        log.info(
            "restored %d journal records of %s (%d no longer applied)",
            replay.applied,
            self.notebook_id,
            replay.skipped,
        )
        if not replay.applied:
            return False, [self.truncate(self.seq)]
        doc.replace(Document.from_json(replay.notebook))
        self.restored = replay.applied
        return True, []

    def replayed(self, done: BlockingWorkDone, doc: Document, untitled: bool) -> list[Action]:
        """Edits acknowledged after the last save come back; a file-backed room counts them
        as unsaved and writes them with its next save, through the checked save."""
        changed, work = self.replay(done, doc)
        return [*work, *([Edited()] if changed and untitled else []), ReadDone()]

    def truncate(self, upto: int) -> Offload:
        store, notebook_id = self.store, self.notebook_id
        return self.work(JournalTruncated(upto), lambda: store.truncate(notebook_id, upto))

    def truncate_all(self) -> list[Offload]:
        """After a save or a merge that holds every record so far."""
        return [self.truncate(self.seq)] if self.seq > 0 else []

    def truncated(self, done: BlockingWorkDone) -> list[Action]:
        self.settled()
        if not done.ok:
            log.warning("could not truncate the journal of %s: %s", self.notebook_id, done.error)
        return [SettleClose()]

    def close(self) -> list[Offload]:
        if self._store is None:
            return []
        return [self.work(JournalClosed(), self._store.close)]

    def closed(self, done: BlockingWorkDone) -> list[Action]:
        self.settled()
        return [SettleClose()]

    def restored_notice(self, path: str | None) -> Notice | None:
        """Edits the last daemon acknowledged came back at the start: said once."""
        if not self.restored:
            return None
        return journal.restored_notice(path or self.notebook_id, self.restored, path is not None)
