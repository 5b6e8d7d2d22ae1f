"""The journal's records, pure: what a mutation records, and what applying records gives."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from nbstage.actors.daemon.notebook import journal
from nbstage.actors.daemon.notebook.document import Document
from nbstage.actors.daemon.notebook.journal_store import JournalStore
from nbstage.protocol.daemon.replies import CellCreated, CellDeleted, CellMoved, CellUpdated


def code(cell_id: str, source: str = "", outputs: list | None = None, count: int | None = None):
    return {
        "id": cell_id,
        "cell_type": "code",
        "metadata": {},
        "source": source,
        "execution_count": count,
        "outputs": outputs or [],
    }


def md(cell_id: str, source: str = "") -> dict:
    return {"id": cell_id, "cell_type": "markdown", "metadata": {}, "source": source}


OUT = [{"output_type": "stream", "name": "stdout", "text": "1\n"}]


def notebook(*cells: dict) -> dict:
    return {"cells": list(cells), "metadata": {"k": 1}, "nbformat": 4, "nbformat_minor": 5}


def test_each_mutation_records_the_state_it_produced() -> None:
    doc = Document.from_json(notebook(code("a", "x", OUT, 1), md("b", "text")))
    created, index = doc.create_cell("new", "code", 1)
    doc.set_cell("a", "y")
    bare_a = {k: v for k, v in code("a", "y", count=1).items() if k != "outputs"}
    table = [
        (CellCreated(created.id, index), journal.put(created.to_json(False), 1)),
        (CellUpdated("a"), journal.put(bare_a, 0)),
        (CellDeleted("b"), journal.delete("b")),
        (CellMoved("b", 0), journal.move("b", 0)),
        (object(), None),
    ]
    for result, record in table:
        assert journal.mutation_record(doc, result) == record, result


APPLY_TABLE = [
    pytest.param(
        notebook(code("a", "x", OUT, 3)),
        [journal.put({k: v for k, v in code("a", "y").items() if k != "outputs"}, 0)],
        notebook(code("a", "y", OUT, None)),
        (1, 0),
        id="put of a known cell replaces it in place and keeps its outputs",
    ),
    pytest.param(
        notebook(code("a"), code("b")),
        [journal.put(md("n", "hi"), 1)],
        notebook(code("a"), md("n", "hi"), code("b")),
        (1, 0),
        id="put of a new cell inserts it at its index",
    ),
    pytest.param(
        notebook(code("a")),
        [journal.put(md("n"), 7)],
        notebook(code("a"), md("n")),
        (1, 0),
        id="put past the end appends",
    ),
    pytest.param(
        notebook(md("a", "t")),
        [journal.put({k: v for k, v in code("a", "t").items() if k != "outputs"}, 0)],
        notebook(code("a", "t")),
        (1, 0),
        id="put that retypes to code gets no outputs",
    ),
    pytest.param(
        notebook(code("a", "x")),
        [journal.put({k: v for k, v in code("a", "x").items() if k != "outputs"}, 0)],
        notebook(code("a", "x")),
        (0, 0),
        id="put of the state already there changes nothing",
    ),
    pytest.param(
        notebook(code("a"), code("b")),
        [journal.delete("a")],
        notebook(code("b")),
        (1, 0),
        id="delete",
    ),
    pytest.param(
        notebook(code("b")),
        [journal.delete("a")],
        notebook(code("b")),
        (0, 1),
        id="delete of a cell that is gone is skipped",
    ),
    pytest.param(
        notebook(code("a"), code("b"), code("c")),
        [journal.move("c", 0)],
        notebook(code("c"), code("a"), code("b")),
        (1, 0),
        id="move",
    ),
    pytest.param(
        notebook(code("a")),
        [journal.move("z", 0)],
        notebook(code("a")),
        (0, 1),
        id="move of a cell that is gone is skipped",
    ),
    pytest.param(
        notebook(code("a")),
        [{"op": "rename", "cell_id": "a"}],
        notebook(code("a")),
        (0, 1),
        id="an unknown record is skipped",
    ),
    pytest.param(
        notebook(code("a")),
        [journal.put(md("n", "1"), 1), journal.put(md("n", "2"), 1), journal.move("n", 0)],
        notebook(md("n", "2"), code("a")),
        (3, 0),
        id="records apply in order",
    ),
]


@pytest.mark.parametrize(("before", "records", "after", "counts"), APPLY_TABLE)
def test_applying_records(before: dict, records: list, after: dict, counts: tuple) -> None:
    replay = journal.apply_records(before, records)
    assert replay.notebook == after
    assert (replay.applied, replay.skipped) == counts


def test_applying_leaves_the_given_notebook_alone() -> None:
    before = notebook(code("a", "x", OUT))
    journal.apply_records(before, [journal.delete("a")])
    assert before == notebook(code("a", "x", OUT))


def test_replayed_edits_give_the_room_s_notebook() -> None:
    saved = notebook(code("a", "x", OUT, 1), md("b"))
    doc = Document.from_json(saved)
    records = []
    cell, index = doc.create_cell("new", "markdown", 0)
    records.append(journal.mutation_record(doc, CellCreated(cell.id, index)))
    doc.set_cell("a", "changed")
    records.append(journal.mutation_record(doc, CellUpdated("a")))
    moved = doc.move_cell("b", None)
    records.append(journal.mutation_record(doc, CellMoved("b", moved)))
    doc.delete_cell(cell.id)
    records.append(journal.mutation_record(doc, CellDeleted(cell.id)))
    wire = [orjson.loads(orjson.dumps(r)) for r in records]
    replay = journal.apply_records(saved, wire)
    assert Document.from_json(replay.notebook).to_json() == doc.to_json()


def test_the_store_keeps_records_per_notebook_until_truncated(tmp_path: Path) -> None:
    store = JournalStore(tmp_path / "journal.sqlite3")
    for seq in (1, 2, 3):
        store.append("nb", seq, b"r%d" % seq)
    store.append("other", 1, b"o")
    store.truncate("nb", 2)
    store.close()
    again = JournalStore(tmp_path / "journal.sqlite3")
    assert again.read("nb") == [(3, b"r3")]
    assert again.read("other") == [(1, b"o")]
    again.close()


def test_the_restored_notice() -> None:
    restored = journal.restored_notice("/n.ipynb", 2, True)
    assert restored.line() == (
        "[nbstage] /n.ipynb: 2 edits made before the daemon stopped were restored from the "
        "journal and are not saved yet"
    )
    assert restored.next_call == "save_notebook()"
    untitled = journal.restored_notice("id", 1, False)
    assert untitled.line().startswith("[nbstage] id: 1 edit made")
    assert untitled.next_call is None
