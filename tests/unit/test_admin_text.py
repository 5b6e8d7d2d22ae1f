"""The admin console's text: what a person reads must keep every notebook id whole."""

from __future__ import annotations

from typing import Any

import pytest

from nbstage.entrypoints.admin import run_reap


class AnsweringAdmin:
    """Stands in for Admin: gives run_* functions a width and one canned daemon answer."""

    def __init__(self, width: int, answer: dict[str, Any]) -> None:
        self.width = width
        self.answer = answer

    def request(self, kind: str, **fields: Any) -> dict[str, Any]:
        return self.answer


@pytest.mark.parametrize("width", range(60, 101))
def test_reap_wraps_between_ids_never_inside_one(width: int) -> None:
    # Groups that start with a letter are where textwrap breaks hyphenated words.
    reaped = [f"abcdef0{n}-a1dc-42cc-bac3-d55d0651842d" for n in range(3)]
    kept = [
        {
            "notebook_id": "e9e65c90-bbbb-4ccc-bac3-d55d0651842d",
            "at": 0,
            "reason": "idle",
            "problem": "No space.",
        }
    ]
    text = run_reap(AnsweringAdmin(width, {"reaped": reaped, "kept": kept}), []).text
    words = text.replace(",", " ").split()
    for notebook_id in [*reaped, kept[0]["notebook_id"]]:
        assert notebook_id in words or f"{notebook_id}:" in words, text
    assert max(len(line) for line in text.splitlines()) <= width
