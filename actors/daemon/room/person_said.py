"""What one message of a person comes to once the Room applied it: the relays to the
others, and the answer, which an edit holds back, in a journalled room, until its
records are durable (ADR 0004). Plain, no actors."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from nbstage.actors.daemon.room.actions import Action, Answer, Edited, Offload
from nbstage.actors.daemon.room.journalling import Journalling
from nbstage.protocol.daemon.lab import SharedDocAnswered
from nbstage.protocol.daemon_actors.edge import Origin
from nbstage.protocol.daemon_actors.room_followups import JournalAppended


@dataclass
class Said:
    """What one message of a person comes to."""

    answer: SharedDocAnswered
    records: list[dict[str, Any]]
    """The journal records of the person's edit, already applied to the Document."""
    pushes: list[Action]


def taken(said: Said, origin: Origin, keeper: Journalling, journals: bool) -> list[Action]:
    """What a person's message comes to: its relays, then the answer, which an edit holds
    back, in a journalled room, until its records are durable."""
    if not said.records:
        return [*said.pushes, Answer(origin, said.answer)]
    if not journals:
        return [*said.pushes, Edited(), Answer(origin, said.answer)]
    return [*said.pushes, Edited(), journalled(said.records, keeper, origin, said.answer)]


def journalled(
    records: list[dict[str, Any]], keeper: Journalling, origin: Origin, reply
) -> Offload:
    """One offload that appends a person's records in order; the answer goes once the
    last is durable."""
    numbered = [keeper.next_record(record) for record in records]
    store, notebook_id = keeper.store, keeper.notebook_id

    def append() -> None:
        for seq, data in numbered:
            store.append(notebook_id, seq, data)

    return keeper.work(JournalAppended(numbered[-1][0], origin, reply), append)
