"""nbstage's modules import one another as a tree (a graph without cycles).

The graph is read from the sources, not from a running import: every module of
nbstage.actors, .protocol and .entrypoints, and the imports its body runs when it is
loaded (those under ``if``, ``try`` and ``with`` too, not those under ``if TYPE_CHECKING``
nor inside functions, which run later or never). A cycle there means two modules that
each need the other loaded first: the shared piece belongs elsewhere, or one should be
handed what it needs.
"""

from __future__ import annotations

import ast
import importlib.util
import pkgutil
from collections.abc import Container, Iterator
from pathlib import Path

import pytest

import nbstage.actors
import nbstage.entrypoints
import nbstage.protocol

PACKAGES = (nbstage.actors, nbstage.entrypoints, nbstage.protocol)

# Cycles there are today, each as the sorted modules of one strongly connected component,
# with where it is tracked. None: the last two (proxy/call_forwarding.py with
# proxy/child_restarts.py, session/daemon_upkeep.py with session/session_decisions.py)
# were broken by moving the piece both used onto the actor they act through.
KNOWN_CYCLES: set[tuple[str, ...]] = set()


def _sources() -> dict[str, Path]:
    """Each module's name and its file (a package's is its __init__.py)."""
    found = {}
    for package in PACKAGES:
        assert package.__file__ is not None
        found[package.__name__] = Path(package.__file__)
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            spec = importlib.util.find_spec(info.name)
            assert spec is not None, info.name
            assert spec.origin is not None, info.name
            found[info.name] = Path(spec.origin)
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _load_time_imports(body: list[ast.stmt]) -> Iterator[ast.Import | ast.ImportFrom]:
    for node in body:
        match node:
            case ast.Import() | ast.ImportFrom():
                yield node
            case ast.If(test=test, body=then, orelse=orelse):
                if not _is_type_checking(test):
                    yield from _load_time_imports(then)
                yield from _load_time_imports(orelse)
            case ast.Try(body=tried, handlers=handlers, orelse=orelse, finalbody=final):
                for block in (tried, orelse, final, *(h.body for h in handlers)):
                    yield from _load_time_imports(block)
            case ast.With(body=inner):
                yield from _load_time_imports(inner)


def _imported(node: ast.Import | ast.ImportFrom, package: str, modules: Container[str]) -> set[str]:
    """The dotted names an import statement loads: ``from a import b`` loads a.b where b
    is a module, else a itself."""
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names}
    base = node.module or ""
    if node.level:
        parts = package.split(".")
        parent = ".".join(parts[: len(parts) - node.level + 1])
        base = f"{parent}.{base}" if base else parent
    full = (f"{base}.{alias.name}" for alias in node.names)
    return {name if name in modules else base for name in full}


def import_graph() -> dict[str, set[str]]:
    sources = _sources()
    graph: dict[str, set[str]] = {}
    for name, path in sources.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges: set[str] = set()
        for node in _load_time_imports(ast.parse(path.read_text(), str(path)).body):
            edges |= _imported(node, package, sources)
        graph[name] = {target for target in edges if target in sources and target != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> set[tuple[str, ...]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: set[tuple[str, ...]] = set()

    def visit(node: str) -> None:
        order[node] = low[node] = len(order)
        stack.append(node)
        for target in sorted(graph.get(node, ())):
            if target not in order:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], order[target])
        if low[node] == order[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.add(tuple(sorted(component)))

    for node in sorted(graph):
        if node not in order:
            visit(node)
    return found


GRAPH = import_graph()


def test_no_new_import_cycle() -> None:
    assert cycles(GRAPH) - KNOWN_CYCLES == set()


def test_no_known_cycle_is_gone_unnoticed() -> None:
    assert KNOWN_CYCLES - cycles(GRAPH) == set(), "a known cycle was broken: drop it above"


def test_the_graph_holds_every_kind_of_import() -> None:
    supervisor = GRAPH["nbstage.actors.proxy.supervisor"]
    assert "nbstage.actors.proxy.call_forwarding" in supervisor  # from package import module
    assert "nbstage.actors.proxy.tool_calls" in supervisor  # from module import name
    assert "nbstage.protocol.mcp.jsonrpc" in supervisor
    assert len(GRAPH) > 200


@pytest.mark.parametrize(
    ("graph", "expected"),
    [
        ({"a": {"b"}, "b": {"c"}, "c": set()}, set()),
        ({"a": {"b"}, "b": {"a"}}, {("a", "b")}),
        ({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}, {("a", "b", "c")}),
        ({"a": {"b", "c"}, "b": {"d"}, "c": {"d"}, "d": set()}, set()),
        ({"a": {"b"}, "b": {"a"}, "c": {"d"}, "d": {"c"}}, {("a", "b"), ("c", "d")}),
    ],
)
def test_cycles_are_found(graph: dict[str, set[str]], expected: set[tuple[str, ...]]) -> None:
    assert cycles(graph) == expected


def test_imports_inside_functions_and_type_checking_do_not_count() -> None:
    source = """
import os
from typing import TYPE_CHECKING
if TYPE_CHECKING:
    import hidden
try:
    import tried
except ImportError:
    import fallback
def later():
    import inside
"""
    found = {
        alias.name for node in _load_time_imports(ast.parse(source).body) for alias in node.names
    }
    assert found == {"os", "TYPE_CHECKING", "tried", "fallback"}


def test_relative_imports_resolve_against_the_package() -> None:
    node = ast.parse("from ..common import effects").body[0]
    assert isinstance(node, ast.ImportFrom)
    package = "nbstage.actors.daemon"
    assert _imported(node, package, {"nbstage.actors.common.effects"}) == {
        "nbstage.actors.common.effects"
    }
    assert _imported(node, package, set()) == {"nbstage.actors.common"}
