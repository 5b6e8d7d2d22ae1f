"""Who waits for rooms to finish closing: an operator's ``reap`` or ``evict``, and the
daemon's stop.

A reap is answered once every room it chose is gone or kept, an evict once its room is
gone; the stop goes on (the registry closes) once no room is left. Plain bookkeeping:
the Daemon actor sends the answers these return.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Collection
from dataclasses import dataclass, field

from nbstage.actors.daemon.room_directory import RoomEntry
from nbstage.protocol.daemon.replies import KeptRoom, RoomEvicted, RoomsReaped
from nbstage.protocol.daemon_actors.edge import Origin
from nbstage.protocol.daemon_actors.rooms import CloseReason

log = logging.getLogger("nbstage.daemon")


@dataclass
class _ReapReport:
    origin: Origin
    chosen: list[str]
    waiting: set[str]
    kept: dict[str, KeptRoom] = field(default_factory=dict)


Answers = list[tuple[Origin, object]]


class CloseWaits:
    def __init__(self) -> None:
        self._reports: list[_ReapReport] = []
        self.stopping: Stopping | None = None

    def closed(self, notebook_id: str, entry: RoomEntry | None, saved: bool) -> Answers:
        """The room closed and is removed: the reaps and evictions it completes."""
        if self.stopping is not None:
            self.stopping.gone(notebook_id, closed=True)
        return [*self.settled(notebook_id), *evictions(notebook_id, entry, saved)]

    def exited(self, notebook_id: str) -> Answers:
        """The room's actor exited on its own."""
        if self.stopping is not None:
            self.stopping.gone(notebook_id, closed=False)
        return self.settled(notebook_id)

    def reap_begun(self, origin: Origin, chosen: list[str]) -> Answers:
        """An operator's reap chose these rooms; returns the answers due now (none chosen)."""
        self._reports.append(_ReapReport(origin, chosen, set(chosen)))
        return self._answers()

    def settled(self, notebook_id: str, kept: KeptRoom | None = None) -> Answers:
        """The room is gone, or ``kept``; returns the answers of the reaps it completes."""
        for report in self._reports:
            if notebook_id in report.waiting:
                report.waiting.discard(notebook_id)
                if kept is not None:
                    report.kept[notebook_id] = kept
        return self._answers()

    def _answers(self) -> Answers:
        done = [report for report in self._reports if not report.waiting]
        self._reports = [report for report in self._reports if report.waiting]
        answers: Answers = []
        for report in done:
            reaped = [nid for nid in report.chosen if nid not in report.kept]
            kept = [report.kept[nid] for nid in report.chosen if nid in report.kept]
            answers.append((report.origin, RoomsReaped(reaped, kept)))
        return answers


def evictions(notebook_id: str, entry: RoomEntry | None, saved: bool) -> Answers:
    """The answers of the operators waiting for the room's eviction."""
    waiting = entry.evicted_by if entry is not None else []
    return [(origin, RoomEvicted(notebook_id, saved)) for origin in waiting]


class Stopping:
    """The daemon's stop, under way: the rooms it still waits for, and how many closed."""

    def __init__(self, waiting: Collection[str]) -> None:
        self.waiting = set(waiting)
        self.closed = 0
        self._finished = False

    def gone(self, notebook_id: str, closed: bool) -> None:
        """The room is gone: ``closed`` after its barrier, or it exited on its own."""
        self.waiting.discard(notebook_id)
        if closed:
            self.closed += 1

    def finish_now(self) -> bool:
        """True once, when no room is left to wait for."""
        if self.waiting or self._finished:
            return False
        self._finished = True
        return True


def kept_room(notebook_id: str, reason: CloseReason, problem: str | None) -> KeptRoom:
    """A room whose final save failed, kept with its edits instead of removed (logged)."""
    kept = KeptRoom(notebook_id, reason.value, problem or "the save failed", time.time())
    log.error(
        "kept room %s instead of removing it (%s): its final save failed, so its edits "
        "stay unsaved in memory; the reaper tries again at its next sweep: %s",
        notebook_id,
        reason,
        kept.problem,
    )
    return kept
