"""Inline dependencies, trust, project environments and manage_dependencies (issue 12),
through a real daemon, real kernels, real uv and real PyPI.

The environments directory is shared by the whole run (tests/conftest.py), so a set built
by one test is cached for the next; each test that needs a build of its own says so.
"""

from __future__ import annotations

import json
import os
import secrets
import time
from pathlib import Path

import nbformat
import pytest

from nbstage.actors.daemon.environment import dependencies
from nbstage.actors.daemon.environment.environments import READY, USED, envs_dir, site_packages
from nbstage.entrypoints.control.daemon_client import DaemonClient, DaemonError
from tests.conftest import FAST_SETTINGS
from tests.slow_index import slow_index
from tests.support import (
    RunningDaemon,
    call_ok,
    daemon_running,
    mcp_client,
    printed,
    processes_of_daemon,
    room_view,
    run_bounded,
    run_cell,
    run_cli,
    tcp_listeners,
    texts_of,
)


def prefix_of(client: DaemonClient, nid: str) -> Path:
    return Path(printed(run_cell(client, nid, "import sys; print(sys.prefix)")).strip())


LAYERED_ON = (
    "import sys, pathlib\n"
    "below = [p for p in sys.path if p.endswith('site-packages')\n"
    "         and not p.startswith(sys.prefix)]\n"
    "print(pathlib.Path(below[0]).parents[2])"
)
"""Cell source printing the environment a kernel's own bare venv is layered on."""


def layered_on(client: DaemonClient, nid: str) -> Path:
    return Path(printed(run_cell(client, nid, LAYERED_ON)).strip())


def manage(client: DaemonClient, nid: str, **fields) -> dict:
    fields.setdefault("add", [])
    fields.setdefault("remove", [])
    return client.request("manage_dependencies", notebook_id=nid, **fields)


def write_notebook(path: Path, deps: list[str]) -> None:
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    notebook.metadata["runt"] = {"uv": {"dependencies": deps}}
    notebook.cells.append(nbformat.v4.new_code_cell("x = 1"))
    nbformat.write(notebook, path)


def test_added_dependencies_are_built_shared_saved_and_reused_on_reopen(
    daemon: RunningDaemon, tmp_path: Path
) -> None:
    with daemon.client(timeout=300) as client:
        nid = client.request("create")["notebook_id"]
        pool_prefix = prefix_of(client, nid)
        state = manage(client, nid)
        assert state["after"]["dependencies"] == []
        assert state["trust"] == {"status": "none", "needs_approval": False}
        assert state["environment"]["source"] == "pool"

        done = manage(client, nid, add=["six"], apply="restart")
        fp = dependencies.fingerprint(["six"])
        assert done["after"] == {"dependencies": ["six"], "fingerprint": fp}
        assert done["added"] == ["six"]
        assert done["trust"]["status"] == "trusted"
        assert done["apply"]["mode"] == "restart"
        assert done["apply"]["ok"] is True
        assert done["environment"]["source"] == "inline"
        assert done["environment"]["fingerprint"] == fp
        env = envs_dir(daemon.paths.root) / fp
        assert Path(done["environment"]["path"]) == env
        assert layered_on(client, nid) == env
        assert prefix_of(client, nid).parent == pool_prefix.parent, "a bare venv of its own"
        assert printed(run_cell(client, nid, "import six; print(six.__name__)")).strip() == "six"
        assert tcp_listeners(processes_of_daemon(daemon.pid)) == [], "nor does an inline one"
        listed = room_view(daemon, nid)
        assert listed["environment"]["source"] == "inline"
        assert listed["environment"]["fingerprint"] == fp

        path = tmp_path / "with-six.ipynb"
        client.request("save", notebook_id=nid, path=str(path))
        saved = json.loads(path.read_text())
        assert saved["metadata"]["runt"]["uv"]["dependencies"] == ["six"]

        other = client.request("create")["notebook_id"]
        shared = manage(client, other, add=["Six"], apply="restart")
        assert shared["environment"]["path"] == str(env), "the same set shares one environment"
        assert layered_on(client, other) == env

        built_at = (env / READY).stat().st_mtime_ns
        client.request("evict", notebook_id=nid)
        reopened = client.request("open", path=str(path))["notebook_id"]
        assert layered_on(client, reopened) == env, "nbstage wrote the set, so it is trusted"
        assert (env / READY).stat().st_mtime_ns == built_at, "reused, not built again"
        assert not client.notices, client.notices


def test_a_file_with_dependencies_nbstage_did_not_write_waits_for_approval(
    daemon: RunningDaemon, tmp_path: Path
) -> None:
    path = tmp_path / "theirs.ipynb"
    write_notebook(path, ["six"])
    with daemon.client(timeout=300) as client:
        nid = client.request("open", path=str(path))["notebook_id"]
        prefix = prefix_of(client, nid)
        notice = dependencies.approval_line(["six"])
        assert client.notices == [notice.to_json()]
        assert prefix.parent.name == "pool", "an untrusted set is never installed"
        state = manage(client, nid)
        assert state["trust"] == {"status": "untrusted", "needs_approval": True}
        assert state["environment"]["source"] == "pool"

        approved = manage(client, nid, trust=True, apply="restart")
        assert approved["trust"] == {"status": "trusted", "needs_approval": False}
        assert approved["environment"]["source"] == "inline"
        assert (
            layered_on(client, nid)
            == envs_dir(daemon.paths.root) / approved["after"]["fingerprint"]
        )
        assert not client.notices, "the approval line is gone"


def test_refusals_change_nothing(daemon: RunningDaemon) -> None:
    with daemon.client(timeout=300) as client:
        nid = client.request("create")["notebook_id"]
        run_cell(client, nid, "1")
        kernel_pid = room_view(daemon, nid)["kernel_pid"]
        first = manage(client, nid)["after"]["fingerprint"]

        with pytest.raises(DaemonError) as bad:
            manage(client, nid, add=["six", "six>="])
        assert bad.value.code == "bad_requirement"
        assert "'six>='" in str(bad.value)

        unknown = f"nbstage-no-such-package-{secrets.token_hex(4)}"
        with pytest.raises(DaemonError) as failed:
            manage(client, nid, add=[unknown], apply="restart")
        assert failed.value.code == "build_failed"
        assert unknown in str(failed.value), "uv's own words say which package"
        assert not (envs_dir(daemon.paths.root) / dependencies.fingerprint([unknown])).exists()

        with pytest.raises(DaemonError) as stale:
            manage(client, nid, add=["six"], dependency_fingerprint="0" * 16)
        assert stale.value.code == "dependencies_changed"
        assert "Dependencies changed since review" in str(stale.value)

        after = manage(client, nid)
        assert after["after"] == {"dependencies": [], "fingerprint": first}
        assert room_view(daemon, nid)["kernel_pid"] == kernel_pid, "the kernel was left alone"
        accepted = manage(client, nid, add=["six"], dependency_fingerprint=first)
        assert accepted["after"]["dependencies"] == ["six"]


def test_manage_dependencies_over_mcp_reports_progress_during_a_slow_build(
    state_dir: Path, tmp_path: Path
) -> None:
    """A build that lasts over 5 s, because the wheel comes from an index that is slow,
    sends progress notifications, uv's own lines among them; list_active_notebooks names
    the environment after.
    Legacy handshake here; the approval test below speaks 2026-07-28."""
    name = f"nbstage-slow-{secrets.token_hex(4)}"
    notes: list[tuple[float, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        notes.append((progress, message))

    async def body(daemon: RunningDaemon) -> None:
        async with mcp_client(daemon, "legacy", label="deps") as client:
            await call_ok(client, "create_notebook")
            state = await call_ok(client, "manage_dependencies")
            assert state["dependencies"] == []
            assert state["trust"] == {"status": "none", "needs_approval": False}
            assert set(state) == {"dependencies", "env_source", "fingerprint", "trust"}

            result = await client.call_tool(
                "manage_dependencies",
                {"add": [name], "apply": "restart"},
                progress_callback=on_progress,
            )
            assert not result.is_error, texts_of(result)
            done = result.structured_content
            assert done["after"] == [name]
            assert done["added"] == [name]
            assert done["apply"]["ok"] is True
            assert done["apply"]["seconds"] >= 5
            assert done["env_source"] == "inline"
            messages = [message or "" for _, message in notes]
            assert any("manage_dependencies still running" in m for m in messages), messages
            uv_lines = [m for m in messages if m.startswith("uv: ")]
            assert any(name in line for line in uv_lines), messages
            values = [progress for progress, _ in notes]
            assert values == sorted(set(values)), "progress only goes up"

            made = await call_ok(client, "create_cell", source=f"import {name.replace('-', '_')}")
            ran = await call_ok(client, "execute_cell", cell_id=made["cell_id"])
            assert ran["execution"]["status"] == "done", ran
            listed = await call_ok(client, "list_active_notebooks")
            (notebook,) = listed["notebooks"]
            assert notebook["env_source"] == "inline"
            assert notebook["fingerprint"] == done["fingerprint"]

    with (
        slow_index(tmp_path / "index", name, seconds=6) as url,
        daemon_running(state_dir, {**FAST_SETTINGS, "UV_INDEX": url}) as daemon,
    ):
        run_bounded(body, daemon, budget=240)


def test_the_operator_sees_environments_and_removes_the_unused_ones(
    daemon: RunningDaemon,
) -> None:
    """In the run's shared environments folder, so only what is two days old goes."""
    with daemon.client(timeout=300) as client:
        nid = client.request("create")["notebook_id"]
        fp = manage(client, nid, add=["six"], apply="restart")["after"]["fingerprint"]
    root = envs_dir(daemon.paths.root)
    unused = root / ("f" * 16)
    unused.mkdir()
    (unused / READY).touch()
    two_days_ago = time.time() - 2 * 86400
    for env in (unused, root / fp):
        (env / USED).touch()
        os.utime(env / USED, (two_days_ago, two_days_ago))

    def admin(*args: str):
        wide = {**daemon.env, "COLUMNS": "400"}
        ran = run_cli("admin", *args, state_dir=daemon.paths.root, env=wide)
        assert ran.returncode == 0, ran.stderr
        return ran.stdout

    envs = json.loads(admin("envs", "--json"))["envs"]
    inline = {env["fingerprint"]: env for env in envs if env["kind"] == "inline"}
    assert {fp, "f" * 16} <= set(inline)
    assert inline[fp]["bytes"] > inline["f" * 16]["bytes"]
    assert inline[fp]["last_used"] == pytest.approx(two_days_ago, abs=1)
    room = admin("room", nid[:8])
    assert f"environment  inline, {fp}" in room, room

    assert admin("gc-envs", "1") == (
        f"removed 1 environment unused for 1 day: {unused}; kept 1 in use: {fp}\n"
    )
    assert not unused.exists()
    assert (root / fp / READY).exists(), "an open room's environment stays"


def test_an_agent_sees_the_approval_line_and_syncs_the_approved_set_into_its_kernel(
    daemon: RunningDaemon, tmp_path: Path
) -> None:
    path = tmp_path / "shared.ipynb"
    write_notebook(path, ["iniconfig"])
    line = dependencies.approval_line(["iniconfig"]).line()

    async def body() -> None:
        async with mcp_client(daemon, "2026-07-28", label="syncer") as client:
            connected = await client.call_tool("connect_notebook", {"path": str(path)})
            assert connected.structured_content["env_source"] == "pool"
            assert texts_of(connected)[0] == line, "the connect result says it at once"
            assert "in the pool environment" in texts_of(connected)[1]
            made = await call_ok(client, "create_cell", source="import sys; print(sys.prefix)")
            ran = await client.call_tool("execute_cell", {"cell_id": made["cell_id"]})
            assert line in texts_of(ran), texts_of(ran)
            approval = dependencies.approval_line(["iniconfig"]).to_json()
            assert approval in ran.structured_content["notices"], ran.structured_content
            prefix = ran.structured_content["execution"]["outputs"][0]["text"].strip()
            kernel_pid = room_view(daemon, connected.structured_content["notebook_id"])[
                "kernel_pid"
            ]

            waiting = await call_ok(client, "manage_dependencies")
            assert waiting["next_call"] == "manage_dependencies(trust=true)", waiting
            refused = await client.call_tool("manage_dependencies", {"apply": "sync"})
            assert refused.is_error
            assert any("not approved" in text for text in texts_of(refused)), texts_of(refused)

            synced = await call_ok(client, "manage_dependencies", trust=True, apply="sync")
            assert synced["trust"] == {"status": "trusted", "needs_approval": False}
            assert synced["apply"]["ok"] is True
            assert synced["env_source"] == "pool", "sync leaves the kernel where it runs"
            probe = "import iniconfig; print(iniconfig.__file__)"
            check = await call_ok(client, "create_cell", source=probe, and_run=True)
            where = check["execution"]["outputs"][0]["text"]
            assert where.startswith(prefix), where
            listed = room_view(daemon, connected.structured_content["notebook_id"])
            assert listed["kernel_pid"] == kernel_pid, "no restart"
            again = await client.call_tool("execute_cell", {"cell_id": made["cell_id"]})
            assert line not in texts_of(again)

    run_bounded(body, budget=180)


def test_a_pip_install_in_an_inline_kernel_stays_with_that_kernel(
    daemon: RunningDaemon, tmp_path: Path
) -> None:
    """The environment of a set is shared by every notebook with that set, so what one
    kernel installs must not land there: it would show up in the others, and the
    fingerprint would no longer describe the environment."""

    async def printed_by(client, source: str) -> str:
        ran = await call_ok(client, "create_cell", source=source, and_run=True, timeout_secs=180)
        assert ran["execution"]["status"] == "done", ran
        return "".join(o.get("text", "") for o in ran["execution"]["outputs"]).strip()

    async def body() -> None:
        async with mcp_client(daemon, "legacy", label="pip", cwd=tmp_path) as client:
            await call_ok(client, "create_notebook")
            await call_ok(client, "manage_dependencies", add=["six"], apply="restart")
            await printed_by(client, "%pip install --quiet --disable-pip-version-check idna")
            here = "import idna, sys; print(idna.__file__.startswith(sys.prefix))"
            assert await printed_by(client, here) == "True"

            await call_ok(client, "create_notebook")
            await call_ok(client, "manage_dependencies", add=["six"], apply="restart")
            absent = "import importlib.util; print(importlib.util.find_spec('idna') is None)"
            assert await printed_by(client, absent) == "True"

    run_bounded(body, budget=300)
    shared = site_packages(envs_dir(daemon.paths.root) / dependencies.fingerprint(["six"]))
    assert not list(shared.glob("idna*")), "the shared environment is as it was built"
