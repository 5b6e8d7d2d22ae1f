"""The agents as JupyterLab sees its collaborators: one Y awareness state per agent peer
of the room, under the agent's client label, with a cursor at the start of the cell it
last edited or ran, which Lab draws as a flag with the agent's name (ADR 0004).

A plain part of the shared document (shared_doc.py): the Room says which cell an agent
worked on (``worked_on``); after each mirror ``states`` gives the one awareness update
every person needs, or None when nothing changed. The Yjs clients drop a remote state
not renewed within 30 s, so a state older than ``RENEW_SECS`` is sent again whenever a
browser's own renewal (every 15 s) comes in: no timer of the Room's own.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson
from jupyter_ydoc import YNotebook
from pycrdt import Awareness, Encoder

RENEW_SECS = 10.0
COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b")


@dataclass
class Mark:
    client_id: int
    label: str
    cell_id: str | None = None
    clock: int = 0
    sent: bytes = b""
    sent_at: float = field(default=0.0)


class AgentMarks:
    def __init__(self) -> None:
        self.marks: dict[str, Mark] = {}
        self.gone: list[Mark] = []
        self.dirty = False
        """A mark changed since the last ``states``."""

    def worked_on(self, peer_id: str, label: str, cell_id: str | None) -> None:
        """The agent's mark goes to this cell; on the cell it marks already, nothing
        changes (a mirror that writes the cell's source again says so itself)."""
        mark = self.marks.get(peer_id)
        if mark is not None and mark.cell_id == cell_id:
            return
        mark = self.marks.setdefault(peer_id, Mark(client_id(peer_id), label))
        mark.cell_id = cell_id
        self.dirty = True

    def resend(self) -> None:
        """The states go out again, after the next mirror, to an awareness made anew (a
        shared document made again from its frozen form)."""
        for mark in self.marks.values():
            mark.sent = b""
        self.dirty = bool(self.marks)

    def keep(self, present: dict[str, str]) -> None:
        """Only the agents still in the room (peer id → label) keep a state."""
        for peer_id in [p for p in self.marks if p not in present]:
            self.gone.append(self.marks.pop(peer_id))

    def states(
        self,
        notebook: YNotebook,
        awareness: Awareness,
        renew: bool = False,
        order: Sequence[str | None] = (),
    ) -> bytes | None:
        """The awareness update of the states that changed (all that are old, if
        ``renew``), applied to ``awareness`` so a person who joins later gets them."""
        now = time.monotonic()
        self.dirty = False
        entries: list[tuple[int, int, str]] = []
        for mark in self.gone:
            entries.append((mark.client_id, mark.clock + 1, "null"))
        self.gone = []
        for peer_id, mark in self.marks.items():
            state = orjson.dumps(_state(peer_id, mark, notebook, order))
            stale = renew and now - mark.sent_at >= RENEW_SECS
            if state != mark.sent or stale:
                mark.clock += 1
                mark.sent, mark.sent_at = state, now
                entries.append((mark.client_id, mark.clock, state.decode()))
        if not entries:
            return None
        update = awareness_update(entries)
        awareness.apply_awareness_update(update, "room")
        return update

    def renewed(self, awareness: Awareness) -> bytes | None:
        """The states as last sent, those older than ``RENEW_SECS`` sent again, and the
        gone agents' ends: what a frozen document's people need, with no Y document to
        compute a cursor against (a mark that moved waits for the thaw, ``dirty``)."""
        now = time.monotonic()
        entries = [(mark.client_id, mark.clock + 1, "null") for mark in self.gone]
        self.gone = []
        for mark in self.marks.values():
            if mark.sent and now - mark.sent_at >= RENEW_SECS:
                mark.clock += 1
                mark.sent_at = now
                entries.append((mark.client_id, mark.clock, mark.sent.decode()))
        if not entries:
            return None
        update = awareness_update(entries)
        awareness.apply_awareness_update(update, "room")
        return update


def awareness_update(entries: list[tuple[int, int, str]]) -> bytes:
    """A y-protocols awareness update of (client id, clock, state as JSON) entries."""
    encoder = Encoder()
    encoder.write_var_uint(len(entries))
    for client, clock, state in entries:
        encoder.write_var_uint(client)
        encoder.write_var_uint(clock)
        encoder.write_var_string(state)
    return encoder.to_bytes()


def client_id(peer_id: str) -> int:
    """A stable Yjs client id for an agent peer (53 bits at most, as JavaScript's)."""
    return int.from_bytes(hashlib.sha256(peer_id.encode()).digest()[:6], "big") >> 1


def _state(
    peer_id: str, mark: Mark, notebook: YNotebook, order: Sequence[str | None]
) -> dict[str, Any]:
    initials = "".join(word[:1] for word in mark.label.split()[:2]).upper() or "A"
    user = {
        "username": f"nbstage-agent-{peer_id}",
        "name": mark.label,
        "display_name": mark.label,
        "initials": initials,
        "color": COLORS[mark.client_id % len(COLORS)],
        "avatar_url": None,
    }
    state: dict[str, Any] = {"user": user, "nbstage": {"cell_id": mark.cell_id}}
    cursor = _cursor(notebook, mark.cell_id, order)
    if cursor is not None:
        state["cursors"] = [cursor]
    return state


def _cursor(
    notebook: YNotebook, cell_id: str | None, order: Sequence[str | None]
) -> dict[str, Any] | None:
    """A cursor at the start of the cell's source, as y-codemirror reads one: relative
    positions in their JSON form. An empty source has no item to anchor to: no cursor."""
    index = _index(notebook, cell_id, order)
    if index is None:
        return None
    source = notebook.ycells[index]["source"]
    if not len(source):
        return None
    head = source.sticky_index(0).to_json()
    return {"anchor": head, "head": head, "primary": True, "empty": True}


def _index(notebook: YNotebook, cell_id: str | None, order: Sequence[str | None]) -> int | None:
    """Where the cell is: ``order`` (the Y cells' ids, None where a cell has none) is
    checked against the Y cell; a person's move not mirrored yet costs one scan."""
    if cell_id is None:
        return None
    ycells = notebook.ycells
    if cell_id in order:
        index = order.index(cell_id)
        if index < len(ycells) and ycells[index].get("id") == cell_id:
            return index
    ids = [ycell.get("id") for ycell in ycells]
    return ids.index(cell_id) if cell_id in ids else None
