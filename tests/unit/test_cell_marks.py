"""The Document's cell tags and cleared outputs (issue 25, part 3), as tables."""

from __future__ import annotations

from typing import Any

import pytest

from nbstage.actors.daemon.notebook.document import Document
from nbstage.actors.daemon.room import edits
from nbstage.protocol.common.errors import NbstageError
from nbstage.protocol.daemon import requests


def document(metadata: dict[str, Any]) -> Document:
    cell = {"id": "c", "cell_type": "code", "source": "", "metadata": metadata, "outputs": []}
    cell["execution_count"] = None
    return Document.from_json({"cells": [cell], "metadata": {}, "nbformat": 4})


TAGS = [
    # (metadata before, add, remove, tags after or None for no key, revision bumped)
    ({}, ["p"], [], ["p"], True),
    ({"tags": ["p"]}, ["p"], [], ["p"], False),
    ({"tags": ["p"]}, ["q", "q"], [], ["p", "q"], True),
    ({"tags": ["p", "q"]}, [], ["p"], ["q"], True),
    ({"tags": ["p"]}, [], ["p"], None, True),
    ({}, [], ["p"], None, False),
    ({"tags": "odd"}, ["p"], [], ["p"], True),
    ({"tags": []}, [], ["p"], [], False),
]


@pytest.mark.parametrize(("before", "add", "remove", "after", "bumped"), TAGS)
def test_tags_are_added_once_and_removed(
    before: dict[str, Any], add: list[str], remove: list[str], after: Any, bumped: bool
) -> None:
    doc = document({"other": 1, **before})
    doc.change_tags("c", add, remove)
    metadata = doc.cell("c").metadata
    assert metadata.get("tags") == after
    assert metadata["other"] == 1
    assert doc.revision == int(bumped)


@pytest.mark.parametrize("tag", ["", "a b", "a,b", "x" * 201])
def test_a_tag_with_space_or_comma_is_refused(tag: str) -> None:
    request = requests.ChangeCellTags("n", "c", requests.TagChange.ADD, [tag])
    with pytest.raises(NbstageError):
        edits.change_cell_tags(document({}), request)


def test_clearing_outputs_names_the_cells_that_had_some() -> None:
    doc = document({})
    doc.set_outputs("c", [{"output_type": "stream", "name": "stdout", "text": "x"}], 1)
    assert doc.clear_outputs() == ["c"]
    assert doc.clear_outputs("c") == []
    cell = doc.cell("c")
    assert (cell.outputs, cell.execution_count) == ([], None)
