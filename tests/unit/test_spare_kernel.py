"""The spare kernel's slot and the rule for who may adopt it
(actors/daemon/kernel/spare_kernel.py)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from nbstage.actors.daemon.environment.projects import project_fingerprint
from nbstage.actors.daemon.kernel.kernel_environment import runs_in_pool
from nbstage.actors.daemon.kernel.spare_kernel import Spare, SpareSlot, launch_spare
from nbstage.protocol.daemon_actors.kernels import EnvironmentWanted


def sleeper(tmp_path: Path, name: str) -> Spare:
    env = tmp_path / "envs" / name
    env.mkdir(parents=True)
    connection_file = tmp_path / f"{name}.json"
    connection_file.write_text("{}")
    process = subprocess.Popen(["sleep", "60"], start_new_session=True)
    return Spare(name, connection_file, process, env, str(tmp_path))


def gone(spare: Spare) -> bool:
    return (
        spare.process.poll() is not None
        and not spare.env.exists()
        and not spare.connection_file.exists()
    )


def test_no_spare_without_a_built_template(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("NBSTAGE_TEMPLATE_DIR", str(tmp_path / "templates"))
    assert launch_spare(tmp_path / "state", tmp_path / "kernels") is None
    assert not (tmp_path / "kernels").exists()
    assert not (tmp_path / "state").exists()


def test_the_spare_is_taken_once(tmp_path: Path) -> None:
    slot = SpareSlot()
    spare = sleeper(tmp_path, "a")
    slot.put(spare)
    try:
        assert slot.take() is spare
        assert slot.take() is None
    finally:
        spare.process.kill()
        spare.process.wait()


def test_an_unused_spare_is_discarded_with_what_it_left(tmp_path: Path) -> None:
    slot = SpareSlot()
    spare = sleeper(tmp_path, "a")
    slot.put(spare)
    slot.discard()
    assert gone(spare)
    assert slot.take() is None


def test_a_second_spare_replaces_the_first(tmp_path: Path) -> None:
    slot = SpareSlot()
    first, second = sleeper(tmp_path, "a"), sleeper(tmp_path, "b")
    slot.put(first)
    slot.put(second)
    assert gone(first)
    slot.discard()
    assert gone(second)


def test_a_spare_that_exited_is_not_handed_out(tmp_path: Path) -> None:
    slot = SpareSlot()
    spare = sleeper(tmp_path, "a")
    slot.put(spare)
    spare.process.kill()
    spare.process.wait()
    assert slot.take() is None
    assert gone(spare)


@pytest.mark.parametrize(
    ("wanted", "project", "pooled"),
    [
        (EnvironmentWanted(), None, True),
        (EnvironmentWanted(search_from="nb"), None, True),
        (EnvironmentWanted(search_from="nb"), "approved", False),
        (EnvironmentWanted(search_from="nb"), "not approved", True),
        (EnvironmentWanted(("six",), "f1"), None, False),
    ],
)
def test_only_a_kernel_bound_for_the_pool_may_adopt_the_spare(
    tmp_path: Path, wanted: EnvironmentWanted, project: str | None, pooled: bool
) -> None:
    folder = tmp_path / "work"
    (folder / "nb").mkdir(parents=True)
    (folder / ".git").mkdir()
    for each in (folder, folder / "nb"):
        each.chmod(0o755)
    trusted = ()
    if project:
        (folder / "pyproject.toml").write_text('[project]\nname = "p"\nversion = "1"\n')
    if project == "approved":
        trusted = (project_fingerprint(folder),)
    if wanted.search_from:
        wanted = EnvironmentWanted(
            search_from=str(folder / wanted.search_from), trusted_projects=trusted
        )
    assert runs_in_pool(wanted, home=tmp_path / "home") is pooled
