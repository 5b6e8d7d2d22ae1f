"""What the Daemon actor leaves for later and gets back in its own mailbox: its reaper
timer payload and the tokens of the blocking work it hands to the edge.
"""

from __future__ import annotations

from typing import Any

from nbstage.protocol.common.frozen import frozen
from nbstage.protocol.daemon.requests import CreateNotebook
from nbstage.protocol.daemon_actors.edge import Origin


@frozen
class ReapDue:
    """Reaper timer payload."""


@frozen
class EnvironmentsSwept:
    """Offload token: unused inline environments were removed, for ``origin`` (an admin's
    gc-envs) or for the reaper's sweep (None)."""

    origin: Origin | None
    kept: tuple[str, ...]


@frozen
class KernelspecResolved:
    """Offload token: the installed kernelspecs were read, to resolve a create's runtime."""

    origin: Origin
    request: CreateNotebook


@frozen
class BindingStored:
    """Offload token: id ↔ path is in the registry. ``room`` names the Room waiting for
    that, when one waits: to answer the save call ``origin``, or (no origin) to start."""

    notebook_id: str
    path: str
    room: Any = None
    origin: Origin | None = None


@frozen
class RegistryClosed:
    """Offload token: the last registry write is done and the database is closed."""


@frozen
class ImportsWarmed:
    """Offload token: the kernel libraries are imported, off the loop, so the first kernel
    start does not pay for them in a mailbox."""


@frozen
class NotebookImportsDue:
    """Wakeup payload: time to import the notebook-file libraries (nbformat, jsonschema).
    Not at once with the kernel's: a worker importing them takes the GIL from the first
    join, which needs neither (a new notebook is not read from a file)."""


@frozen
class NotebookImportsWarmed:
    """Offload token: the notebook-file libraries are imported, off the loop."""


@frozen
class HostsCheckDue:
    """Timer payload: probe the kernel hosts. A tick of another generation is stale."""

    generation: int


@frozen
class HostProbed:
    """Offload token: kernel host ``name`` was asked ``GET /api``; the result is its
    version, the error says why it did not answer."""

    name: str
