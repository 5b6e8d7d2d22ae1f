"""The session child process as the ProxySupervisor tracks it: which generation is live,
whether it has been sent its configuration and is ready to serve, and that
configuration. No actor here; the supervisor asks its edge to start and stop processes."""

from __future__ import annotations

from nbstage.protocol.common.labels import fitted_label
from nbstage.protocol.session.supervision import SessionConfig, StartSupervisor


class ChildSlot:
    def __init__(self) -> None:
        self.live: int | None = None
        """The generation of the live child process, or None while there is none."""
        self.generation = 0
        self.ready = False
        self.configured = False
        self.warming = False
        """A successor process started early is waiting out the backoff, unconfigured."""

    def start(self) -> int:
        """A new generation, live but neither configured nor ready."""
        self.generation += 1
        self.live = self.generation
        self.ready = self.warming = self.configured = False
        return self.generation

    def stop(self) -> int | None:
        """The live generation, to stop; none is live after."""
        live, self.live = self.live, None
        return live


def session_config(
    start: StartSupervisor,
    client_label: str | None,
    target: str | None,
    restarts: int,
    generation: int,
) -> SessionConfig:
    """The child's first message, for the client's label (from initialize)."""
    label = fitted_label(start.label or client_label or "agent")
    return SessionConfig(
        start.state_dir,
        start.socket_path,
        label,
        f"agent::{label}",
        start.cwd,
        target,
        start.supervisor_pid,
        restarts,
        generation,
        start.autostart,
        start.figure_files,
    )
