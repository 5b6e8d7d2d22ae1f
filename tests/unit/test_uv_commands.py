"""nbstage's uv reads only the configuration it chose, and ends with its owner."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from nbstage.actors.daemon.environment import environments, uv_commands
from tests.support import pid_gone, wait_until

NOT_TOML = "this is [not toml\n"


@pytest.fixture
def no_config_file() -> Iterator[None]:
    yield
    uv_commands.use_config_file("")


@pytest.fixture
def bare_env(tmp_path: Path) -> Path:
    env = tmp_path / "env"
    subprocess.run([environments._uv(), "venv", "--no-config", "--quiet", str(env)], check=True)
    return env


def test_uv_reads_no_configuration_above_the_folder_it_was_started_in(
    tmp_path: Path, bare_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A uv.toml uv cannot parse sits above both this process's folder and the env."""
    (tmp_path / "uv.toml").write_text(NOT_TOML)
    monkeypatch.chdir(bare_env)
    environments.uninstall_from(bare_env, ["six"])


def test_the_config_file_the_operator_named_is_the_one_read(
    tmp_path: Path, bare_env: Path, no_config_file: None
) -> None:
    chosen = tmp_path / "chosen" / "uv.toml"
    chosen.parent.mkdir()
    chosen.write_text(NOT_TOML)
    uv_commands.use_config_file(str(chosen))
    with pytest.raises(environments.EnvironmentUnavailable, match="parse"):
        environments.uninstall_from(bare_env, ["six"])


@pytest.mark.parametrize(
    ("files", "options"),
    [
        pytest.param(
            {"uv.toml": "", "pyproject.toml": "[project]\n"},
            ["--config-file", "{project}/uv.toml"],
            id="its own uv.toml",
        ),
        pytest.param({"pyproject.toml": "[tool.uv]\npackage = false\n"}, [], id="[tool.uv]"),
        pytest.param({"pyproject.toml": "[project]\nname = 'p'\n"}, ["--no-config"], id="none"),
        pytest.param({"pyproject.toml": "tool = 'uv'\n"}, ["--no-config"], id="odd tool"),
        pytest.param({"pyproject.toml": "[[[\n"}, ["--no-config"], id="unreadable"),
    ],
)
def test_a_project_reads_its_own_configuration_and_nothing_above(
    tmp_path: Path, files: dict[str, str], options: list[str]
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (tmp_path / "uv.toml").write_text(NOT_TOML)
    for name, text in files.items():
        (project / name).write_text(text)
    argv = environments.project_argv(project, tmp_path / "launcher.py")
    options = [option.format(project=project) for option in options]
    assert argv[2] == "--frozen"
    assert argv[3 : 3 + len(options)] == options
    assert argv[3 + len(options) : 5 + len(options)] == ["--project", str(project)]


def test_a_project_below_a_workspace_root_reads_nothing_but_its_own_uv_toml(
    tmp_path: Path,
) -> None:
    """uv would take the configuration of the workspace root above, not the project's."""
    (tmp_path / "pyproject.toml").write_text("[tool.uv.workspace]\nmembers = ['*']\n")
    project = tmp_path / "member"
    project.mkdir()
    (project / "pyproject.toml").write_text("[project]\nname = 'm'\n[tool.uv]\npackage = false\n")
    assert uv_commands.project_config_options(project) == ["--no-config"]
    (project / "uv.toml").write_text("")
    assert uv_commands.project_config_options(project) == [
        "--config-file",
        str(project / "uv.toml"),
    ]


def test_a_project_without_configuration_reads_the_operators_file(
    tmp_path: Path, no_config_file: None
) -> None:
    uv_commands.use_config_file(str(tmp_path / "mirror.toml"))
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    assert uv_commands.project_config_options(tmp_path) == [
        "--config-file",
        str(tmp_path / "mirror.toml"),
    ]


def test_the_guard_passes_the_commands_exit_status_on() -> None:
    done = subprocess.run(
        uv_commands.guarded(["sh", "-c", "echo said; exit 3"]), capture_output=True
    )
    assert (done.returncode, done.stdout) == (3, b"said\n")


def test_the_guard_ends_the_commands_whole_group_when_its_owner_dies(tmp_path: Path) -> None:
    """The command started a child of its own; both go when the owner is killed."""
    owner = subprocess.Popen(["sleep", "300"])
    pid_file = tmp_path / "grandchild"
    command = ["sh", "-c", f"sleep 300 & echo $! > {pid_file}; wait"]
    guard = subprocess.Popen(uv_commands.guarded(command, owner=owner.pid))
    try:
        grandchild = int(wait_until(lambda: _read(pid_file), 10, "the command's child"))
        owner.kill()
        owner.wait()
        assert guard.wait(timeout=10) == 1
        wait_until(lambda: pid_gone(grandchild), 10, "the command's child to end")
    finally:
        owner.kill()
        guard.kill()
        guard.wait()


def test_a_guard_told_to_stop_ends_the_commands_group(tmp_path: Path) -> None:
    pid_file = tmp_path / "command"
    guard = subprocess.Popen(uv_commands.guarded(["sh", "-c", f"echo $$ > {pid_file}; sleep 300"]))
    try:
        command = int(wait_until(lambda: _read(pid_file), 10, "the command"))
        guard.terminate()
        assert guard.wait(timeout=10) != 0
        wait_until(lambda: pid_gone(command), 10, "the command to end")
    finally:
        guard.kill()
        guard.wait()


def _read(path: Path) -> str:
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        return ""


def test_the_guard_imports_nothing_of_nbstage() -> None:
    source = uv_commands.GUARD.read_text()
    assert "nbstage" not in source.split('"""', 2)[2]
    assert sys.executable in uv_commands.guarded(["true"])
