"""How an edit of a notebook's inline dependencies is applied.

The ``manage_dependencies`` tool (``tools.py``) and the daemon request
(``requests.py``) share it. It has a module of its own so that `nbstage mcp`, which
checks tool arguments against ``tools.py``, does not load every daemon request.
"""

from __future__ import annotations

from enum import StrEnum


class ApplyDependencies(StrEnum):
    NONE = "none"
    SYNC = "sync"
    RESTART = "restart"
