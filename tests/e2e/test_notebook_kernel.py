"""The notebook's own kernel (issue 11 §4): the kernelspec its metadata names, through real
processes: a daemon whose JUPYTER_PATH holds a second kernelspec, `nbstage mcp`, the SDK
client and real kernels.

The second kernelspec is a copy of python3 under another name and display name, whose
kernels carry an environment variable naming it, so a cell can say which spec runs it.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import nbformat
import pytest
from jupyter_client.kernelspec import KernelSpecManager

from tests.conftest import FAST_SETTINGS
from tests.support import (
    RunningDaemon,
    call_ok,
    daemon_running,
    mcp_client,
    room_view,
    run_bounded,
    texts_of,
)

pytestmark = pytest.mark.e2e

OTHER = "nbstage-other"
OTHER_DISPLAY = "Other Python (nbstage test)"
MISSING = "nbstage-missing"
WHICH_SPEC = "import os; print(os.environ.get('NBSTAGE_TEST_KERNELSPEC'))"


def install_python_copy(jupyter_path: Path, name: str, display_name: str) -> None:
    """Copy python3's kernelspec to ``jupyter_path/kernels/name``, marking its kernels."""
    source = Path(KernelSpecManager().get_kernel_spec("python3").resource_dir)
    target = jupyter_path / "kernels" / name
    shutil.copytree(source, target)
    spec = json.loads((target / "kernel.json").read_text())
    spec["display_name"] = display_name
    spec["argv"][0] = sys.executable
    spec["env"] = {**spec.get("env", {}), "NBSTAGE_TEST_KERNELSPEC": name}
    (target / "kernel.json").write_text(json.dumps(spec))


def write_notebook(path: Path, metadata: dict[str, Any]) -> Path:
    nb = nbformat.v4.new_notebook(metadata=metadata)
    nb.cells = [nbformat.v4.new_code_cell(WHICH_SPEC, id="which")]
    nbformat.write(nb, path)
    return path


async def failure(client: Any, name: str, **arguments: Any) -> tuple[str | None, str]:
    """A tool call that must fail: its error code, if it names one, and its text."""
    result = await client.call_tool(name, arguments)
    assert result.is_error, f"{name}({arguments}) should fail: {result.structured_content}"
    return (result.structured_content or {}).get("code"), "\n".join(texts_of(result))


async def printed(client: Any, cell_id: str) -> str:
    execution = (await call_ok(client, "execute_cell", cell_id=cell_id))["execution"]
    assert execution["status"] == "done", execution
    return "".join(output.get("text", "") for output in execution["outputs"])


@pytest.fixture
def jupyter_path(tmp_path: Path) -> Path:
    path = tmp_path / "jupyter"
    install_python_copy(path, OTHER, OTHER_DISPLAY)
    return path


def daemon_env(jupyter_path: Path) -> dict[str, str]:
    return {**FAST_SETTINGS, "JUPYTER_PATH": str(jupyter_path)}


def test_open_starts_the_named_kernelspec_falls_back_by_language_or_opens_without_one(
    state_dir: Path, tmp_path: Path, jupyter_path: Path
) -> None:
    named = write_notebook(
        tmp_path / "named.ipynb",
        {"kernelspec": {"name": OTHER, "display_name": "x", "language": "python"}},
    )
    by_language = write_notebook(
        tmp_path / "by-language.ipynb",
        {
            "kernelspec": {"name": "conda-env-gone-py", "display_name": "gone"},
            "language_info": {"name": "python"},
        },
    )
    unknown_metadata = {
        "kernelspec": {"name": MISSING, "display_name": "Missing", "language": "cobol"},
        "language_info": {"name": "cobol"},
    }
    unknown = write_notebook(tmp_path / "unknown.ipynb", unknown_metadata)

    async def body(daemon: RunningDaemon) -> None:
        async with mcp_client(daemon, "legacy") as client:
            opened = await call_ok(client, "connect_notebook", path=str(named))
            assert opened["kernelspec"] == OTHER
            assert "kernel_refused" not in opened
            assert await printed(client, "which") == f"{OTHER}\n"
            (listed,) = (await call_ok(client, "list_active_notebooks"))["notebooks"]
            assert (listed["notebook_id"], listed["kernelspec"]) == (opened["notebook_id"], OTHER)

            fallback = await call_ok(client, "connect_notebook", path=str(by_language))
            assert fallback["kernelspec"] == "python3"
            assert await printed(client, "which") == "None\n"

            result = await client.call_tool("connect_notebook", {"path": str(unknown)})
            assert not result.is_error, texts_of(result)
            refused = result.structured_content
            assert refused["kernelspec"] is None
            for words in (MISSING, "cobol", "python3 (python)", f"{OTHER} (python)"):
                assert words in refused["kernel_refused"]
                assert words in texts_of(result)[0]

            # Readable, editable and savable without a kernel; no kernel was started.
            cells = (await call_ok(client, "get_all_cells"))["cells"]
            assert [c["cell_id"] for c in cells] == ["which"]
            made = await call_ok(client, "create_cell", source="1 + 1")
            await call_ok(client, "set_cell", cell_id=made["cell_id"], source="2 + 2")
            code, text = await failure(client, "execute_cell", cell_id="which")
            assert code == "unknown_runtime"
            assert "python3 (python)" in text
            assert f"{OTHER} (python)" in text
            code, _ = await failure(client, "create_cell", source="3", and_run=True)
            assert code == "unknown_runtime"
            code, _ = await failure(client, "run_all_cells")
            assert code == "unknown_runtime"
            await call_ok(client, "save_notebook")
            saved = nbformat.read(unknown, as_version=4)
            assert [c.source for c in saved.cells] == [WHICH_SPEC, "2 + 2", "3"]
            assert saved.metadata["kernelspec"] == unknown_metadata["kernelspec"]
            room = room_view(daemon, refused["notebook_id"])
            assert (room["kernel_status"], room["kernel_pid"]) == ("none", None)

            # Once a kernelspec of that name is installed, restart_kernel finds it.
            install_python_copy(jupyter_path, MISSING, "Missing, now installed")
            assert await call_ok(client, "restart_kernel") == {"restarted": True}
            assert await printed(client, "which") == f"{MISSING}\n"
            again = await call_ok(client, "connect_notebook", path=str(unknown))
            assert again["kernelspec"] == MISSING
            assert "kernel_refused" not in again

    with daemon_running(state_dir, daemon_env(jupyter_path)) as daemon:
        run_bounded(body, daemon)


def test_create_notebook_writes_the_metadata_of_the_kernelspec_it_runs(
    state_dir: Path, tmp_path: Path, jupyter_path: Path
) -> None:
    async def body(daemon: RunningDaemon) -> None:
        async with mcp_client(daemon, "legacy") as client:
            created = await call_ok(client, "create_notebook", runtime=OTHER)
            assert created["runtime"] == OTHER
            cell = await call_ok(client, "create_cell", source=WHICH_SPEC)
            assert await printed(client, cell["cell_id"]) == f"{OTHER}\n"
            await call_ok(client, "save_notebook", path=str(tmp_path / "other.ipynb"))

            await call_ok(client, "create_notebook", runtime="python", ephemeral=False)
            await call_ok(client, "save_notebook", path=str(tmp_path / "python.ipynb"))

            _, text = await failure(client, "create_notebook", runtime="cobol")
            assert "'cobol'" in text
            assert "python3 (python)" in text
            assert f"{OTHER} (python)" in text

    with daemon_running(state_dir, daemon_env(jupyter_path)) as daemon:
        run_bounded(body, daemon)

    other = nbformat.read(tmp_path / "other.ipynb", as_version=4).metadata
    assert other["kernelspec"] == {
        "name": OTHER,
        "display_name": OTHER_DISPLAY,
        "language": "python",
    }
    assert other["language_info"] == {"name": "python"}
    python = nbformat.read(tmp_path / "python.ipynb", as_version=4).metadata
    python3 = KernelSpecManager().get_kernel_spec("python3")
    assert python["kernelspec"] == {
        "name": "python3",
        "display_name": python3.display_name,
        "language": "python",
    }
    assert python["language_info"] == {"name": "python"}
