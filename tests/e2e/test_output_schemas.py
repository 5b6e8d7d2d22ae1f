"""Every tool's result validates against the outputSchema it declares (issue 21).

One real ``nbstage mcp`` and one notebook: a table of calls, in order, covers every tool,
with the shapes each can take (an image, a capped output, a run still going, cells with
and without outputs, an edit that runs, a failure). Each result, failures included, is
checked against the schema ``tools/list`` published for its tool, and must say in its
structured part what its text says.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import nbformat
import pytest

from nbstage.protocol.mcp.page_links import APP_ONLY_TOOLS
from nbstage.protocol.mcp.tools import RECONNECT, TOOLS
from tests.images import BUILDERS_SOURCE
from tests.support import RunningDaemon, mcp_client, run_bounded, texts_of

pytestmark = pytest.mark.e2e

PLOT = 'display(Image(data=png_bytes(40, 30), format="png"))'

CALLS: list[tuple[str, dict[str, Any], bool]] = [
    ("list_active_notebooks", {}, False),
    ("get_cell", {"cell_id": "setup"}, True),
    ("connect_notebook", {"path": "table.ipynb"}, False),
    ("connect_notebook", {"path": "table.ipynb"}, False),
    ("list_active_notebooks", {}, False),
    ("execute_cell", {"cell_id": "setup"}, False),
    ("execute_cell", {"cell_id": "plot"}, False),
    ("execute_cell", {"cell_id": "long"}, False),
    ("get_cell", {"cell_id": "plot"}, False),
    ("get_cell", {"cell_id": "long", "full_output": True}, False),
    ("get_all_cells", {}, False),
    ("get_all_cells", {"format": "rich"}, False),
    ("get_all_cells", {"format": "rich", "include_outputs": True}, False),
    ("get_all_cells", {"format": "json"}, False),
    ("get_all_cells", {"format": "json", "include_outputs": True}, False),
    ("create_cell", {"source": "import time; time.sleep(30)"}, False),
    ("create_cell", {"source": "print('made')", "and_run": True}, False),
    ("set_cell", {"cell_id": "long", "source": "print('x' * 9)"}, False),
    ("set_cell", {"cell_id": "long", "source": "print('y' * 9)", "and_run": True}, False),
    ("replace_match", {"cell_id": "long", "match": "nowhere", "content": "z"}, True),
    ("replace_match", {"cell_id": "long", "match": "'y'", "content": "'z'"}, False),
    ("replace_regex", {"cell_id": "long", "pattern": "z+", "content": "w", "and_run": True}, False),
    ("move_cell", {"cell_id": "long", "after_cell_id": None}, False),
    ("run_all_cells", {"wait": False}, False),
    ("interrupt_kernel", {}, False),
    ("get_results", {"execution_id": "no-such-run"}, True),
    ("restart_kernel", {}, False),
    ("manage_dependencies", {}, False),
    ("manage_dependencies", {"add": ["six"]}, False),
    ("manage_dependencies", {"dependency_fingerprint": "0" * 16, "trust": True}, True),
    ("add_cell_tags", {"cell_id": "long", "tags": ["parameters", "slow"]}, False),
    ("add_cell_tags", {"cell_id": "long", "tags": ["has space"]}, True),
    ("remove_cell_tags", {"cell_id": "long", "tags": ["slow"]}, False),
    ("clear_outputs", {"cell_id": "long"}, False),
    ("clear_outputs", {}, False),
    ("clear_outputs", {"cell_id": "nope"}, True),
    ("save_notebook", {}, False),
    ("delete_cell", {"cell_id": "plot"}, False),
    ("create_notebook", {}, False),
    ("show_notebook", {}, True),
    ("disconnect_notebook", {}, False),
    ("reconnect", {}, False),
]


def write_notebook(path: Path) -> None:
    cells = [
        ("setup", BUILDERS_SOURCE + "\nfrom IPython.display import Image, display\n"),
        ("plot", PLOT),
        ("long", "print('x' * 20000)"),
    ]
    notebook = nbformat.v4.new_notebook()
    for cell_id, source in cells:
        cell = nbformat.v4.new_code_cell(source)
        cell.id = cell_id
        notebook.cells.append(cell)
    nbformat.write(notebook, path)


def test_the_calls_cover_every_tool() -> None:
    """Every tool a client without the MCP Apps extension is listed; the app's own tool is
    called, its result checked against its schema, by tests/e2e/test_mcp_app.py."""
    listed = {t.name for t in (*TOOLS, RECONNECT)} - APP_ONLY_TOOLS
    assert {name for name, _, _ in CALLS} == listed


def test_every_result_validates_against_its_tools_output_schema(
    daemon: RunningDaemon, tmp_path: Path
) -> None:
    write_notebook(tmp_path / "table.ipynb")
    seen: dict[str, Any] = {}

    async def body() -> None:
        async with mcp_client(daemon, "2026-07-28", cwd=tmp_path) as client:
            listed = await client.list_tools()
            schemas = {tool.name: tool.output_schema for tool in listed.tools}
            for name, arguments, fails in CALLS:
                result = await client.call_tool(name, arguments)
                what = f"{name}({arguments}): {texts_of(result)}"
                assert result.is_error is fails, what
                structured = result.structured_content
                jsonschema.validate(structured, schemas[name])
                if fails:
                    assert structured["error"] in texts_of(result), what
                seen[f"{name} {arguments}"] = structured

    run_bounded(body, budget=240)
    plot = seen["execute_cell {'cell_id': 'plot'}"]["execution"]["outputs"][0]
    (image,) = plot["images"]
    assert (image["width"], image["height"], image["attached"]) == (40, 30, True)
    assert Path(image["file"]).stat().st_mode & 0o777 == 0o600
    long = seen["execute_cell {'cell_id': 'long'}"]["execution"]
    assert long["outputs"][0]["truncated"] is True
    assert long["next_call"].endswith("full_output=true)")
    rich = seen["get_all_cells {'format': 'rich'}"]["cells"]
    assert [("outputs" in c, c.get("output_count")) for c in rich] == [
        (False, 0),
        (False, 1),
        (False, 1),
    ], "left-out outputs are counted, never shown as []"
    shown = seen["get_all_cells {'format': 'json'}"]["cells"]
    assert [c.get("output_count") for c in shown] == [0, 1, 1]
