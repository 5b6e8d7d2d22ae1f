"""How nbstage starts a Python process of its own modules."""

from __future__ import annotations

import sys


def module_command(module: str) -> list[str]:
    """``python -P -m module``. nbstage's processes start in the user's project folder (the
    MCP client's working directory), and ``-m`` alone would put that folder first on
    ``sys.path``, where a ``random.py`` or a ``signal.py`` would stand in for the standard
    module; ``-P`` keeps it off."""
    return [sys.executable, "-P", "-m", module]
