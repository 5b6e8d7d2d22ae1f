"""The Room's requests that carry an idempotency key: the wrappers its handler table puts
around an edit (edits.py) or a request answered later (a save, a restart, an interrupt),
so that a key is carried out once. They act through the Room and its once-only keys
(once.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from nbstage.actors.daemon.notebook import journal
from nbstage.actors.daemon.notebook.document import Document
from nbstage.actors.daemon.room.room_support import scoped_key
from nbstage.protocol.daemon_actors.edge import Origin


def mutation(room: Any, apply: Callable[[Document, Any], Any]) -> Callable[[Origin, Any], None]:
    """Wrap an edit so a repeated idempotency key returns the first result unchanged; a
    journalled edit is answered once its record is durable."""

    def handle(origin: Origin, req: Any) -> None:
        key = scoped_key(req)
        if answered_before(room, origin, key) or room.once.wait_if_under_way(key, origin):
            return
        room.close.refuse("the change was not made")
        before = room.doc.revision
        result = apply(room.doc, req)
        cell_id = getattr(result, "cell_id", None) or getattr(req, "cell_id", None)
        room.sharing.worked_on(origin.conn, cell_id, room.peers)
        room.act(*room.file.edited())
        changed = room.file.journalled and room.doc.revision != before
        record = journal.mutation_record(room.doc, result) if changed else None
        if record is None:
            room.once.remember(key, result)
            room.answer(origin, result)
            return
        room.once.begin(key, origin)
        room.act(room.journal.append(record, origin, result))

    return handle


def once(room: Any, start: Callable[[Origin, Any], None]) -> Callable[[Origin, Any], None]:
    """Wrap a request answered later so its key is carried out once: a repeat gets the
    first answer, or waits for it while the first is under way. A refusal is not
    remembered, so a repeat after one tries again."""

    def handle(origin: Origin, req: Any) -> None:
        key = scoped_key(req)
        if answered_before(room, origin, key):
            return
        room.close.refuse("nothing was done")
        if not room.once.wait_if_under_way(key, origin):
            room.once.begin(key, origin)
            start(origin, req)

    return handle


def answered_before(room: Any, origin: Origin, key: str | None) -> bool:
    if room.once.known(key):
        room.answer(origin, room.once.first_answer(key))
        return True
    return False
