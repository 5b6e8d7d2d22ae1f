"""Which project, if any, a kernel may run in, and whether it was approved.

A notebook with no inline dependencies may run in the environment of the project around
it: the nearest folder up whose ``pyproject.toml`` has a ``[project]`` table. ``uv run``
then syncs that project, which runs its build backend and its ``.venv/bin/python``, so a
project is used only once approved for the notebook's path, by its *fingerprint* (the
folder and hashes of ``pyproject.toml`` and ``uv.lock``); a changed file needs approval
again. The walk trusts only what no one else can have written, as git's
``safe.directory`` does: it stops before a folder another user owns or others (group or
world) may write to, and it refuses a project whose ``pyproject.toml``, ``uv.lock`` or
``.venv`` is another user's or writable by others. Only ``find_project`` and
``project_fingerprint`` touch files.
"""

from __future__ import annotations

import grp
import hashlib
import os
import pwd
import stat
import tomllib
from collections.abc import Collection
from pathlib import Path
from typing import Any

import orjson

from nbstage.protocol.common.frozen import frozen
from nbstage.protocol.common.safe_files import SMALL_FILE_BYTES, read_regular
from nbstage.protocol.daemon.notices import Notice, NoticeKind
from nbstage.protocol.daemon_actors.kernel_facts import EnvironmentView, EnvSource

APPROVE_CALL = 'manage_dependencies(trust=true, apply="restart")'
"""The call that approves the project waiting for it and restarts the kernel into it."""

LOCK = "uv.lock"
_GUARDED = ("pyproject.toml", LOCK, ".venv", ".venv/bin", ".venv/bin/python")
"""What in a project's folder must be the user's (or root's) and closed to others."""


@frozen
class ProjectFound:
    folder: Path
    fingerprint: str


@frozen
class ProjectRefused:
    folder: Path
    reason: str


@frozen
class User:
    uid: int
    private_gid: int | None = None
    """The user's own group when no one else is in it (a user-private group, as with
    umask 002): its write bit lets no one else write."""


def current_user() -> User:
    """Blocking: it reads the user and group databases."""
    uid = os.geteuid()
    try:
        me = pwd.getpwuid(uid)
        group = grp.getgrgid(me.pw_gid)
        sharing = any(p.pw_gid == me.pw_gid and p.pw_uid != uid for p in pwd.getpwall())
    except KeyError:
        return User(uid)
    private = group.gr_name == me.pw_name and set(group.gr_mem) <= {me.pw_name}
    return User(uid, me.pw_gid if private and not sharing else None)


def owner_problem(uid: int, gid: int, mode: int, user: User) -> str | None:
    """Why a file or folder with this owner, group and mode may hold what others wrote,
    or None when only ``user`` (or root) can have written it."""
    if uid not in (user.uid, 0):
        return f"belongs to another user (uid {uid})"
    if mode & stat.S_IWOTH or (mode & stat.S_IWGRP and gid != user.private_gid):
        return "is writable by others"
    return None


def find_project(
    start: Path, home: Path, user: User | None = None
) -> ProjectFound | ProjectRefused | None:
    """The project around ``start``, refused with a reason if others could have written
    it; None when there is none. The walk looks in a folder with ``.git`` and stops there,
    and stops before the home folder and before any folder that is not safe."""
    user = current_user() if user is None else user
    start, home = start.resolve(), home.resolve()
    for folder in (start, *start.parents):
        if folder == home:
            return None
        try:
            info = folder.stat()
        except OSError:
            return None
        unsafe = owner_problem(info.st_uid, info.st_gid, info.st_mode, user)
        pyproject = folder / "pyproject.toml"
        if unsafe is not None:
            if pyproject.is_file():
                return ProjectRefused(folder, f"the folder {folder} {unsafe}")
            return None
        if _declares_project(pyproject):
            return _checked(folder, user)
        if (folder / ".git").exists():
            return None
    return None


def _bytes_of(path: Path) -> bytes:
    return read_regular(path, SMALL_FILE_BYTES)[0]


def read_pyproject(pyproject: Path) -> dict[str, Any] | None:
    """The tables of a ``pyproject.toml``; None when it is missing, not a regular file (a
    FIFO would block the walk), too large or not TOML."""
    try:
        return tomllib.loads(read_regular(pyproject, SMALL_FILE_BYTES)[0].decode("utf-8"))
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
        return None


def _declares_project(pyproject: Path) -> bool:
    """A ``[project]`` table: a file holding only tool settings is no environment."""
    return isinstance((read_pyproject(pyproject) or {}).get("project"), dict)


def _checked(folder: Path, user: User) -> ProjectFound | ProjectRefused:
    for name in _GUARDED:
        try:
            info = (folder / name).stat()
        except FileNotFoundError:
            continue
        except OSError as exc:
            return ProjectRefused(folder, f"{folder / name} could not be checked: {exc}")
        problem = owner_problem(info.st_uid, info.st_gid, info.st_mode, user)
        if problem is not None:
            return ProjectRefused(folder, f"{folder / name} {problem}")
    try:
        return ProjectFound(folder, project_fingerprint(folder))
    except OSError as exc:
        return ProjectRefused(folder, f"its files could not be read: {exc}")


def project_fingerprint(folder: Path) -> str:
    """The folder and the full hashes of ``pyproject.toml`` and ``uv.lock`` (None when it
    is missing), hashed as a JSON list."""
    pyproject = hashlib.sha256(_bytes_of(folder / "pyproject.toml")).hexdigest()
    try:
        lock: str | None = hashlib.sha256(_bytes_of(folder / LOCK)).hexdigest()
    except FileNotFoundError:
        lock = None
    return hashlib.sha256(orjson.dumps(["project", str(folder), pyproject, lock])).hexdigest()


def waiting_project(view: EnvironmentView | None) -> str | None:
    """The fingerprint of the project a pool kernel found but may not use until it is
    approved (``place_kernel`` reports it so); None otherwise."""
    if view is None or view.source is not EnvSource.POOL or view.project is None:
        return None
    return view.fingerprint


def placed_afresh(view: EnvironmentView | None) -> bool:
    """Whether a restart must start a new kernel, placed again, rather than relaunch the
    same command: a project's files may have changed (or been approved) since."""
    return view is not None and view.project is not None


def locked_fingerprint(view: EnvironmentView | None) -> str | None:
    """The fingerprint of the project a kernel runs in, as uv's lock left it."""
    if view is None or view.source is not EnvSource.PROJECT:
        return None
    return view.fingerprint


def approval_line(view: EnvironmentView | None, trusted: Collection[str]) -> Notice | None:
    """The standing notice while the project the pool kernel found is not approved."""
    waiting = waiting_project(view)
    if view is None or waiting is None or waiting in trusted:
        return None
    return Notice(
        NoticeKind.APPROVAL_NEEDED,
        f"this notebook is inside the project {view.project}, which is not approved, so its "
        "kernel runs in the pool; approve the project (its pyproject.toml and uv.lock as "
        f"they are now) with {APPROVE_CALL}",
        APPROVE_CALL,
    )


def approved_line(view: EnvironmentView) -> Notice:
    return Notice(
        NoticeKind.NOTE,
        f"the project at {view.project} is approved for this notebook; its kernel runs "
        'there from its next start (manage_dependencies(apply="restart") or '
        "restart_kernel())",
        "restart_kernel()",
    )


def refusal_line(view: EnvironmentView | None) -> Notice | None:
    """A project the walk refused: said once, when the kernel starts in the pool."""
    if (
        view is None
        or view.source is not EnvSource.POOL
        or view.project is None
        or view.fingerprint
    ):
        return None
    return Notice(NoticeKind.NOTE, f"the project at {view.project} was not used: {view.problem}")
