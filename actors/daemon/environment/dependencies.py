"""A notebook's inline dependencies, and where its kernel's environment comes from (pure).

The dependencies are upstream's key, ``metadata.runt.uv.dependencies``: a list of PEP 508
requirement strings. A set is named by its *fingerprint*, a hash of the normalised set and
the Python version, so notebooks asking for the same set share one environment
(``actors/daemon/environment/environments.py`` builds it). Nothing here touches a file.
"""

from __future__ import annotations

import copy
import hashlib
import sys
from collections.abc import Collection, Iterable, Sequence
from typing import Any

import orjson
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from nbstage.protocol.common.errors import ErrorCode, NbstageError
from nbstage.protocol.common.words import plural
from nbstage.protocol.daemon.dependency_modes import DependencyEdit, DependencyPlan, Removal
from nbstage.protocol.daemon.notices import Notice, NoticeKind
from nbstage.protocol.daemon_actors.kernel_facts import EnvSource
from nbstage.protocol.daemon_actors.kernels import EnvironmentWanted

__all__ = ["DependencyEdit", "DependencyPlan", "EnvSource", "Removal"]

MAX_REQUIREMENTS = 200
MAX_REQUIREMENT_CHARS = 1000


def read_dependencies(metadata: object) -> tuple[str, ...]:
    """The notebook's requirement strings, in order; a malformed entry reads as none."""
    runt = metadata.get("runt") if isinstance(metadata, dict) else None
    uv = runt.get("uv") if isinstance(runt, dict) else None
    deps = uv.get("dependencies") if isinstance(uv, dict) else None
    if not isinstance(deps, list):
        return ()
    return tuple(d for d in deps if isinstance(d, str))


def with_dependencies(metadata: dict[str, Any], deps: Sequence[str]) -> dict[str, Any]:
    """A copy of ``metadata`` whose inline dependencies are ``deps``; the rest is kept."""
    fresh = dict(metadata)
    given = fresh.get("runt")
    runt: dict[str, Any] = copy.deepcopy(given) if isinstance(given, dict) else {}
    given = runt.get("uv")
    uv: dict[str, Any] = given if isinstance(given, dict) else {}
    runt["uv"] = {**uv, "dependencies": list(deps)}
    fresh["runt"] = runt
    return fresh


def requirement_problem(text: object) -> str | None:
    """Why ``text`` is not a PEP 508 requirement, or None when it is one."""
    if not isinstance(text, str):
        return f"{text!r} is not a string"
    if len(text) > MAX_REQUIREMENT_CHARS:
        return f"a requirement is over {MAX_REQUIREMENT_CHARS} characters"
    try:
        Requirement(text)
    except InvalidRequirement as exc:
        return f"{text!r} is not a PEP 508 requirement: {exc}"
    return None


def requirement_name(text: str) -> str:
    try:
        return canonicalize_name(Requirement(text).name)
    except InvalidRequirement:
        return text.strip().lower()


def normalise(text: str) -> str:
    """One spelling per requirement: canonical name, sorted extras and specifiers. A
    string that is not a requirement (a hand-edited file) stays as it is, stripped."""
    try:
        req = Requirement(text)
    except InvalidRequirement:
        return text.strip()
    out: str = canonicalize_name(req.name)
    if req.extras:
        out += "[" + ",".join(sorted(canonicalize_name(e) for e in req.extras)) + "]"
    if req.url:
        out += f" @ {req.url}"
    elif req.specifier:
        out += ",".join(sorted(str(s) for s in req.specifier))
    if req.marker is not None:
        out += f" ; {req.marker}"
    return out


def normalised_set(deps: Iterable[str]) -> tuple[str, ...]:
    return tuple(sorted({normalise(d) for d in deps}))


def fingerprint(deps: Iterable[str], python: tuple[int, int] = sys.version_info[:2]) -> str:
    """The name of the environment for ``deps``: equal for any order, case or repeat. The
    hash is of a JSON list, so no joining of strings can make two sets collide."""
    canonical = orjson.dumps([f"python {python[0]}.{python[1]}", *normalised_set(deps)])
    return hashlib.sha256(canonical).hexdigest()


def edit_dependencies(
    current: Sequence[str], add: Sequence[str], remove: Sequence[str]
) -> DependencyEdit:
    """Remove by package name, then add: a requirement for a package already listed
    replaces that entry where it stands. Every string must be valid already."""
    after = list(current)
    removed: list[str] = []
    not_found: list[str] = []
    for text in remove:
        name = requirement_name(text)
        hits = [d for d in after if requirement_name(d) == name]
        if not hits:
            not_found.append(text)
        removed += hits
        after = [d for d in after if requirement_name(d) != name]
    added: list[str] = []
    for text in add:
        name = requirement_name(text)
        at = next((i for i, d in enumerate(after) if requirement_name(d) == name), None)
        if at is None:
            after.append(text)
            added.append(text)
        elif normalise(after[at]) != normalise(text):
            after[at] = text
            added.append(text)
    removal = Removal(tuple(remove), tuple(removed), tuple(not_found))
    return DependencyEdit(tuple(current), tuple(after), tuple(added), removal)


def wanted_environment(
    deps: Sequence[str], trusted: Collection[str], search_from: str | None
) -> EnvironmentWanted:
    """Inline dependencies once trusted; an untrusted set runs in the pool, never in a
    project's environment; with none, a project found from ``search_from`` if approved
    (its fingerprint among ``trusted``, actors/daemon/environment/projects.py), else the pool."""
    if not deps:
        return EnvironmentWanted(search_from=search_from, trusted_projects=tuple(sorted(trusted)))
    fp = fingerprint(deps)
    if fp in trusted:
        return EnvironmentWanted(normalised_set(deps), fp)
    return EnvironmentWanted()


def plan_change(
    current: Sequence[str],
    trusted: Collection[str],
    add: Sequence[str],
    remove: Sequence[str],
    trust: bool,
    expected: str | None,
) -> DependencyPlan:
    """What a manage_dependencies call does, or NbstageError if it must change nothing."""
    checked = [*add, *remove, *(current if trust else ())]
    problems = [p for p in map(requirement_problem, checked) if p is not None]
    if problems:
        raise NbstageError(
            ErrorCode.BAD_REQUIREMENT, "Nothing was changed: " + "; ".join(problems) + "."
        )
    before_fp = fingerprint(current)
    if expected is not None and expected != before_fp:
        raise NbstageError(
            ErrorCode.DEPENDENCIES_CHANGED,
            f"Dependencies changed since review: their fingerprint is now {before_fp}, not "
            f"{expected}. Read them again with manage_dependencies() and retry.",
        )
    edit = edit_dependencies(current, add, remove)
    after_fp = fingerprint(edit.after)
    from_trusted = not current or before_fp in trusted
    trusted_after = trust or after_fp in trusted or (from_trusted and edit.after != edit.before)
    return DependencyPlan(edit, before_fp, after_fp, trusted_after, trust)


TRUST_CALL = "manage_dependencies(trust=true)"


def approval_line(deps: Sequence[str]) -> Notice:
    asks = f"this notebook asks for {plural(len(deps), 'package')} ({', '.join(deps)})"
    return Notice(
        NoticeKind.APPROVAL_NEEDED,
        f"{asks}; approve with {TRUST_CALL}",
        TRUST_CALL,
    )


def trust_state(deps: Sequence[str], trusted: bool) -> dict[str, object]:
    status = "none" if not deps else "trusted" if trusted else "untrusted"
    return {"status": status, "needs_approval": status == "untrusted"}
