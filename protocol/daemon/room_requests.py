"""Requests to join a notebook's room (open, create, attach), leave it, describe it and
save its notebook. Those that carry ``notebook_id`` are answered by that Room."""

from __future__ import annotations

from nbstage.protocol.common.frozen import frozen
from nbstage.protocol.daemon.request_wire import wire_request


@wire_request("open")
@frozen
class OpenNotebook:
    """Join the room of an .ipynb file, loading it if no room holds it yet."""

    path: str
    peer_label: str = "anonymous"


@wire_request("create")
@frozen
class CreateNotebook:
    """Make a new untitled room and join it."""

    runtime: str | None = "python"
    """Kernel runtime; None makes a room with no kernel."""
    ephemeral: bool = True
    """Ephemeral rooms are never written anywhere; others are journaled in the registry."""
    working_dir: str | None = None
    peer_label: str = "anonymous"
    key: str | None = None
    """Idempotency key: a repeat joins the notebook the first made instead of another."""
    kernel_host: str | None = None
    """A kernel host of the daemon's config.toml to run the kernel on, recorded in the
    notebook's metadata (actors/daemon/kernel/placement.py); None: this machine."""


@wire_request("attach")
@frozen
class AttachNotebook:
    """Join a notebook by UUID; attach-only, never creates an empty document."""

    notebook_id: str
    peer_label: str = "anonymous"


@wire_request("leave")
@frozen
class LeaveRoom:
    notebook_id: str
    peer_id: str


@wire_request("describe_room")
@frozen
class DescribeRoom:
    """One room in detail: peers, kernel, executions, latch and keep-alive state."""

    notebook_id: str


@wire_request("save")
@frozen
class SaveNotebook:
    """Write the notebook atomically; ``path`` saves it there (promoting an untitled room)."""

    notebook_id: str
    path: str | None = None
    key: str | None = None
    """Idempotency key: a repeat answers the first save's result and writes nothing."""
    overwrite: bool = False
    """Replace an existing notebook that is not this room's file (never a non-notebook)."""
