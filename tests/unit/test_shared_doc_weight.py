"""What a live shared document keeps on the Python side, beside yrs's own store: no copy
of the document, and one small fingerprint a cell (ADR 0004, "What the live document
weighs"). tracemalloc sees Python's allocations only, not yrs's, which is the point."""

from __future__ import annotations

import gc
import tracemalloc

import nbformat
from pycrdt import Doc, create_sync_message

from nbstage.actors.daemon.notebook.document import Document
from nbstage.actors.daemon.room import shared_cells
from nbstage.actors.daemon.room.shared_doc import SharedDoc


def _notebook(cells: int) -> nbformat.NotebookNode:
    """As the memory bench writes it: a short code cell with one stream output each."""
    nb = nbformat.v4.new_notebook()
    for i in range(cells):
        cell = nbformat.v4.new_code_cell(f"x_{i} = {i}\nprint(x_{i})")
        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=f"{i}\n")]
        cell.execution_count = i + 1
        nb.cells.append(cell)
    return nb


def test_a_watched_document_keeps_less_than_its_notebooks_json_on_the_python_side() -> None:
    nb = _notebook(1000)
    size = len(nbformat.writes(nb).encode())
    doc = Document.from_json(nb)
    SharedDoc.of(Document.from_json(_notebook(50))).close()  # imports, caches
    gc.collect()
    tracemalloc.start()
    try:
        shared = SharedDoc.of(doc)
        shared.join("person", 1)
        shared.receive(create_sync_message(Doc()))
        gc.collect()
        grown, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert grown < size, f"{grown} B kept for a {size} B notebook"
    shared.close()


def test_cells_with_the_same_metadata_share_one_string_of_it() -> None:
    doc = Document.from_json(_notebook(2))
    first, second = (shared_cells.fingerprint(cell) for cell in doc.cells)
    assert first[4] is second[4]
    doc.cells[1].metadata = {"tags": ["x"]}
    assert shared_cells.fingerprint(doc.cells[1])[4] != first[4]


def test_the_ids_of_a_built_document_are_the_documents_own_strings() -> None:
    doc = Document.from_json(_notebook(3))
    shared = SharedDoc.of(doc)
    assert all(
        mine is theirs.id for mine, theirs in zip(shared.mirrored.ids, doc.cells, strict=True)
    )
    shared.close()
