"""The Room's parts (actors/room/): plain classes with no thespian in them, and the
once-only keys as a table."""

from __future__ import annotations

import ast
import pkgutil
from pathlib import Path

import pytest

import nbstage.actors.room
from nbstage.actors.room.once import OnceKeys
from nbstage.protocol.edge import Origin

ACTOR_MODULES = {"actor"}


def _imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module is not None:
            names.add(node.module)
    return names


def _part_modules() -> list[pkgutil.ModuleInfo]:
    found = list(pkgutil.walk_packages(nbstage.actors.room.__path__))
    return [info for info in found if info.name not in ACTOR_MODULES]


def test_the_room_has_parts_besides_its_actor() -> None:
    assert len(_part_modules()) >= 3


@pytest.mark.parametrize("info", _part_modules(), ids=lambda info: info.name)
def test_no_part_of_the_room_imports_thespian(info: pkgutil.ModuleInfo) -> None:
    """Only the Room actor sends, offloads and arms timers; a part returns actions."""
    if info.name == "__init__":
        return
    path = Path(info.module_finder.path) / f"{info.name}.py"
    thespian = {name for name in _imports(path) if name.split(".")[0] == "thespian"}
    assert thespian == set(), f"{info.name} imports {sorted(thespian)}"


def test_the_package_init_imports_no_thespian_of_its_own() -> None:
    init = Path(nbstage.actors.room.__file__)
    assert not any(name.startswith("thespian") for name in _imports(init))


def origin(n: int) -> Origin:
    return Origin(conn=1, request_id=n)


@pytest.mark.parametrize(
    ("steps", "known", "waiting"),
    [
        # begin, then a repeat waits; the answer reaches both and is remembered
        ([("begin", 1), ("repeat", 2), ("answer", 1)], True, [2]),
        # a refusal reaches the repeats and is not remembered
        ([("begin", 1), ("repeat", 2), ("fail", 1)], False, [2]),
        # nothing under way: a repeat does not wait
        ([("repeat", 2)], False, []),
    ],
)
def test_once_only_keys(steps: list, known: bool, waiting: list[int]) -> None:
    once, reached = OnceKeys(), []
    for step, n in steps:
        match step:
            case "begin":
                once.begin("k", origin(n))
            case "repeat":
                once.wait_if_under_way("k", origin(n))
            case "answer":
                reached = once.answered(origin(n), "reply")
            case "fail":
                reached = once.failed(origin(n))
    assert once.known("k") is known
    assert reached == [origin(n) for n in waiting]


def test_the_memo_forgets_its_oldest_keys_first() -> None:
    once = OnceKeys(size=2)
    for key in ("a", "b", "c"):
        once.remember(key, key)
    assert [once.known(k) for k in ("a", "b", "c")] == [False, True, True]
