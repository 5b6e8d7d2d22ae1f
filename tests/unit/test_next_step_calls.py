"""Every error text that tells the agent what to do next names the call to make, with its
arguments, as ``Reconnect with: connect_notebook(notebook_id="…")`` does: an agent acts
on a call, not on a paraphrase of one.

The check reads the product's string literals (f-strings with their fields as ``{}``, or
as the module's string constant a field names),
finds each next-step phrase, and requires a tool call, ``name(``, after it in the same
text. "Try again" asks for the same call once more, so it names none. Tool descriptions
(protocol/mcp/tools.py) say what a tool does, not what to do after an error.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

from nbstage.protocol.mcp.tools import TOOLS_BY_NAME

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ("actors", "entrypoints", "protocol")
DESCRIPTIONS = ROOT / "protocol" / "mcp" / "tools.py"
TOOLS = "|".join(sorted({*TOOLS_BY_NAME, "reconnect"}, key=len, reverse=True))

NEXT_STEP = re.compile(
    r"run (?:the cell|it) again"
    r"|\b[Aa]pprove (?:with|them|it|the)\b"
    r"|\b[Rr]econnect with\b"
    rf"|\b(?:use|call|with) (?:{TOOLS})\b"
    r"|\b(?:add|use) (?:trust|apply)="
)
CALL = re.compile(rf"\b(?:{TOOLS})\(")


def texts(source: str) -> Iterator[tuple[int, str]]:
    """The module's sentences: string literals that are not docstrings or parts of an
    f-string, and f-strings with ``{}`` for each field."""
    tree = ast.parse(source)
    named = {
        target.id: node.value.value
        for node in tree.body
        if isinstance(node, ast.Assign)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
        for target in node.targets
        if isinstance(target, ast.Name)
    }

    def field(part: ast.expr) -> str:
        if isinstance(part, ast.Constant):
            return str(part.value)
        inner = part.value if isinstance(part, ast.FormattedValue) else part
        return named.get(inner.id, "{}") if isinstance(inner, ast.Name) else "{}"

    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            skip.add(id(node.value))
        if isinstance(node, ast.JoinedStr):
            skip.update(id(part) for part in node.values)
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            yield node.lineno, "".join(field(part) for part in node.values)
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in skip
            and " " in node.value
        ):
            yield node.lineno, node.value


def steps_without_a_call(source: str) -> list[str]:
    found = []
    for line, text in texts(source):
        for step in NEXT_STEP.finditer(text):
            if not CALL.search(text, step.start()):
                found.append(f"{line}: {step.group(0)!r} in {text[:120]!r}")
    return found


def test_the_check_finds_a_next_step_without_its_call() -> None:
    bad = 'raise NbstageError(CODE, f"lost at {when}; run the cell again")\n'
    good = (
        "raise NbstageError(CODE, f'lost; run the cell again with execute_cell(cell_id=\"{c}\")')\n"
    )
    assert len(steps_without_a_call(bad)) == 1
    assert steps_without_a_call(good) == []
    assert steps_without_a_call('x = "Approve with trust=true."\n') != []


def test_every_next_step_in_the_product_names_its_call() -> None:
    missing = [
        f"{path.relative_to(ROOT)}:{found}"
        for folder in PRODUCT
        for path in sorted((ROOT / folder).rglob("*.py"))
        if path != DESCRIPTIONS
        for found in steps_without_a_call(path.read_text())
    ]
    assert missing == []
