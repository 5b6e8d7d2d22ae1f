"""The Room's side of the Daemon's ledger of kernel host slots (actors/daemon/host_grants.py):
its asks, the slot its kernel holds, and where its last kernel ran and how it ended.

Plain state for the kernel seat (kernel_seat.py), which sends what it returns.
"""

from __future__ import annotations

from nbstage.protocol.daemon_actors.host_grants import KernelPlaced, PlaceKernel


class HostSlot:
    def __init__(self) -> None:
        self.tickets = 0
        self.asked: int | None = None
        """The ask whose answer the waiting Kernel child starts with."""
        self.held: int | None = None
        """The ask whose grant the current kernel holds; None: it holds no host's slot."""
        self.last: str | None = None
        """The host the latest kernel on a host ran on (kept after it ends)."""
        self.died_there = False
        self._moved: tuple[str, str] | None = None
        """(from, to) when the latest grant put the kernel on another host than ``last``
        (ADR 0007), until ``take_move`` reads it."""

    def ask(self, notebook_id: str, wish: str) -> PlaceKernel:
        self.tickets += 1
        self.asked = self.tickets
        return PlaceKernel(notebook_id, wish, self.tickets, self.last, self.died_there)

    def granted(self, placed: KernelPlaced) -> bool:
        """Take the Daemon's answer, if it answers the ask the kernel waits on."""
        if placed.ticket != self.asked:
            return False
        self.asked = None
        if placed.host is not None:
            self.held = placed.ticket
            if placed.moved_from is not None:
                self._moved = (placed.moved_from, placed.host.name)
            self.last, self.died_there = placed.host.name, False
        return True

    def ended_badly(self) -> None:
        """The kernel on the held slot died or failed to start: the next ask says so."""
        if self.held is not None:
            self.died_there = True

    def let_go(self) -> int | None:
        """The kernel is gone: the ticket whose slot goes back, if one is held; an answer
        still to come is for nobody."""
        held, self.held, self.asked = self.held, None, None
        return held

    def take_move(self) -> tuple[str, str] | None:
        """The move, once: the answer to the restarts that the moved kernel completes says
        so, and a later restart in place does not."""
        moved, self._moved = self._moved, None
        return moved
