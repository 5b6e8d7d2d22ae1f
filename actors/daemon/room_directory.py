"""The Daemon's directory of resident rooms: each room's entry, and which path each holds.

It is the only record of which rooms exist and which notebook a path is open in; the
Daemon actor changes it in the same mailbox step as it decides, so admission never sees
it half changed. Plain bookkeeping: it sends nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nbstage.actors.daemon.notebook.notebook_files import absolute_notebook_path
from nbstage.actors.daemon.reaper import RoomFacts, choose_rooms_to_reap, is_reserved
from nbstage.protocol.common.errors import ErrorCode, NbstageError
from nbstage.protocol.common.settings import Settings
from nbstage.protocol.daemon.requests import AttachNotebook, OpenNotebook
from nbstage.protocol.daemon_actors.edge import Origin
from nbstage.protocol.daemon_actors.kernel_facts import KernelState
from nbstage.protocol.daemon_actors.rooms import ClaimPath, CloseReason, PathRefused, RoomStatus


@dataclass
class RoomEntry:
    address: Any
    path: str | None
    ephemeral: bool
    starting: bool = True
    status: RoomStatus | None = None
    closing: bool = False
    close_reason: CloseReason | None = None
    joins_sent: int = 0
    pid: int | None = None
    deferred: list[tuple[Origin, Any]] = field(default_factory=list)
    """Admissions that arrived while the room was closing; replayed once it is gone or kept."""
    evicted_by: list[Origin] = field(default_factory=list)
    """Operators waiting for this room's eviction to finish."""
    started_by: int | None = None
    """The client connection whose create, open or attach started the room."""

    @property
    def reserved(self) -> bool:
        """Being created or joined: such a room is never reaped."""
        seen = self.status.joins_seen if self.status is not None else 0
        return is_reserved(self.starting, self.joins_sent, seen)

    @property
    def fingerprint(self) -> str | None:
        """The dependency fingerprint of the environment its kernel runs in, if inline."""
        env = self.status.environment if self.status is not None else None
        return env.fingerprint if env is not None else None

    @property
    def kernel_running(self) -> bool:
        ended = (KernelState.NONE, KernelState.DEAD)
        return self.status is not None and self.status.kernel_status not in ended

    def facts(self, notebook_id: str) -> RoomFacts:
        status = self.status
        return RoomFacts(
            notebook_id,
            peers=len(status.peers) if status else 0,
            has_kernel=status is not None and status.kernel_status is not KernelState.NONE,
            idle_since=status.idle_since if status else None,
            reserved=self.reserved,
        )


class RoomDirectory:
    def __init__(self) -> None:
        self.rooms: dict[str, RoomEntry] = {}
        self.by_path: dict[str, str] = {}
        """Canonical path → the notebook open there (or claiming it, to save there)."""

    def __len__(self) -> int:
        return len(self.rooms)

    def __contains__(self, notebook_id: object) -> bool:
        return notebook_id in self.rooms

    def items(self) -> Iterator[tuple[str, RoomEntry]]:
        return iter(list(self.rooms.items()))

    def get(self, notebook_id: str) -> RoomEntry | None:
        return self.rooms.get(notebook_id)

    def add(self, notebook_id: str, address: Any, path: str | None, ephemeral: bool) -> RoomEntry:
        entry = RoomEntry(address, path, ephemeral)
        self.rooms[notebook_id] = entry
        if path is not None:
            self.by_path[path] = notebook_id
        return entry

    def forget(self, notebook_id: str) -> RoomEntry | None:
        """Remove the room, and its path unless another room holds it now."""
        entry = self.rooms.pop(notebook_id, None)
        if entry is not None and entry.path is not None:
            self.release(notebook_id, entry.path)
        return entry

    def note_status(self, status: RoomStatus) -> None:
        entry = self.rooms.get(status.notebook_id)
        if entry is not None:
            entry.status = status

    def started(self, notebook_id: str, pid: int) -> RoomEntry | None:
        """The room says it started; None when it is gone already."""
        entry = self.rooms.get(notebook_id)
        if entry is not None:
            entry.starting = False
            entry.pid = pid
        return entry

    def close(self, notebook_id: str, reason: CloseReason) -> Any:
        """Mark the room closing, for ``reason``; returns its address, to ask it to close."""
        entry = self.rooms[notebook_id]
        entry.closing = True
        entry.close_reason = reason
        return entry.address

    def evict(self, notebook_id: str, origin: Origin) -> bool:
        """An operator's evict waits for the room to close; True when it must be asked to
        (a closing room is only marked evicted)."""
        entry = self.rooms.get(notebook_id)
        if entry is None:
            raise NbstageError(ErrorCode.NOT_FOUND, f"No room {notebook_id} is resident.")
        entry.evicted_by.append(origin)
        if entry.closing:
            entry.close_reason = CloseReason.EVICTED
        return not entry.closing

    def keep(self, notebook_id: str) -> RoomEntry:
        """The room's close failed and it stays, open again."""
        entry = self.rooms[notebook_id]
        entry.closing = False
        entry.close_reason = None
        return entry

    def to_reap(self, settings: Settings, now: float) -> list[str]:
        """The rooms the reaper removes now (reaper.py)."""
        facts = [entry.facts(nid) for nid, entry in self.rooms.items() if not entry.closing]
        return choose_rooms_to_reap(facts, now, settings.reaper_ttl_secs, settings.reaper_soft_cap)

    def named_by(self, address: Any) -> str | None:
        return next((nid for nid, entry in self.rooms.items() if entry.address == address), None)

    def alive(self) -> set[str]:
        """The notebooks whose rooms are not closing."""
        return {nid for nid, entry in self.rooms.items() if not entry.closing}

    def closing_target(self, body: Any) -> RoomEntry | None:
        """The closing room an admission would join, if any: it must wait until it is gone."""
        if isinstance(body, AttachNotebook):
            entry = self.rooms.get(body.notebook_id)
        elif isinstance(body, OpenNotebook) and Path(body.path).expanduser().is_absolute():
            entry = self.rooms.get(self.by_path.get(absolute_notebook_path(body.path), ""))
        else:
            entry = None
        return entry if entry is not None and entry.closing else None

    def claim(self, path: str, notebook_id: str) -> str | None:
        """Hold ``path`` for the notebook; returns the other notebook holding it instead."""
        holder = self.by_path.get(path)
        if holder is not None and holder != notebook_id:
            return holder
        self.by_path[path] = notebook_id
        return None

    def bind(self, notebook_id: str, path: str) -> RoomEntry | None:
        """The room saved to ``path``: it is its path now, and the room is no longer
        ephemeral. None when the room is gone."""
        entry = self.rooms.get(notebook_id)
        if entry is None:
            return None
        if entry.path is not None and entry.path != path:
            self.by_path.pop(entry.path, None)
        entry.path = path
        entry.ephemeral = False
        self.by_path[path] = notebook_id
        return entry

    def release(self, notebook_id: str, path: str) -> None:
        """Let go of a path the notebook claimed, unless it is the room's own path."""
        entry = self.rooms.get(notebook_id)
        if self.by_path.get(path) == notebook_id and (entry is None or entry.path != path):
            del self.by_path[path]

    def started_by(self, conn: int) -> int:
        return sum(1 for entry in self.rooms.values() if entry.started_by == conn)

    def fingerprints_in_use(self) -> tuple[str, ...]:
        return tuple(sorted({e.fingerprint for e in self.rooms.values() if e.fingerprint}))

    def kernel_hosts(self) -> dict[str, str]:
        """The kernel host each room's running kernel is on, by notebook id (issue 26)."""
        hosts: dict[str, str] = {}
        for notebook_id, entry in self.rooms.items():
            env = entry.status.environment if entry.kernel_running and entry.status else None
            if env is not None and env.host is not None:
                hosts[notebook_id] = env.host
        return hosts


def claim_refused(claim: ClaimPath, holder: str) -> PathRefused:
    return PathRefused(
        claim.path,
        claim.origin,
        ErrorCode.PATH_ALREADY_OPEN,
        f"{claim.path} is open in notebook {holder}; save to another path or "
        "connect to that notebook instead.",
    )
