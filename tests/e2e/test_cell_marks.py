"""clear_outputs and the cell tags (issue 25, part 3) through a real `nbstage mcp`: each
change is in the file once saved, and survives a reopen."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from tests.support import RunningDaemon, call_ok, mcp_client, run_bounded, texts_of

pytestmark = pytest.mark.e2e


def write_notebook(path: Path) -> None:
    notebook = nbformat.v4.new_notebook()
    for cell_id, source in (("a", "print('a')"), ("b", "print('b')"), ("md", "# title")):
        cell = (
            nbformat.v4.new_markdown_cell(source)
            if cell_id == "md"
            else nbformat.v4.new_code_cell(source)
        )
        cell.id = cell_id
        notebook.cells.append(cell)
    nbformat.write(notebook, path)


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
def test_tags_and_cleared_outputs_are_kept_in_the_file(
    daemon: RunningDaemon, tmp_path: Path, mode: str
) -> None:
    path = tmp_path / "marks.ipynb"
    write_notebook(path)

    async def body() -> None:
        async with mcp_client(daemon, mode, cwd=tmp_path) as client:
            await call_ok(client, "connect_notebook", path=str(path))
            await call_ok(client, "execute_cell", cell_id="a")
            await call_ok(client, "execute_cell", cell_id="b")
            tagged = await call_ok(
                client, "add_cell_tags", cell_id="a", tags=["parameters", "keep", "keep"]
            )
            assert tagged["tags"] == ["parameters", "keep"]
            tagged = await call_ok(client, "add_cell_tags", cell_id="md", tags=["intro"])
            assert tagged["tags"] == ["intro"]
            left = await call_ok(client, "remove_cell_tags", cell_id="a", tags=["keep", "none"])
            assert left["tags"] == ["parameters"]
            cleared = await call_ok(client, "clear_outputs", cell_id="b")
            assert cleared["cleared"] == ["b"]
            refused = await client.call_tool("clear_outputs", {"cell_id": "md"})
            assert refused.is_error
            assert "only code cells" in texts_of(refused)[0]
            await call_ok(client, "save_notebook")
            saved = nbformat.read(path, as_version=4)
            cells = {cell.id: cell for cell in saved.cells}
            assert cells["a"].metadata["tags"] == ["parameters"]
            assert cells["md"].metadata["tags"] == ["intro"]
            assert cells["a"].outputs
            assert cells["a"].execution_count is not None
            assert cells["b"].outputs == []
            assert cells["b"].execution_count is None
            cleared = await call_ok(client, "clear_outputs")
            assert cleared["cleared"] == ["a"]
            emptied = await call_ok(client, "remove_cell_tags", cell_id="md", tags=["intro"])
            assert emptied["tags"] == []
            await call_ok(client, "save_notebook")
        saved = nbformat.read(path, as_version=4)
        cells = {cell.id: cell for cell in saved.cells}
        assert all(not c.get("outputs") for c in saved.cells if c.cell_type == "code")
        assert "tags" not in cells["md"].metadata
        nbformat.validate(saved)

    run_bounded(body, budget=120)
