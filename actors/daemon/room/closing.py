"""How a Room's closing stands: who asked for it, why the reaper kept the room, and the
report held until the work the close waits for is over (the last flush, the journal's
work, environment builds, and every kernel this room stopped)."""

from __future__ import annotations

from typing import Any

from nbstage.actors.daemon.room.actions import Action, FinishClose, Persist, Send
from nbstage.actors.daemon.room.environment import EnvironmentSeat
from nbstage.actors.daemon.room.file_seat import FileSeat
from nbstage.actors.daemon.room.journalling import Journalling
from nbstage.actors.daemon.room.kernel_seat import KernelSeat
from nbstage.actors.daemon.room.room_support import save_error
from nbstage.protocol.common.errors import ErrorCode, NbstageError
from nbstage.protocol.daemon.replies import KeptRoom
from nbstage.protocol.daemon_actors.room_followups import SavePurpose
from nbstage.protocol.daemon_actors.rooms import ReopenRoom, RoomClosed


class Closing:
    """Reads the parts whose work the close waits for; changes only its own state."""

    def __init__(
        self, seat: KernelSeat, journal: Journalling, env: EnvironmentSeat, file: FileSeat
    ) -> None:
        self.seat, self.journal, self.env, self.file = seat, journal, env, file
        self.by: Any = None
        """Who asked this room to close; from then on it acknowledges no mutation."""
        self.kept: KeptRoom | None = None
        """Why the reaper kept this room instead of removing it, shown while edits are unsaved."""
        self.report: RoomClosed | None = None
        """The close's outcome, held until the seat's kernels have stopped."""

    @property
    def asked(self) -> bool:
        return self.by is not None

    def refuse(self, outcome: str) -> None:
        """From CloseRoom on, the room's last flush is under way or done: nothing it would
        not keep is acknowledged."""
        if self.by is not None:
            raise closing_error(outcome)

    def begin(self, reason: str, loaded: bool) -> list[Action]:
        """The kernel goes and restarts waiting for it fail; then what is unsaved is saved
        (a room with no document has nothing to save)."""
        todo = self.seat.fail_restarts(closing_error("the kernel was not restarted"))
        if self.seat.address is not None:
            todo += self.seat.detach(reason)
            self.seat.release()
        return [*todo, Persist(SavePurpose.CLOSE) if loaded else FinishClose(True)]

    def finish(self, saved: bool, error: BaseException | None) -> list[Action]:
        """The last flush is over: the report waits for whatever else is under way."""
        self.file.close_registry()
        todo: list[Action] = list(self.journal.close())
        problem = None if saved else save_error(error).message
        self.report = RoomClosed(self.file.config.notebook_id, saved, problem)
        return [*todo, *self.settle()]

    def settle(self) -> list[Action]:
        """The room ends with no child left for its exit to cut short, and no call left
        unanswered: the report goes once nothing the close waits for is under way."""
        busy = self.seat.stopping or self.journal.jobs or self.env.jobs
        if self.report is None or busy:
            return []
        report, self.report = self.report, None
        return [Send(self.by, report)]

    def reopen(self, msg: ReopenRoom, sender: Any) -> list[Action]:
        self.by, self.kept = None, msg.kept
        return []


def closing_error(outcome: str) -> NbstageError:
    return NbstageError(
        ErrorCode.SHUTTING_DOWN, f"This notebook is closing, so {outcome}; try again."
    )
