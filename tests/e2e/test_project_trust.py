"""A project's environment only once approved, and never one someone else could have
written (actors/daemon/environment/projects.py), through a real daemon, real `nbstage mcp` and real
uv.

The projects declare no dependencies and no build backend, so uv builds nothing and needs
no network; the hostile one's backend would write a marker if uv ever ran it.
"""

from __future__ import annotations

import os
import pwd
import secrets
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest

from nbstage.actors.daemon.environment.projects import APPROVE_CALL
from tests.support import (
    RunningDaemon,
    call_ok,
    mcp_client,
    processes_of_daemon,
    run_bounded,
    tcp_listeners,
    texts_of,
)

PYPROJECT = '[project]\nname = "demo"\nversion = "0.1"\nrequires-python = ">=3.11"\n'


def write_notebook(path: Path) -> None:
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    nbformat.write(notebook, path)


def in_venv_probe(venv: Path) -> str:
    return f"import sys; print(any(p.startswith({str(venv)!r}) for p in sys.path))"


async def run(client, cell_id: str) -> tuple[str, list[str]]:
    """What the cell printed, and the answer's texts (its notices among them)."""
    ran = await client.call_tool("execute_cell", {"cell_id": cell_id})
    assert not ran.is_error, texts_of(ran)
    execution = ran.structured_content["execution"]
    assert execution["status"] == "done", execution
    return "".join(out.get("text", "") for out in execution["outputs"]).strip(), texts_of(ran)


def asks_for_approval(texts: list[str]) -> bool:
    return any(APPROVE_CALL in text for text in texts)


def test_a_project_runs_the_kernel_only_once_approved_and_again_after_a_change(
    daemon: RunningDaemon, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir(mode=0o755)
    project.chmod(0o755)
    (project / ".git").mkdir()
    (project / "pyproject.toml").write_text(PYPROJECT)
    (project / "pyproject.toml").chmod(0o644)
    path = project / "analysis.ipynb"
    write_notebook(path)
    venv = project / ".venv"

    async def body() -> None:
        async with mcp_client(daemon, "2026-07-28", label="projects") as client:
            await call_ok(client, "connect_notebook", path=str(path))
            probe = await call_ok(client, "create_cell", source=in_venv_probe(venv))
            printed, texts = await run(client, probe["cell_id"])
            assert printed == "False", "not approved: the pool"
            assert asks_for_approval(texts), texts
            assert not venv.exists(), "uv never touched the project"
            assert not (project / "uv.lock").exists()

            approved = await call_ok(client, "manage_dependencies", trust=True, apply="restart")
            assert approved["env_source"] == "project", approved
            printed, texts = await run(client, probe["cell_id"])
            assert printed == "True", "approved: the project's own environment"
            assert not asks_for_approval(texts), texts
            where = await call_ok(
                client, "create_cell", source="import os; print(os.getcwd())", and_run=True
            )
            assert where["execution"]["outputs"][0]["text"].strip() == str(project)
            assert (project / "uv.lock").exists(), "uv locked it, as uv run would"
            assert (project / "pyproject.toml").read_text() == PYPROJECT, "no ipykernel added"
            assert tcp_listeners(processes_of_daemon(daemon.pid)) == [], "uv run keeps off TCP"

            await call_ok(client, "restart_kernel")
            printed, texts = await run(client, probe["cell_id"])
            assert printed == "True", "the lock uv wrote is covered by the approval"
            assert not asks_for_approval(texts), texts

            (project / "pyproject.toml").write_text(PYPROJECT + "# changed\n")
            await call_ok(client, "restart_kernel")
            printed, texts = await run(client, probe["cell_id"])
            assert printed == "False", "a changed pyproject.toml needs approval again"
            assert asks_for_approval(texts), texts

    run_bounded(body, budget=180)


@pytest.fixture
def other_user() -> Iterator[pwd.struct_passwd]:
    """A user of the machine's own, made for this test and removed after it."""
    if os.geteuid() != 0 or shutil.which("useradd") is None:
        pytest.skip("making a second user takes root and useradd")
    name = f"nbst{secrets.token_hex(4)}"
    made = subprocess.run(
        ["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", name],
        capture_output=True,
        text=True,
        check=False,
    )
    if made.returncode != 0:
        pytest.skip(f"useradd refused: {made.stderr.strip()}")
    try:
        yield pwd.getpwnam(name)
    finally:
        subprocess.run(["userdel", name], capture_output=True, check=False)


HOSTILE_BACKEND = """\
from pathlib import Path
Path({marker!r}).write_text("the backend ran")

def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    raise RuntimeError("never built")

build_wheel = build_editable
"""


@pytest.mark.parametrize("planted", ["backend.py", ".venv/bin/python"])
def test_another_users_project_in_a_shared_folder_is_never_built(
    daemon: RunningDaemon, tmp_path: Path, other_user: pwd.struct_passwd, planted: str
) -> None:
    """A folder like /tmp (root's, mode 1777) holds the other user's pyproject.toml with
    a build backend in the folder, or a ``.venv/bin/python`` of theirs (uv runs that one
    first, so each gets a run of its own); a notebook of the victim's own below it runs a
    cell, and what they planted never runs."""
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    marker = tmp_path / "planted-ran"
    hostile = {
        "pyproject.toml": PYPROJECT
        + '[build-system]\nrequires = []\nbuild-backend = "backend"\nbackend-path = ["."]\n',
        "backend.py": HOSTILE_BACKEND.format(marker=str(marker)),
        ".venv/bin/python": f"#!/bin/sh\necho ran > {marker}\n",
    }
    owned = [shared / "pyproject.toml", shared / planted]
    for name in ("pyproject.toml", planted):
        (shared / name).parent.mkdir(parents=True, exist_ok=True)
        (shared / name).write_text(hostile[name])
        (shared / name).chmod(0o755)
    if planted.startswith(".venv"):
        owned += [shared / ".venv", shared / ".venv/bin"]
    for each in owned:
        os.chown(each, other_user.pw_uid, other_user.pw_gid)
    mine = shared / "mine"
    mine.mkdir(mode=0o755)
    path = mine / "victim.ipynb"
    write_notebook(path)

    async def body() -> None:
        async with mcp_client(daemon, "2026-07-28", label="victim") as client:
            await call_ok(client, "connect_notebook", path=str(path))
            cell = await call_ok(client, "create_cell", source="import sys; print(sys.prefix)")
            ran = await client.call_tool("execute_cell", {"cell_id": cell["cell_id"]})
            assert not marker.exists(), f"the other user's {planted} ran"
            assert not ran.is_error, texts_of(ran)
            assert ran.structured_content["execution"]["status"] == "done"
            said = " ".join(texts_of(ran))
            assert f"the project at {shared} was not used" in said, said
            assert "writable by others" in said, said
            assert not asks_for_approval(texts_of(ran)), "nothing to approve"

    run_bounded(body, budget=120)
    assert not marker.exists()
