"""The official MCP Inspector CLI against a real `nbstage mcp` (issue 25): it lists the
tools, lists and reads the notebooks as resources, in each era it can negotiate (legacy,
modern, auto), and says nothing of a warning while it does.

Each Inspector run starts its own `nbstage mcp` on stdio, as a client would; they all
share one daemon and one notebook, attached once by a `tools/call` through the Inspector
itself. The last test runs it on a state dir with no daemon yet. ``make agent-clis``
installs the pinned CLI (see tests/agent_clients.py).
"""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest

from nbstage.entrypoints.common.statedir import state_paths
from tests import agent_clients
from tests.conftest import FAST_SETTINGS, daemon_of_a_module
from tests.images import png_bytes
from tests.support import RunningDaemon, assert_daemon_gone

INSPECTOR = agent_clients.cli("mcp-inspector")

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(INSPECTOR is None, reason=f"MCP Inspector missing: {agent_clients.INSTALL}"),
]

ERAS = ["legacy", "modern", "auto"]
PNG = png_bytes(24, 16)
NOWHERE = "nbstage://notebook/0123abcd"
# A warning of the Inspector, of Node, or a log line of nbstage at warning level or above.
WARNING = re.compile(r"warn|deprecat|\"level\":\s*\"(warning|error|critical)\"", re.IGNORECASE)


class Inspector:
    """Runs ``mcp-inspector --cli`` with a fresh `nbstage mcp` of ``daemon`` as its server.

    The Inspector hands its stdio server only a few variables of its own environment, so
    the daemon's are passed with ``-e``; its home is a temp dir, which keeps it away from
    the user's ``~/.mcp-inspector``.
    """

    def __init__(self, daemon: RunningDaemon, home: Path, cwd: Path) -> None:
        self.command, self.args, server_env = agent_clients.nbstage_server(daemon)
        if "XDG_RUNTIME_DIR" in os.environ:
            server_env.setdefault("XDG_RUNTIME_DIR", os.environ["XDG_RUNTIME_DIR"])
        self.env_flags = [flag for k, v in server_env.items() for flag in ("-e", f"{k}={v}")]
        self.home = home
        self.cwd = cwd

    def run(self, era: str, *method: str) -> Any:
        """The method's result, parsed; its exit status must be 0 and stderr warning-free."""
        done = self.run_raw(era, *method)
        shown = (
            f"{method}: exit {done.returncode}\n"
            f"stdout:\n{done.stdout[-3000:]}\nstderr:\n{done.stderr[-3000:]}"
        )
        assert done.returncode == 0, shown
        assert not warnings_in(done.stderr), shown
        return json.loads(done.stdout)

    def run_raw(self, era: str, *method: str) -> subprocess.CompletedProcess[str]:
        argv = [
            str(INSPECTOR),
            "--cli",
            "--protocol-era",
            era,
            *self.env_flags,
            self.command,
            *self.args,
            *method,
        ]
        env = {**agent_clients.quiet_env(self.home), "NO_COLOR": "1"}
        return subprocess.run(
            argv,
            env=env,
            cwd=self.cwd,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )


def warnings_in(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if WARNING.search(line)]


@pytest.fixture(scope="module")
def setup() -> Iterator[tuple[Inspector, str]]:
    """One daemon, one Inspector, and the URI of the notebook it attached."""
    with daemon_of_a_module() as daemon:
        work = daemon.paths.root.parent / "work"
        (work / "home").mkdir(parents=True)
        write_notebook(work / "plot.ipynb")
        inspector = Inspector(daemon, work / "home", work)
        attached = inspector.run(
            "legacy",
            "--method",
            "tools/call",
            "--tool-name",
            "connect_notebook",
            "--tool-arg",
            "path=plot.ipynb",
        )
        assert attached["isError"] is False, attached
        yield inspector, f"nbstage://notebook/{attached['structuredContent']['notebook_id']}"


def write_notebook(path: Path) -> None:
    notebook = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("draw()")
    cell.id = "plot"
    data = {"image/png": base64.b64encode(PNG).decode(), "text/plain": "<Figure>"}
    cell.outputs = [nbformat.v4.new_output("display_data", data=data)]
    notebook.cells.append(cell)
    nbformat.write(notebook, path)


@pytest.mark.parametrize("era", ERAS)
def test_the_inspector_lists_the_tools(setup: tuple[Inspector, str], era: str) -> None:
    inspector, _ = setup
    # --strict: any tool-schema portability problem is printed on stderr (and one of error
    # severity exits 6).
    listed = inspector.run(era, "--strict", "--method", "tools/list")
    names = {tool["name"] for tool in listed["tools"]}
    assert {"connect_notebook", "get_cell", "execute_cell"} <= names


@pytest.mark.parametrize("era", ERAS)
def test_the_inspector_lists_the_notebooks_and_templates(
    setup: tuple[Inspector, str], era: str
) -> None:
    inspector, uri = setup
    listed = inspector.run(era, "--method", "resources/list")["resources"]
    (notebook,) = [resource for resource in listed if resource["uri"] == uri]
    assert notebook["name"] == "plot.ipynb"
    assert notebook["mimeType"] == "application/x-ipynb+json"

    templates = inspector.run(era, "--method", "resources/templates/list")["resourceTemplates"]
    assert {t["uriTemplate"] for t in templates} == {
        "nbstage://notebook/{notebook_id}",
        "nbstage://notebook/{notebook_id}/cell/{cell_id}",
    }


@pytest.mark.parametrize("era", ERAS)
def test_the_inspector_reads_a_notebook_and_a_cell(setup: tuple[Inspector, str], era: str) -> None:
    inspector, uri = setup
    contents = inspector.run(era, "--method", "resources/read", "--uri", uri)["contents"]
    text, image = contents
    assert (text["uri"], text["mimeType"]) == (uri, "application/x-ipynb+json")
    notebook = nbformat.reads(text["text"], as_version=4)
    nbformat.validate(notebook)
    assert [cell.id for cell in notebook.cells] == ["plot"]
    assert notebook.cells[0].source == "draw()"
    assert image["mimeType"] == "image/png"
    assert base64.b64decode(image["blob"]) == PNG
    assert image["blob"] not in text["text"], "the image is a blob, not base64 in the text"

    cell_uri = f"{uri}/cell/plot"
    (cell, _) = inspector.run(era, "--method", "resources/read", "--uri", cell_uri)["contents"]
    assert (cell["uri"], cell["mimeType"]) == (cell_uri, "application/json")
    assert json.loads(cell["text"])["source"] == "draw()"


@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_a_read_that_starts_the_daemon_waits_for_it(tmp_path: Path, era: str) -> None:
    """The Inspector's one request is the first of its `nbstage mcp`, which must start the
    daemon: the read waits for it, as a tool call does, and so gets the daemon's answer
    (no such notebook) rather than "the daemon is unreachable"."""
    daemon = RunningDaemon(state_paths(tmp_path / "state"), dict(FAST_SETTINGS), pid=0)
    (tmp_path / "home").mkdir()
    inspector = Inspector(daemon, tmp_path / "home", tmp_path)
    try:
        done = inspector.run_raw(era, "--method", "resources/read", "--uri", NOWHERE)
        listed = inspector.run(era, "--method", "resources/list")["resources"]
    finally:
        daemon.pid = daemon.request("identity")["pid"]
        assert_daemon_gone(daemon)
    shown = f"exit {done.returncode}\nstdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    assert done.returncode != 0, shown
    assert "Resource not found" in done.stdout + done.stderr, shown
    assert "unreachable" not in done.stdout + done.stderr, shown
    assert not warnings_in(done.stderr), shown
    assert listed == [], "a fresh daemon has no notebook open"
