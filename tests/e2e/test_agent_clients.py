"""What the real Claude Code and Codex CLIs hand their model from nbstage's results (issue 21).

Both clients give their model only the structuredContent of a result that has one (Claude
Code adds its image items; Codex drops them), so everything an agent acts on must be there.
Each client runs once, driven by a scripted model stand-in (tests/model_standin.py) through
six cases in one conversation: a notebook that asks for packages, a cell that draws a PNG,
a capped output, an error with a next step, a file changed on disk and a daemon restart.
What the stand-in received back is what the model would have read.
"""

from __future__ import annotations

import base64
import json
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import nbformat
import psutil
import pytest

from tests import agent_clients
from tests.conftest import daemon_of_a_module
from tests.images import BUILDERS_SOURCE
from tests.model_standin import ModelStandIn, Step
from tests.support import RunningDaemon, pid_gone, start_daemon, wait_until

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def shared_daemon() -> Iterator[RunningDaemon]:
    with daemon_of_a_module() as daemon:
        yield daemon


def write_notebook(path: Path, cells: list[tuple[str, str]], deps: list[str] | None = None):
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    if deps:
        notebook.metadata["runt"] = {"uv": {"dependencies": deps}}
    for cell_id, source in cells:
        cell = nbformat.v4.new_code_cell(source)
        cell.id = cell_id
        notebook.cells.append(cell)
    nbformat.write(notebook, path)


def notebook_id_of(daemon: RunningDaemon, path: Path) -> str:
    rooms = daemon.request("list_rooms")["rooms"]
    return next(room["notebook_id"] for room in rooms if room["path"] == str(path))


def change_on_disk(daemon: RunningDaemon, path: Path) -> Callable[[], None]:
    """A person edits the notebook's file: a cell is added; done once the room merged it."""

    def change() -> None:
        nid = notebook_id_of(daemon, path)
        notebook = nbformat.read(path, as_version=4)
        cell = nbformat.v4.new_code_cell("print('added by a person')")
        cell.id = "person"
        notebook.cells.append(cell)
        nbformat.write(notebook, path)

        def merged() -> bool:
            with daemon.client() as client:
                cells = client.request("get_cells", notebook_id=nid)["cells"]
            return any(c["cell_id"] == "person" for c in cells)

        wait_until(merged, 20, "the room to merge the change on disk")

    return change


def restart_daemon(daemon: RunningDaemon, path: Path) -> Callable[[], None]:
    """The daemon is killed and started again; done once the session rejoined the notebook."""

    def restart() -> None:
        old = daemon.pid
        daemon.kill()
        wait_until(lambda: pid_gone(old), 10, "the killed daemon to be gone")
        daemon.pid = start_daemon(daemon.paths.root, daemon.env).pid

        def rejoined() -> bool:
            rooms = daemon.request("list_rooms")["rooms"]
            return any(room["path"] == str(path) and room["peers"] for room in rooms)

        wait_until(rejoined, 60, "the session to rejoin after the restart")

    return restart


def script(daemon: RunningDaemon, workdir: Path) -> list[Step]:
    deps = workdir / "deps.ipynb"
    work = workdir / "work.ipynb"
    write_notebook(deps, [("x", "x = 1")], deps=["six"])
    setup = BUILDERS_SOURCE + "\nfrom IPython.display import Image, display\n"
    cells = [
        ("setup", setup),
        ("plot", 'display(Image(data=png_bytes(48, 32), format="png"))'),
        ("long", "print('x' * 20000)"),
    ]
    write_notebook(work, cells)
    return [
        Step("connect_notebook", {"path": str(deps)}),
        Step("connect_notebook", {"path": str(work)}),
        Step("execute_cell", {"cell_id": "setup"}),
        Step("execute_cell", {"cell_id": "plot"}),
        Step("execute_cell", {"cell_id": "long"}),
        Step("execute_cell", {"cell_id": "no-such-cell"}),
        Step("get_cell", {"cell_id": "plot"}, before=change_on_disk(daemon, work)),
        Step("get_all_cells", {}, before=restart_daemon(daemon, work)),
    ]


CASES = {
    "approval": 0,
    "image": 3,
    "capped": 4,
    "error": 5,
    "disk": 6,
    "restart": 7,
}
"""Which turn of the script shows each case."""
RECORD_ENV = "NBSTAGE_TEST_RECORD_MODEL_INPUT"
"""A file to write what the model was handed to, for a person to read."""


def seen_by_model(result: Any) -> tuple[dict[str, Any], list[str]]:
    """The JSON a client handed its model for one result, and the images beside it."""
    if isinstance(result, dict) and result.get("type") == "tool_result":
        blocks = result["content"]
        if isinstance(blocks, str):
            blocks = [{"type": "text", "text": blocks}]
        texts = [b["text"] for b in blocks if b.get("type") == "text"]
        images = [b["source"]["data"] for b in blocks if b.get("type") == "image"]
    else:
        output = result["output"]
        parts = output if isinstance(output, list) else [{"type": "input_text", "text": output}]
        texts = [p["text"] for p in parts if p.get("type") == "input_text"]
        images = [p["image_url"] for p in parts if p.get("type") == "input_image"]
    whole = "\n".join(texts)
    if isinstance(result, dict) and result.get("is_error"):
        return {"text": whole}, images
    found = re.search(r"\{.*\}", whole, re.DOTALL)
    assert found, f"no JSON in what the model saw: {json.dumps(result)[:1500]}"
    return json.loads(found.group(0)), images


def mcp_servers_of(daemon: RunningDaemon) -> list[psutil.Process]:
    """The `nbstage mcp` processes serving ``daemon``'s state dir, whoever started them."""
    found = []
    for process in psutil.process_iter(["cmdline"]):
        cmdline = process.info["cmdline"] or []
        if "mcp" in cmdline and str(daemon.paths.root) in cmdline:
            found.append(process)
    return found


def notices_of(seen: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [n for n in seen.get("notices", ()) if n["kind"] == kind]


def drive(run: Callable[..., str], daemon: RunningDaemon, tmp_path: Path) -> list[Any]:
    steps = script(daemon, tmp_path)
    with ModelStandIn(steps) as standin:
        report = run(daemon, standin.url, tmp_path / "home", tmp_path)
    wait_until(lambda: not mcp_servers_of(daemon), 10, "the client's nbstage mcp to end")
    offered = [len(body.get("tools") or ()) for body in standin.requests]
    report += f"\ntools offered in each request: {offered}"
    assert not standin.errors, (standin.errors, report)
    results = standin.results()
    assert len(results) == len(steps), report
    assert all(r is not None for r in results), report
    seen = [seen_by_model(result) for result in results]
    record = os.environ.get(RECORD_ENV)
    if record:
        shown = {case: seen[turn][0] for case, turn in CASES.items()}
        Path(record).write_text(json.dumps({"results": results, "cases": shown}, indent=1))
    return seen


def check_cases(seen: list[tuple[dict[str, Any], list[str]]], images_pass: bool) -> None:
    approval, _ = seen[CASES["approval"]]
    (asks,) = notices_of(approval, "approval_needed")
    assert "six" in asks["message"]
    assert asks["next_call"] == "manage_dependencies(trust=true)"

    plotted, images = seen[CASES["image"]]
    (output,) = plotted["execution"]["outputs"]
    (image,) = output["images"]
    assert (image["mime_type"], image["width"], image["height"]) == ("image/png", 48, 32)
    assert image["attached"] is True
    figure = Path(image["file"])
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    if images_pass:
        (data,) = images
        assert base64.b64decode(data.removeprefix("data:image/png;base64,")) == (
            figure.read_bytes()
        )
    else:
        assert images == [], "this client drops image content; the file is the way to it"

    capped, _ = seen[CASES["capped"]]
    (output,) = capped["execution"]["outputs"]
    assert output["truncated"] is True
    assert "omitted; call get_results with full_output=true" in output["text"]
    execution_id = capped["execution"]["execution_id"]
    assert capped["execution"]["next_call"] == (
        f'get_results(execution_id="{execution_id}", full_output=true)'
    )

    failed, _ = seen[CASES["error"]]
    if "text" in failed:
        # Claude Code shows a failed call's text, not its structured part.
        assert "no-such-cell" in failed["text"]
        assert "Call get_all_cells" in failed["text"]
    else:
        assert "no-such-cell" in failed["error"]
        assert failed["code"] == "cell_not_found"
        assert failed["next_call"] == "get_all_cells()"

    merged, _ = seen[CASES["disk"]]
    (changed,) = notices_of(merged, "changed_on_disk")
    assert "1 added" in changed["message"]
    assert changed["next_call"] == "get_all_cells()"

    after, _ = seen[CASES["restart"]]
    (renewed,) = notices_of(after, "kernel_renewed")
    assert "new kernel" in renewed["message"]
    assert any(cell["cell_id"] == "person" for cell in after["cells"])


@pytest.mark.skipif(
    agent_clients.cli("claude") is None, reason=f"Claude Code missing: {agent_clients.INSTALL}"
)
def test_what_claude_code_hands_its_model(shared_daemon: RunningDaemon, tmp_path: Path) -> None:
    seen = drive(agent_clients.run_claude, shared_daemon, tmp_path)
    check_cases(seen, images_pass=True)


@pytest.mark.skipif(
    agent_clients.cli("codex") is None, reason=f"Codex missing: {agent_clients.INSTALL}"
)
def test_what_codex_hands_its_model(shared_daemon: RunningDaemon, tmp_path: Path) -> None:
    seen = drive(agent_clients.run_codex, shared_daemon, tmp_path)
    check_cases(seen, images_pass=False)
