"""The admin console's text: what a person reads must keep every notebook id whole."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from nbstage.entrypoints.admin.console import render
from nbstage.entrypoints.admin.daemon_access import Outcome
from nbstage.entrypoints.admin.interventions import run_reap
from nbstage.entrypoints.admin.room_views import run_rooms
from nbstage.entrypoints.admin.terminal_text import visible
from nbstage.entrypoints.admin.text_layout import fit_message, key_values
from nbstage.protocol.common.codec import from_wire


class AnsweringAdmin:
    """Stands in for Admin: gives run_* functions a width and one canned daemon answer,
    read as the reply they expect."""

    def __init__(self, width: int, answer: dict[str, Any]) -> None:
        self.width = width
        self.answer = answer

    def call(self, request: object, expected: type) -> object:
        return from_wire(expected, self.answer)


@pytest.mark.parametrize("width", range(60, 101))
def test_reap_wraps_between_ids_never_inside_one(width: int) -> None:
    # Groups that start with a letter are where textwrap breaks hyphenated words.
    reaped = [f"abcdef0{n}-a1dc-42cc-bac3-d55d0651842d" for n in range(3)]
    kept = [
        {
            "notebook_id": "e9e65c90-bbbb-4ccc-bac3-d55d0651842d",
            "at": 0.0,
            "reason": "idle",
            "problem": "No space.",
        }
    ]
    text = run_reap(AnsweringAdmin(width, {"reaped": reaped, "kept": kept}), []).text
    words = text.replace(",", " ").split()
    for notebook_id in [*reaped, kept[0]["notebook_id"]]:
        assert notebook_id in words or f"{notebook_id}:" in words, text
    assert max(len(line) for line in text.splitlines()) <= width


HOSTILE = "\x1b]0;owned\x07\x1b[2J\r\x7f\x9b31m\x85.ipynb"
"""Retitles an xterm, clears the screen, returns the cursor, then DEL and two C1 codes."""
RAW_CONTROLS = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f]")


def hostile_rooms() -> dict[str, Any]:
    room = {
        "notebook_id": "e9e65c90-bbbb-4ccc-bac3-d55d0651842d",
        "path": f"/work/{HOSTILE}",
        "ephemeral": False,
        "starting": False,
        "room_pid": 11,
        "peers": [{"peer_id": "p1", "label": f"agent{HOSTILE}"}],
        "kernel_status": "idle",
        "kernel_pid": 10,
        "kernelspec": None,
        "environment": None,
    }
    return {"rooms": [room]}


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("plain text, ünïcode and \\ stay", "plain text, ünïcode and \\ stay"),
        ("\x1b]0;t\x07", "\\x1b]0;t\\x07"),
        ("a\nb\tc\rd\x00", "a\\x0ab\\x09c\\x0dd\\x00"),
        ("\x7f\x80\x9b\x9f\xa0", "\\x7f\\x80\\x9b\\x9f\xa0"),
    ],
)
def test_visible_writes_every_control_character_as_an_escape(value: str, shown: str) -> None:
    assert visible(value) == shown


def test_a_hostile_file_name_and_label_are_shown_escaped_in_the_table() -> None:
    outcome = run_rooms(AnsweringAdmin(200, hostile_rooms()), [])
    text = render(outcome, as_json=False)
    assert not RAW_CONTROLS.search(text), repr(text)
    assert "\\x1b]0;owned\\x07\\x1b[2J\\x0d\\x7f\\x9b31m\\x85.ipynb" in text
    assert len(text.splitlines()) == 2, "one header, one row"


def test_the_console_escapes_text_from_every_path_it_prints() -> None:
    message = f"No room named {HOSTILE}."
    assert not RAW_CONTROLS.search(fit_message(message, 80))
    assert not RAW_CONTROLS.search(render(Outcome({}, f"log line {HOSTILE}\nnext"), False))
    pairs = [("path", HOSTILE, "tail")]
    assert not RAW_CONTROLS.search(key_values(pairs, 80))


def test_json_stays_the_same_data_with_no_raw_control_character() -> None:
    answer = hostile_rooms()
    printed = render(run_rooms(AnsweringAdmin(80, answer), []), as_json=True)
    assert not RAW_CONTROLS.search(printed), repr(printed)
    assert json.loads(printed) == answer
