"""Actors sit under the edges: no module of actors/ imports an entrypoint, at its top or
inside a function. A process's own helpers in entrypoints/common (state dir, the Lab's
start) are the one shared place they may use."""

from __future__ import annotations

import ast
from pathlib import Path

import nbstage.actors

ALLOWED = "nbstage.entrypoints.common."


def imported(tree: ast.AST) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names |= {node.module, *(f"{node.module}.{alias.name}" for alias in node.names)}
    return names


def test_imported_sees_imports_inside_functions() -> None:
    tree = ast.parse("def f():\n    from nbstage.entrypoints.lab.launch import run\n")
    assert "nbstage.entrypoints.lab.launch" in imported(tree)


def test_no_actor_module_imports_an_entrypoint() -> None:
    root = Path(nbstage.actors.__file__).parent
    offenders = {
        f"{path.relative_to(root)}: {name}"
        for path in root.rglob("*.py")
        for name in imported(ast.parse(path.read_text()))
        if name.startswith("nbstage.entrypoints") and not name.startswith(ALLOWED)
    }
    assert offenders == set()
