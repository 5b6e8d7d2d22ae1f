"""The pool environments' file rules (actors/environments.py), without building one."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from nbstage.actors import environments


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        pytest.param({}, "/s/envs", id="in the state dir by default"),
        pytest.param({"NBSTAGE_ENVS_DIR": "/shared"}, "/shared", id="or where the env says"),
        pytest.param({"NBSTAGE_ENVS_DIR": ""}, "/s/envs", id="an empty setting is no setting"),
    ],
)
def test_where_templates_live(environ: dict[str, str], expected: str) -> None:
    assert environments.envs_dir("/s", environ) == Path(expected)


def test_a_pool_environment_is_its_own_prefix_and_imports_from_the_template(
    tmp_path: Path,
) -> None:
    template = tmp_path / "template"
    site = environments.site_packages(template)
    site.mkdir(parents=True)
    (site / "from_the_template.py").write_text("WHERE = 'template'\n")

    env = environments.take_pool_env(template, tmp_path / "state", "k1")
    assert env == environments.pool_dir(tmp_path / "state") / "k1"
    probe = "import sys, from_the_template as t; print(sys.prefix, t.WHERE)"
    ran = subprocess.run(
        [environments.env_python(env), "-c", probe], capture_output=True, text=True, check=True
    )
    assert ran.stdout.split() == [str(env), "template"]
    assert environments.pool_envs(tmp_path / "state") == [env]
    assert environments.pool_envs(tmp_path / "nothing") == []


def test_a_template_that_uv_cannot_build_says_why_and_is_not_marked_ready(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(environments, "_uv", lambda: sys.executable)
    with pytest.raises(environments.EnvironmentUnavailable, match="failed"):
        environments.ensure_template(tmp_path)
    assert not (tmp_path / environments.template_name() / environments.READY).exists()
