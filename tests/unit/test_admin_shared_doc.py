"""`nbstage admin room ID` says where the room's shared Y document stands (ADR 0004,
item 12): nothing when no person ever opened it, else building, live, or frozen with
the bytes it keeps."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from nbstage.entrypoints.admin.room_views import run_room
from nbstage.protocol.common.codec import from_wire

NOTEBOOK_ID = "e9e65c90-bbbb-4ccc-bac3-d55d0651842d"


class OneRoom:
    width = 100

    def __init__(self, shared_doc: dict[str, Any] | None) -> None:
        self.answer = {
            "notebook_id": NOTEBOOK_ID,
            "path": "/work/a.ipynb",
            "ephemeral": False,
            "runtime": None,
            "cell_count": 3,
            "kernel_status": "none",
            "peers": [],
            "kernel_pid": None,
            "kernel_actor_pid": None,
            "executions": {"live": [], "finished": 0},
            "latch": {"kernel_attached": False, "generation": 0},
            "keep_alive": {"secs": 30.0, "armed_generation": None, "pending": False},
            "unsaved": False,
            "room_pid": 11,
            "shared_doc": shared_doc,
        }

    def resolve(self, prefix: str) -> SimpleNamespace:
        return SimpleNamespace(notebook_id=NOTEBOOK_ID)

    def call(self, request: object, expected: type) -> object:
        return from_wire(expected, self.answer)


@pytest.mark.parametrize(
    ("shared_doc", "shown"),
    [
        (None, None),
        ({"state": "none"}, None),
        ({"state": "building"}, "building"),
        ({"state": "live"}, "live"),
        ({"state": "freezing"}, "freezing"),
        ({"state": "frozen", "frozen_bytes": 76800}, "frozen, 75 kB"),
    ],
)
def test_the_shared_document_line(shared_doc: dict[str, Any] | None, shown: str | None) -> None:
    lines = run_room(OneRoom(shared_doc), ["e9e6"]).text.splitlines()
    found = [line.split(None, 2)[2] for line in lines if line.startswith("shared doc")]
    assert found == ([] if shown is None else [shown])
