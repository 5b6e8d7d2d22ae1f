"""The Room ↔ Daemon conversation about kernel hosts' slots (issue 26, ADR 0007).

The Daemon alone grants a kernel a host, from its ledger of the kernels on each host, so
rooms that start kernels at the same moment spread over the hosts and no host gets more
than its ``max_kernels``. A room asks ``PlaceKernel``; the Daemon answers ``KernelPlaced``
and counts the grant until the room says ``KernelHostReleased``, asks again, or goes.
"""

from __future__ import annotations

from nbstage.protocol.common.frozen import frozen
from nbstage.protocol.common.kernel_hosts import KernelHost


@frozen
class PlaceKernel:
    """Where may this room's next kernel run?"""

    notebook_id: str
    wish: str
    """The notebook's wish: a host's name, or ``"*"`` for any host."""
    ticket: int
    """The room's count of its asks; the answer and the release name it, so an answer to
    an ask the room no longer waits on, or a late release, is known as such."""
    last: str | None = None
    """The host the room's previous kernel ran on, if it ran on one."""
    died_there: bool = False
    """That kernel died, or failed to start, on ``last``: the Daemon grants ``last`` again
    only once a probe after the death found the host answering."""


@frozen
class KernelPlaced:
    """The Daemon's grant: ``host`` (None: the daemon's machine), or why none can be had."""

    ticket: int
    host: KernelHost | None
    note: str | None = None
    """Why the kernel runs somewhere other than the wished host."""
    moved_from: str | None = None
    """``last``, when the kernel runs on another host."""
    refused: str | None = None
    """Why no host can take the kernel: it fails to start with this reason."""


@frozen
class KernelHostReleased:
    """The kernel granted for ``ticket`` is gone (stopped, died, failed or let go)."""

    notebook_id: str
    ticket: int
