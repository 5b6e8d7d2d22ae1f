"""The agents in Lab's collaborators panel (ADR 0004).

The panel lists the users of Lab's global awareness room (``JupyterLab:globalAwareness``),
which this server relays among its own browsers (local_rooms.py); the notebook rooms'
awareness carries one state per agent (actors/daemon/room/agent_marks.py). This part
copies each agent's state from a notebook room into the global one, as the panel reads
it: the agent's ``user``, and the notebook as its ``current`` document. The copy keeps
the agent's client id and clock, so the same state heard on two websockets is taken
once, a removal (a null state) removes it, and a renewal renews it.
"""

from __future__ import annotations

import json

from pycrdt import Decoder, YMessageType, create_awareness_message

from nbstage.actors.daemon.room.agent_marks import awareness_update

GLOBAL_ROOM = "JupyterLab:globalAwareness"


class AgentPresence:
    def __init__(self) -> None:
        self.states: dict[int, tuple[int, str]] = {}
        """client id → (clock, its state in the global room, as JSON)."""
        self.paths: dict[int, str] = {}
        """client id → the notebook its state came from."""

    def copied(self, path: str, message: bytes) -> bytes | None:
        """The global room's awareness message for the agents' states in ``message`` (a
        notebook room's message for the notebook at ``path``), or None."""
        if message[:1] != bytes([YMessageType.AWARENESS]):
            return None
        try:
            entries = list(_entries(message))
        except (ValueError, TypeError, IndexError):
            return None
        taken = []
        for client, clock, state in entries:
            known = self.states.get(client)
            if known is not None and known[0] >= clock:
                continue
            if state is None and known is not None:
                del self.states[client]
                self.paths.pop(client, None)
                taken.append((client, clock, "null"))
            elif isinstance(state, dict) and "nbstage" in state:
                shown = {"user": state.get("user"), "current": f"notebook:{path}"}
                text = json.dumps({**shown, "documents": [path]})
                self.states[client] = (clock, text)
                self.paths[client] = path
                taken.append((client, clock, text))
        return _message(taken)

    def forget(self, path: str) -> bytes | None:
        """The last websocket of a notebook closed: its agents' states can no longer be
        renewed or removed from there, so they go now."""
        gone = [client for client, held in self.paths.items() if held == path]
        taken = []
        for client in gone:
            clock, _ = self.states.pop(client)
            del self.paths[client]
            # At the same clock Yjs removes the state, and takes the room's next one.
            taken.append((client, clock, "null"))
        return _message(taken)

    def known(self) -> bytes | None:
        """Every agent state, for a browser that joins the global room."""
        return _message([(client, clock, text) for client, (clock, text) in self.states.items()])


def _entries(message: bytes):
    decoder = Decoder(message)
    decoder.read_var_uint()
    update = decoder.read_message()
    if update is None:
        return
    entries = Decoder(update)
    for _ in range(entries.read_var_uint()):
        client, clock = entries.read_var_uint(), entries.read_var_uint()
        yield client, clock, json.loads(entries.read_var_string())


def _message(entries: list[tuple[int, int, str]]) -> bytes | None:
    return create_awareness_message(awareness_update(entries)) if entries else None
