"""The project walk's ownership rules and the trust decision (actors/daemon/environment/projects.py,
actors/daemon/kernel/kernel_environment.py), as tables over real folders."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from nbstage.actors.daemon.environment import projects
from nbstage.actors.daemon.environment.projects import ProjectFound, ProjectRefused, find_project
from nbstage.actors.daemon.kernel import kernel_environment as environment
from nbstage.actors.daemon.kernel.kernel_environment import pool_view, project_around
from nbstage.protocol.daemon_actors.kernel_facts import EnvironmentView, EnvSource
from nbstage.protocol.daemon_actors.kernels import EnvironmentWanted

ME = os.geteuid()
OTHER = 54_321
"""A uid no one on the machine has: only root may give a file to it."""
as_root = pytest.mark.skipif(ME != 0, reason="giving a file to another user takes root")
PROJECT = '[project]\nname = "x"\nversion = "1"\n'
S = EnvSource


OWN_GROUP, SHARED_GROUP = 1001, 100


@pytest.mark.parametrize(
    ("uid", "gid", "mode", "problem"),
    [
        pytest.param(ME, SHARED_GROUP, 0o755, None, id="mine"),
        pytest.param(0, 0, 0o755, None, id="root's"),
        pytest.param(ME, SHARED_GROUP, 0o700, None, id="mine, private"),
        pytest.param(OTHER, SHARED_GROUP, 0o755, "belongs to another user", id="another's"),
        pytest.param(ME, SHARED_GROUP, 0o775, "writable by others", id="group-writable"),
        pytest.param(ME, OWN_GROUP, 0o775, None, id="group-writable, my own group"),
        pytest.param(0, OWN_GROUP, 0o775, None, id="root's, my own group may write"),
        pytest.param(ME, OWN_GROUP, 0o757, "writable by others", id="world-writable"),
        pytest.param(0, 0, 0o1777, "writable by others", id="like /tmp"),
        pytest.param(OTHER, OWN_GROUP, 0o777, "belongs to another user", id="both"),
    ],
)
def test_what_only_the_user_can_have_written(
    uid: int, gid: int, mode: int, problem: str | None
) -> None:
    found = projects.owner_problem(uid, gid, mode, projects.User(ME, OWN_GROUP))
    assert found is None if problem is None else problem in found


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """``home/repo/analysis/notebooks``, every folder mode 0755 whatever the umask."""
    home = tmp_path / "home"
    notebooks = home / "repo" / "analysis" / "notebooks"
    notebooks.mkdir(parents=True)
    for folder in (home, home / "repo", home / "repo" / "analysis", notebooks):
        folder.chmod(0o755)
    return home


def write(path: Path, text: str = PROJECT, mode: int = 0o644) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(mode)
    return path


def test_finding_a_project(tree: Path) -> None:
    repo, notebooks = tree / "repo", tree / "repo" / "analysis" / "notebooks"
    assert find_project(notebooks, tree) is None
    write(repo / "pyproject.toml", "[tool.ruff]\nline-length = 100\n")
    assert find_project(notebooks, tree) is None, "tool settings alone are no project"
    write(repo / "pyproject.toml")
    found = find_project(notebooks, tree)
    assert isinstance(found, ProjectFound)
    assert found.folder == repo
    (repo / "analysis" / ".git").mkdir()
    assert find_project(notebooks, tree) is None, "the walk stops at a .git folder"
    write(tree / "pyproject.toml", '[project]\nname = "h"\n')
    (tree / "other").mkdir(mode=0o755)
    assert find_project(tree / "other", tree) is None, "nor does it look in home"
    write(notebooks / "pyproject.toml", "[project\n")
    assert find_project(notebooks, tree) is None, "a file that does not parse is none"


@pytest.mark.parametrize(
    ("where", "mode", "owner", "outcome"),
    [
        pytest.param(None, None, None, "found", id="all the user's"),
        pytest.param("repo", 0o775, None, "writable by others", id="the project's folder g+w"),
        pytest.param("repo/analysis", 0o777, None, None, id="the walk stops below it"),
        pytest.param("repo/analysis", 0o1777, None, None, id="a /tmp-like folder below it"),
        pytest.param("repo/analysis/notebooks", 0o1777, None, None, id="the start is /tmp-like"),
        pytest.param("repo/pyproject.toml", 0o664, None, "writable by others", id="pyproject g+w"),
        pytest.param("repo/pyproject.toml", 0o646, None, "writable by others", id="pyproject o+w"),
        pytest.param("repo/uv.lock", 0o666, None, "uv.lock writable by others", id="lock o+w"),
        pytest.param("repo/.venv", 0o777, None, ".venv writable by others", id="venv o+w"),
        pytest.param(
            "repo/.venv/bin/python", 0o775, None, "python writable by others", id="python g+w"
        ),
        pytest.param("repo/analysis", None, OTHER, None, id="another user's folder below it"),
        pytest.param("repo", None, OTHER, "belongs to another user", id="another user's folder"),
        pytest.param(
            "repo/pyproject.toml", None, OTHER, "belongs to another user", id="their pyproject"
        ),
        pytest.param("repo/uv.lock", None, OTHER, "belongs to another user", id="their lock"),
        pytest.param(".venv/bin", None, OTHER, "found", id="not the project's .venv"),
        pytest.param(
            "repo/.venv/bin/python", None, OTHER, "belongs to another user", id="their python"
        ),
    ],
)
def test_the_walk_trusts_only_what_no_one_else_can_have_written(
    tree: Path, where: str | None, mode: int | None, owner: int | None, outcome: str | None
) -> None:
    """``outcome``: "found", None (the walk found nothing), or words of the refusal."""
    if owner is not None and ME != 0:
        pytest.skip("giving a file to another user takes root")
    repo = tree / "repo"
    write(repo / "pyproject.toml")
    write(repo / "uv.lock", "version = 1\n")
    write(repo / ".venv" / "bin" / "python", "#!/bin/sh\n", 0o755)
    for folder in (repo / ".venv", repo / ".venv" / "bin"):
        folder.chmod(0o755)
    if where is not None:
        target = tree / where
        if not target.exists():
            target.mkdir(parents=True)
        if mode is not None:
            target.chmod(mode)
        if owner is not None:
            os.chown(target, owner, -1)
    found = find_project(repo / "analysis" / "notebooks", tree, projects.User(ME))
    if outcome == "found":
        assert isinstance(found, ProjectFound)
        assert found.folder == repo
    elif outcome is None:
        assert found is None
    else:
        assert isinstance(found, ProjectRefused), found
        assert found.folder == repo
        assert outcome.split()[-1] in found.reason
        assert all(word in found.reason for word in outcome.split()), found.reason


def test_a_group_only_the_user_is_in_may_write(tree: Path) -> None:
    """Under umask 002 a clone is group-writable; with a user-private group, that is
    the user alone."""
    repo, notebooks = tree / "repo", tree / "repo" / "analysis" / "notebooks"
    write(repo / "pyproject.toml", mode=0o664)
    repo.chmod(0o775)
    own = projects.User(ME, repo.stat().st_gid)
    assert isinstance(find_project(notebooks, tree, own), ProjectFound)
    shared = projects.User(ME, None)
    assert isinstance(find_project(notebooks, tree, shared), ProjectRefused)


def test_a_project_in_a_folder_others_can_write_is_refused_not_read(tree: Path) -> None:
    shared = tree / "shared"
    write(shared / "pyproject.toml")
    shared.chmod(0o1777)
    (shared / "mine").mkdir(mode=0o755)
    found = find_project(shared / "mine", tree)
    assert isinstance(found, ProjectRefused)
    assert found.folder == shared
    assert "writable by others" in found.reason


@as_root
def test_another_users_pyproject_in_a_shared_folder_is_refused(tree: Path) -> None:
    shared = tree / "shared"
    os.chown(write(shared / "pyproject.toml"), OTHER, -1)
    shared.chmod(0o755)
    found = find_project(shared, tree)
    assert isinstance(found, ProjectRefused)
    assert "another user" in found.reason


def test_the_fingerprint_covers_the_folder_the_pyproject_and_the_lock(tree: Path) -> None:
    repo = tree / "repo"
    write(repo / "pyproject.toml")
    first = projects.project_fingerprint(repo)
    assert len(first) == 64
    assert first == projects.project_fingerprint(repo)
    write(repo / "uv.lock", "version = 1\n")
    locked = projects.project_fingerprint(repo)
    write(repo / "uv.lock", "version = 2\n")
    relocked = projects.project_fingerprint(repo)
    write(repo / "pyproject.toml", PROJECT + "# changed\n")
    edited = projects.project_fingerprint(repo)
    assert len({first, locked, relocked, edited}) == 4
    twin = tree / "twin"
    write(twin / "pyproject.toml", (repo / "pyproject.toml").read_text())
    write(twin / "uv.lock", "version = 2\n")
    assert projects.project_fingerprint(twin) != edited, "the same files elsewhere"


@pytest.mark.parametrize(
    ("project", "approved", "pool"),
    [
        pytest.param(False, False, EnvironmentView(S.POOL), id="no project: the pool"),
        pytest.param(True, True, None, id="approved: the project"),
        pytest.param(True, False, "waiting", id="not approved: the pool, naming it"),
        pytest.param(True, "stale", "waiting", id="approved before it changed: the pool"),
    ],
)
def test_the_trust_decision(
    tree: Path, project: bool, approved: bool | str, pool: EnvironmentView | str | None
) -> None:
    repo, notebooks = tree / "repo", tree / "repo" / "analysis" / "notebooks"
    if project:
        write(repo / "pyproject.toml")
    trusted = ()
    if approved:
        trusted = (projects.project_fingerprint(repo),)
    if approved == "stale":
        write(repo / "uv.lock", "version = 1\n")
    wanted = EnvironmentWanted(search_from=str(notebooks), trusted_projects=trusted)
    view = pool_view(wanted, project_around(wanted, tree))
    if pool == "waiting":
        now = projects.project_fingerprint(repo)
        expected = EnvironmentView(
            "pool", now, str(repo), problem=f"the project at {repo} is not approved"
        )
        assert view == expected
        line = projects.approval_line(view, trusted)
        assert line is not None
        assert str(repo) in line.message
        assert projects.APPROVE_CALL in line.message
        assert line.next_call == projects.APPROVE_CALL
        assert projects.approval_line(view, {now}) is None, "approved: the line goes"
    else:
        assert view == pool
    inline = EnvironmentWanted(("six",), "f1", str(notebooks))
    assert pool_view(inline, project_around(inline, tree)) is None


def test_an_inline_set_decides_without_a_walk(monkeypatch: pytest.MonkeyPatch) -> None:
    """The kernel's launch walks once, and not at all when its inline set decides."""
    walks: list[Path] = []
    monkeypatch.setattr(environment, "find_project", lambda start, home: walks.append(start))
    assert project_around(EnvironmentWanted(("six",), "f1", "/somewhere")) is None
    assert project_around(EnvironmentWanted(search_from=None)) is None
    assert walks == []
    project_around(EnvironmentWanted(search_from="/somewhere"))
    assert walks == [Path("/somewhere")]


@pytest.mark.parametrize(
    ("view", "waiting", "locked", "refused"),
    [
        pytest.param(None, None, None, False, id="no kernel yet"),
        pytest.param(EnvironmentView(S.POOL), None, None, False, id="the pool"),
        pytest.param(EnvironmentView(S.POOL, "f", "/p", problem="no"), "f", None, False, id="wait"),
        pytest.param(
            EnvironmentView(S.POOL, None, "/p", problem="no"),
            None,
            None,
            True,
            id="refused",
        ),
        pytest.param(EnvironmentView(S.PROJECT, "f", "/p"), None, "f", False, id="in the project"),
        pytest.param(EnvironmentView(S.INLINE, "f"), None, None, False, id="inline"),
    ],
)
def test_what_the_room_reads_from_a_view(
    view: EnvironmentView | None, waiting: str | None, locked: str | None, refused: bool
) -> None:
    assert projects.waiting_project(view) == waiting
    assert projects.locked_fingerprint(view) == locked
    assert (projects.refusal_line(view) is not None) is refused
    assert (projects.approval_line(view, ()) is not None) is (waiting is not None)
