"""How an edit of a notebook's inline dependencies is applied, and the plan of one.

The ``manage_dependencies`` tool (``tools.py``) and the daemon request
(``requests.py``) share ``ApplyDependencies``; the Room carries a ``DependencyPlan``
(made by ``actors/daemon/environment/dependencies.py``) through its offloaded environment work. It
has a
module of its own so that `nbstage mcp`, which checks tool arguments against
``tools.py``, does not load every daemon request.
"""

from __future__ import annotations

from enum import StrEnum

from nbstage.protocol.common.frozen import frozen


class ApplyDependencies(StrEnum):
    NONE = "none"
    SYNC = "sync"
    RESTART = "restart"


@frozen
class Removal:
    requested: tuple[str, ...]
    removed: tuple[str, ...]
    not_found: tuple[str, ...]


@frozen
class DependencyEdit:
    before: tuple[str, ...]
    after: tuple[str, ...]
    added: tuple[str, ...]
    removed: Removal


@frozen
class DependencyPlan:
    edit: DependencyEdit
    before_fingerprint: str
    after_fingerprint: str
    trusted_after: bool
    """Whether the set after the call may be built: approved now or before, or written by
    the agent from a set that was trusted (an edit never launders an untrusted set)."""
    approve: bool = False
    """The call said trust=true: with no set, that approves the project waiting for it."""
