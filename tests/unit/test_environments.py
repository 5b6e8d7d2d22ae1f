"""The environments' file rules (actors/daemon/environment/environments.py); the few tests that
build one
with the real uv say so by asking for ``pypi``."""

from __future__ import annotations

import fcntl
import os
import secrets
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

import pytest

from nbstage.actors.daemon.environment import environments
from tests.slow_index import slow_index


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


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        pytest.param({"HOME": "/h"}, "/h/.cache/nbstage", id="the user's cache by default"),
        pytest.param({"XDG_CACHE_HOME": "/c"}, "/c/nbstage", id="the XDG cache where set"),
        pytest.param(
            {"XDG_CACHE_HOME": "/c", "NBSTAGE_TEMPLATE_DIR": "/t"}, "/t", id="or where it says"
        ),
        pytest.param({"NBSTAGE_ENVS_DIR": "/e", "HOME": "/h"}, "/h/.cache/nbstage", id="not envs"),
    ],
)
def test_templates_are_shared_by_all_of_a_users_state_dirs(
    environ: dict[str, str], expected: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", environ.get("HOME", "/h"))
    assert environments.template_root(environ) == Path(expected)


def test_each_python_installation_has_a_template_of_its_own() -> None:
    names = {
        environments.template_name((3, 11), "/usr/bin/python3.11"),
        environments.template_name((3, 11), "/opt/py/bin/python3.11"),
        environments.template_name((3, 12), "/usr/bin/python3.11"),
    }
    assert len(names) == 3
    assert environments.template_name((3, 11), "/usr/bin/python3.11").startswith("template-py3.11-")


def test_a_template_folder_others_can_write_is_refused(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o777)
    shared.chmod(0o777)
    with pytest.raises(environments.EnvironmentUnavailable, match="not private"):
        environments.ensure_template(shared)
    assert list(shared.iterdir()) == []


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


DAY = 24 * 3600.0
NOW = 1_000_000_000.0


@pytest.fixture
def pypi() -> None:
    """Skip unless PyPI answers: these tests install with the real uv."""
    try:
        socket.create_connection(("pypi.org", 443), timeout=5).close()
    except OSError as exc:
        pytest.skip(f"PyPI is unreachable ({exc}), and uv installs from it")


def fake_env(root: Path, name: str, used: float | None = None, *, ready: bool = True) -> Path:
    """A directory that passes for a built environment, last used at ``used``."""
    env = root / name
    env.mkdir(parents=True)
    if ready:
        (env / environments.READY).touch()
    if used is not None:
        environments.mark_used(env)
        os.utime(env / environments.USED, (used, used))
    return env


@pytest.mark.parametrize(
    ("envs", "in_use", "expected"),
    [
        pytest.param([], set(), [], id="nothing to collect"),
        pytest.param([("a", NOW - 200)], set(), ["a"], id="unused for longer than max age"),
        pytest.param([("a", NOW - 100)], set(), ["a"], id="unused for exactly max age"),
        pytest.param([("a", NOW - 99.5)], set(), [], id="just younger than max age"),
        pytest.param([("a", NOW + 50)], set(), [], id="used after now (clock skew)"),
        pytest.param([("a", NOW - 200)], {"a"}, [], id="old but in use"),
        pytest.param(
            [("a", NOW - 300), ("b", NOW - 1), ("c", NOW - 200), ("d", NOW - 500)],
            {"d"},
            ["a", "c"],
            id="a mix keeps its order",
        ),
    ],
)
def test_which_inline_envs_to_collect(
    envs: list[tuple[str, float]], in_use: set[str], expected: list[str]
) -> None:
    assert environments.envs_to_collect(envs, in_use, NOW, 100.0) == expected


def test_inline_envs_are_the_ready_dirs_that_are_not_templates_or_the_pool(
    tmp_path: Path,
) -> None:
    fake_env(tmp_path, "bbb")
    fake_env(tmp_path, "aaa")
    fake_env(tmp_path, "half-built", ready=False)
    fake_env(tmp_path, environments.template_name())
    fake_env(tmp_path, "template-py3.99")
    fake_env(tmp_path, environments.POOL)
    (tmp_path / ".aaa.lock").touch()

    assert environments.inline_envs(tmp_path) == [tmp_path / "aaa", tmp_path / "bbb"]
    assert environments.inline_envs(tmp_path / "nowhere") == []


def test_last_used_falls_back_to_ready_then_to_the_dir(tmp_path: Path) -> None:
    used = fake_env(tmp_path, "used", NOW)
    ready = fake_env(tmp_path, "ready")
    os.utime(ready / environments.READY, (NOW - 5, NOW - 5))
    bare = fake_env(tmp_path, "bare", ready=False)
    os.utime(bare, (NOW - 9, NOW - 9))

    assert environments.last_used(used) == NOW
    assert environments.last_used(ready) == NOW - 5
    assert environments.last_used(bare) == NOW - 9


def test_collecting_removes_only_old_unused_inline_envs(tmp_path: Path) -> None:
    long_ago = NOW - 40 * DAY
    fake_env(tmp_path, "old", long_ago)
    fake_env(tmp_path, "old-but-open", long_ago)
    fake_env(tmp_path, "recent", NOW - DAY)
    fake_env(tmp_path, "half-built", long_ago, ready=False)
    for kept in (environments.template_name(), environments.POOL):
        os.utime(fake_env(tmp_path, kept) / environments.READY, (long_ago, long_ago))

    removed = environments.collect_envs(tmp_path, {"old-but-open"}, NOW, environments.UNUSED_FOR)

    assert removed == [tmp_path / "old"]
    left = sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith("."))
    expected = [environments.POOL, "half-built", "old-but-open", "recent"]
    assert left == sorted([*expected, environments.template_name()])
    assert environments.collect_envs(tmp_path, set(), NOW, environments.UNUSED_FOR) == [
        tmp_path / "old-but-open"
    ]


def test_collecting_removes_under_the_build_lock_and_spares_an_env_used_meanwhile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_env(tmp_path, "gone", NOW - 40 * DAY)
    spared = fake_env(tmp_path, "spared", NOW - 40 * DAY)
    choose = environments.envs_to_collect

    def chosen_then_used(*args: Any) -> list[str]:
        chosen = choose(*args)
        environments.mark_used(spared)
        return chosen

    lock_held_at_removal: list[bool] = []
    remove = environments.remove_env

    def remove_checking_the_lock(env: Path) -> None:
        with open(tmp_path / f".{env.name}.lock", "w") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                lock_held_at_removal.append(True)
            else:
                lock_held_at_removal.append(False)
        remove(env)

    monkeypatch.setattr(environments, "envs_to_collect", chosen_then_used)
    monkeypatch.setattr(environments, "remove_env", remove_checking_the_lock)

    removed = environments.collect_envs(tmp_path, set(), time.time(), environments.UNUSED_FOR)

    assert removed == [tmp_path / "gone"]
    assert lock_held_at_removal == [True]
    assert (spared / environments.READY).exists()


def test_an_inline_env_is_described_with_its_fingerprint_and_last_use(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(environments.ENVS_DIR_ENV, raising=False)
    state = tmp_path / "state"
    env = fake_env(environments.envs_dir(state), "f00d", NOW - DAY)
    (env / "payload").write_bytes(b"x" * 1000)
    pool = fake_env(environments.pool_dir(state), "k1", ready=False)

    rows = {row["path"]: row for row in environments.describe_envs(state)}

    assert rows[str(env)] == {
        "kind": "inline",
        "path": str(env),
        "bytes": 1000,
        "changed": env.stat().st_mtime,
        "last_used": NOW - DAY,
        "fingerprint": "f00d",
    }
    assert rows[str(pool)]["kind"] == "pool"
    assert rows[str(pool)]["last_used"] == pool.stat().st_mtime
    assert "fingerprint" not in rows[str(pool)]


def test_a_ready_inline_env_is_returned_without_uv_and_marked_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_uv() -> str:
        raise AssertionError("uv was called for a ready environment")

    monkeypatch.setattr(environments, "_uv", no_uv)
    env = fake_env(tmp_path, "cafe", NOW - 40 * DAY)

    assert environments.ensure_inline_env(tmp_path, "cafe", ["six"]) == (env, False)
    assert environments.last_used(env) > NOW


@pytest.mark.parametrize("fingerprint", ["", ".hidden", "a/b", "..", "pool", "template-py3.11"])
def test_a_fingerprint_must_name_an_inline_env_dir(tmp_path: Path, fingerprint: str) -> None:
    with pytest.raises(ValueError, match="fingerprint"):
        environments.ensure_inline_env(tmp_path, fingerprint, [])


def test_concurrent_askers_share_one_build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The second asker reaches the lock while the first builds, waits, and finds it ready."""
    at_the_lock = threading.Semaphore(0)
    flock = fcntl.flock

    def counted_flock(fd: IO[str], operation: int) -> None:
        at_the_lock.release()
        flock(fd, operation)

    builds: list[list[str]] = []

    def fake_uv_run(command: Sequence[str], on_line: object = None, *, cwd: Path) -> None:
        assert cwd == tmp_path
        if command[1] == "venv":
            assert at_the_lock.acquire(timeout=30), "the other asker never reached the lock"
            assert at_the_lock.acquire(timeout=30), "the other asker never reached the lock"
            Path(command[-1]).mkdir()
        builds.append(list(command))

    monkeypatch.setattr(environments, "_uv", lambda: "uv")
    monkeypatch.setattr(environments, "_run", fake_uv_run)
    monkeypatch.setattr(environments.fcntl, "flock", counted_flock)
    start = threading.Barrier(2)
    results: list[tuple[Path, bool]] = []

    def ask() -> None:
        start.wait(timeout=30)
        results.append(environments.ensure_inline_env(tmp_path, "beef", ["six"]))

    askers = [threading.Thread(target=ask) for _ in range(2)]
    for asker in askers:
        asker.start()
    for asker in askers:
        asker.join(timeout=60)

    assert sorted(built for _, built in results) == [False, True]
    assert {env for env, _ in results} == {tmp_path / "beef"}
    assert [command[1] for command in builds] == ["venv", "pip"]
    assert (tmp_path / "beef" / environments.READY).exists()


def test_a_failed_inline_build_leaves_nothing_and_says_why(tmp_path: Path, pypi: None) -> None:
    missing = f"nbstage-no-such-package-{secrets.token_hex(4)}"
    lines: list[str] = []
    with pytest.raises(environments.EnvironmentUnavailable, match=missing) as failed:
        environments.ensure_inline_env(tmp_path, "dead", [missing], lines.append)
    assert "not found" in str(failed.value)
    assert not (tmp_path / "dead").exists()
    assert environments.inline_envs(tmp_path) == []
    assert any(missing in line for line in lines)


def test_installing_into_and_uninstalling_from_an_env(tmp_path: Path, pypi: None) -> None:
    env = tmp_path / "plain"
    subprocess.run([environments._uv(), "venv", "--quiet", str(env)], check=True)
    probe = [environments.env_python(env), "-c", "import six"]
    lines: list[str] = []

    environments.install_into(env, ["six"], lines.append)
    assert subprocess.run(probe, capture_output=True).returncode == 0
    assert any("six" in line for line in lines)

    environments.uninstall_from(env, ["six", f"nbstage-not-installed-{secrets.token_hex(4)}"])
    assert subprocess.run(probe, capture_output=True).returncode != 0
    environments.uninstall_from(env, ["six"])

    missing = f"nbstage-no-such-package-{secrets.token_hex(4)}"
    with pytest.raises(environments.EnvironmentUnavailable, match=missing):
        environments.install_into(env, [missing])


def test_a_project_runs_through_uv_with_ipykernel_layered_on(tmp_path: Path) -> None:
    argv = environments.project_argv(tmp_path / "proj", tmp_path / "launch.py")
    assert argv == [
        environments._uv(),
        "run",
        "--frozen",
        "--no-config",
        "--project",
        str(tmp_path / "proj"),
        "--with",
        "ipykernel",
        "python",
        str(tmp_path / "launch.py"),
    ]


def test_the_slow_index_is_slow_and_serves_an_installable_wheel(tmp_path: Path, pypi: None) -> None:
    seconds = 2.0
    name = f"nbstage-slow-{secrets.token_hex(6)}"
    uv = environments._uv()
    env = tmp_path / "venv"
    subprocess.run([uv, "venv", "--quiet", str(env)], check=True)
    python = str(environments.env_python(env))

    with slow_index(tmp_path / "index", name, seconds) as url:
        started = time.monotonic()
        installed = subprocess.run(
            [uv, "pip", "install", "--python", python, name, "six"],
            env={**os.environ, "UV_INDEX": url},
            capture_output=True,
            text=True,
        )
        took = time.monotonic() - started

    assert installed.returncode == 0, installed.stderr
    assert took >= seconds * 0.9
    module = name.replace("-", "_")
    probe = [python, "-c", f"import {module}, six; print({module}.VALUE)"]
    assert subprocess.run(probe, capture_output=True, text=True, check=True).stdout == "1\n"


def test_the_daemon_start_removes_stale_pool_envs_and_long_unused_inline_envs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(environments.ENVS_DIR_ENV, raising=False)
    monkeypatch.setenv(environments.TEMPLATE_DIR_ENV, str(tmp_path / "templates"))
    state = tmp_path / "state"
    root = environments.envs_dir(state)
    template = fake_env(tmp_path / "templates", environments.template_name())
    stale = fake_env(environments.pool_dir(state), "k1", ready=False)
    long_ago = time.time() - environments.UNUSED_FOR - DAY
    old = fake_env(root, "old", long_ago)
    recent = fake_env(root, "recent", time.time() - DAY)

    environments.prepare_envs(state, [stale])

    assert not stale.exists()
    assert not old.exists()
    assert recent.exists()
    assert (template / environments.READY).exists()
