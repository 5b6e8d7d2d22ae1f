"""Kernels run in a pool environment of their own, never in nbstage's venv (issue 12).

The template they are layered on is the user's, which ``make`` builds with real uv
(``~/.cache/nbstage``); inline environments go to a directory the whole run shares
(tests/conftest.py points NBSTAGE_ENVS_DIR at it).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from nbstage.actors.daemon.environment.environments import (
    TEMPLATE_LINK,
    pool_dir,
    site_packages,
    template_path,
)
from tests.support import RunningDaemon, pid_gone, printed, room_view, run_cell, run_cli, wait_until


def nbstage_packages() -> str:
    listed = subprocess.run(
        [sys.executable, "-m", "pip", "list", "--format=freeze"],
        capture_output=True,
        text=True,
        check=True,
    )
    return listed.stdout


def test_a_kernel_runs_in_its_own_pool_environment_and_pip_installs_only_there(
    daemon: RunningDaemon,
) -> None:
    before = nbstage_packages()
    with daemon.client() as client:
        nid = client.request("create")["notebook_id"]
        prefix = printed(run_cell(client, nid, "import sys; print(sys.prefix)")).strip()
        pool = pool_dir(daemon.paths.root)
        assert Path(prefix).parent == pool, prefix
        assert Path(prefix) != Path(sys.prefix)
        layered = site_packages(Path(prefix)) / TEMPLATE_LINK
        assert layered.read_text().strip() == str(site_packages(template_path())), (
            "a fresh state dir's kernel is layered on the user's template, built by make"
        )

        install = "%pip install --quiet --disable-pip-version-check six"
        printed(run_cell(client, nid, install, wait_secs=180))
        where = printed(run_cell(client, nid, "import six; print(six.__file__)"))
        assert where.startswith(prefix), where
        kernel_pid = room_view(daemon, nid)["kernel_pid"]

        client.request("restart_kernel", notebook_id=nid)
        kept = printed(run_cell(client, nid, "import six, sys; print(sys.prefix)")).strip()
        assert kept == prefix, "a restart keeps the kernel's environment"

        listed = run_cli("admin", "envs", "--json", state_dir=daemon.paths.root)
        assert listed.returncode == 0, listed.stderr
        envs = {env["path"]: env for env in json.loads(listed.stdout)["envs"]}
        assert envs[prefix]["kind"] == "pool"
        assert envs[prefix]["bytes"] > 0
        elsewhere = {"NBSTAGE_ENVS_DIR": str(daemon.paths.root / "not-the-daemons")}
        seen = run_cli("admin", "envs", "--json", state_dir=daemon.paths.root, env=elsewhere)
        kept = {(env["kind"], env["path"]) for env in json.loads(seen.stdout)["envs"]}
        assert kept == {(env["kind"], path) for path, env in envs.items()}, (
            "the console lists the daemon's environments, whatever its own NBSTAGE_ENVS_DIR"
        )
        shown = run_cli("admin", "envs", state_dir=daemon.paths.root, env={"COLUMNS": "80"})
        assert shown.stdout.splitlines()[0].split() == ["KIND", "SIZE", "USED", "PATH"]
        kinds = [line.split()[0] for line in shown.stdout.splitlines()[1:]]
        assert kinds[:2] == ["template", "pool"], "the run's inline environments come after"
    assert nbstage_packages() == before, "nbstage's own venv is unchanged"
    template = template_path()
    assert (site_packages(template) / "ipykernel").is_dir()
    assert not list(site_packages(template).glob("six*")), "the template is unchanged"

    daemon.stop()
    wait_until(lambda: pid_gone(kernel_pid), 15, "the first kernel to be gone")
    assert not Path(prefix).exists(), "a kernel's environment goes with it"
