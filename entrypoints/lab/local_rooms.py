"""Rooms that are not notebooks, such as JupyterLab's global awareness: their messages
are relayed among the browsers of this Lab server and kept nowhere. A browser's sync
step 1 is answered with an empty step 2, as a server whose document is empty would."""

from __future__ import annotations

from typing import Any

from pycrdt import YMessageType, YSyncMessageType, write_message

EMPTY_STEP2 = bytes((YMessageType.SYNC, YSyncMessageType.SYNC_STEP2)) + write_message(b"\x00\x00")
STEP1 = bytes((YMessageType.SYNC, YSyncMessageType.SYNC_STEP1))


class LocalRooms:
    def __init__(self) -> None:
        self.rooms: dict[str, set[Any]] = {}

    def join(self, room: str, socket: Any) -> None:
        self.rooms.setdefault(room, set()).add(socket)

    def leave(self, room: str, socket: Any) -> None:
        members = self.rooms.get(room, set())
        members.discard(socket)
        if not members:
            self.rooms.pop(room, None)

    def broadcast(self, room: str, message: bytes) -> None:
        for member in self.rooms.get(room, set()):
            member.write_binary(message)

    def heard(self, room: str, sender: Any, message: bytes) -> None:
        if message[:2] == STEP1:
            sender.write_binary(EMPTY_STEP2)
            return
        for member in self.rooms.get(room, set()) - {sender}:
            member.write_binary(message)
