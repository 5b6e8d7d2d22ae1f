"""How nbstage starts a Python process of its own modules."""

from __future__ import annotations

import sys


def module_command(module: str) -> list[str]:
    """``python -P -m module``, with the interpreter's own isolation flags carried over.

    nbstage's processes start in the user's project folder (the MCP client's working
    directory), and ``-m`` alone would put that folder first on ``sys.path``, where a
    ``random.py`` or a ``signal.py`` would stand in for the standard module; ``-P`` keeps
    it off. A client that started nbstage with ``-I``, ``-E`` or ``-s`` (to keep
    ``PYTHONPATH`` or the user's site-packages out) gets the same in every process
    nbstage starts."""
    return [sys.executable, *isolation_flags(sys.flags), "-P", "-m", module]


def isolation_flags(flags: object) -> list[str]:
    """The flags of ``sys.flags`` that decide where imports come from, as options."""
    if getattr(flags, "isolated", 0):
        return ["-I"]
    chosen = []
    if getattr(flags, "ignore_environment", 0):
        chosen.append("-E")
    if getattr(flags, "no_user_site", 0):
        chosen.append("-s")
    return chosen
