"""A person's records taken into the Document (person_edits.take) come to what the
journal's replay of the whole notebook makes of them, copying only the cells named."""

from __future__ import annotations

import copy
import random

import pytest

from nbstage.actors.daemon.notebook import journal
from nbstage.actors.daemon.notebook.document import Document
from nbstage.actors.daemon.room import person_edits


def _notebook(rng: random.Random, size: int) -> Document:
    doc = Document.empty()
    for i in range(size):
        cell, _ = doc.create_cell(f"x = {i}", rng.choice(["code", "code", "markdown"]), None)
        if cell.cell_type == "code" and rng.random() < 0.6:
            text = f"{i}\\n"
            doc.set_outputs(cell.id, [{"output_type": "stream", "name": "stdout", "text": text}], i)
        if rng.random() < 0.2:
            doc.change_tags(cell.id, ["t"], [])
    return doc


def _persons_view(doc: Document, rng: random.Random) -> dict:
    """The notebook as a person's browser might hold it after a few edits."""
    cells = [cell.to_json(include_outputs=False) for cell in doc.cells]
    for _ in range(rng.randint(1, 4)):
        kind = rng.choice(["type", "retype", "add", "delete", "move", "metadata"])
        if not cells or kind == "add":
            new = {"id": f"p{rng.randrange(10**6)}", "cell_type": "code", "source": "new"}
            cells.insert(rng.randint(0, len(cells)), {**new, "metadata": {}})
            continue
        at = rng.randrange(len(cells))
        if kind == "type":
            cells[at]["source"] += "!"
        elif kind == "retype":
            cells[at]["cell_type"] = "markdown" if cells[at]["cell_type"] == "code" else "code"
        elif kind == "delete":
            del cells[at]
        elif kind == "move":
            cells.insert(rng.randint(0, len(cells) - 1), cells.pop(at))
        else:
            cells[at]["metadata"] = {"tags": [rng.choice("abc")]}
    return {"cells": cells}


def _replayed_whole(doc: Document, records: list[dict]) -> dict:
    return Document.from_json(journal.apply_records(doc.to_json(), records).notebook).to_json()


@pytest.mark.parametrize("seed", range(40))
def test_taking_a_persons_records_equals_the_whole_notebooks_replay(seed: int) -> None:
    rng = random.Random(seed)
    doc = _notebook(rng, rng.randint(0, 30))
    records = person_edits.records(doc, _persons_view(doc, rng))
    expected = _replayed_whole(doc, records)
    before = {cell.id: cell for cell in doc.cells}
    metadata = copy.deepcopy(doc.metadata)
    person_edits.take(doc, records)
    assert doc.to_json() == expected
    assert doc.metadata == metadata
    named = {r["cell"]["id"] if r["op"] == "put" else r["cell_id"] for r in records}
    for cell in doc.cells:
        if cell.id in before and cell.id not in named:
            assert cell is before[cell.id]
        elif cell.id in before and cell.outputs == before[cell.id].outputs:
            assert cell.outputs is before[cell.id].outputs
