"""docs/tools.md and docs/settings.md are what the code declares: ``make docs`` writes
them, and this fails when one drifts from the code."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"


def reference():
    spec = importlib.util.spec_from_file_location("reference", DOCS / "reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("page", ["tools.md", "settings.md"])
def test_the_reference_page_is_the_one_the_code_writes(page: str) -> None:
    written = reference().PAGES[page]()
    assert (DOCS / page).read_text() == written, f"run `make docs`: {page} is out of date"


def test_every_setting_has_a_sentence() -> None:
    assert "|  |" not in (DOCS / "settings.md").read_text()
