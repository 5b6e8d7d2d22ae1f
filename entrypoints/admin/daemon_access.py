"""How the console reaches the daemon: each question on a fresh connection, at the moment
a command runs, so the console keeps no copy of the daemon's state.

An answer is the typed reply of ``protocol/daemon/replies.py``; every failure (no
daemon, a refusal, a daemon that hangs or hangs up) becomes one :class:`AdminError`
line for a person.
"""

from __future__ import annotations

import shlex
from typing import Any, TypeVar

from nbstage.entrypoints.admin.text_layout import Column, short_id, table
from nbstage.entrypoints.common.ownership import Untrusted
from nbstage.entrypoints.common.statedir import StatePaths, state_paths
from nbstage.entrypoints.control.daemon_client import DaemonClient, DaemonError, DaemonNotRunning
from nbstage.protocol.common.codec import to_wire
from nbstage.protocol.common.frozen import frozen
from nbstage.protocol.daemon.replies import RoomsListed, RoomView
from nbstage.protocol.daemon.requests import WIRE_NAMES, ListRooms

MIN_WIDTH = 40
REQUEST_TIMEOUT_SECS = 120.0
"""Evicting waits for a save and a kernel stop; anything slower than this is a hung daemon."""

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2

_T = TypeVar("_T")


class AdminError(Exception):
    """A command that could not be carried out; ``message`` is the one line a person sees."""

    def __init__(self, message: str, exit_code: int = EXIT_FAILED) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code


@frozen
class Outcome:
    data: Any
    """What ``--json`` prints: the daemon's answer, or for derived views the rows shown."""
    text: str
    """What a person reads, fitted to the width the command was given."""

    @classmethod
    def of(cls, reply: object, text: str) -> Outcome:
        """The outcome of a command that shows one reply, which ``--json`` prints as sent."""
        return cls(to_wire(reply), text)

    @classmethod
    def listing(
        cls, reply: object, columns: list[Column], rows: list[list[Any]], width: int, empty: str
    ) -> Outcome:
        """A reply that lists things, as a table; ``empty`` when it lists nothing."""
        return cls.of(reply, table(columns, rows, width) if rows else empty)


class Admin:
    """Carries out admin commands against the daemon of ``paths``, each on a new connection."""

    def __init__(self, paths: StatePaths, width: int) -> None:
        self.paths = paths
        self.width = max(width, MIN_WIDTH)

    def not_running(self) -> str:
        hint = "nbstage daemon start"
        if state_paths(None).root != self.paths.root:
            hint += f" --state-dir {shlex.quote(str(self.paths.root))}"
        if self.paths.socket.exists():
            problem = f"nothing answers on {self.paths.socket}"
        else:
            problem = f"no socket at {self.paths.socket}"
        return f"The nbstage daemon is not running ({problem}). Start it with: {hint}"

    def call(self, request: object, expected: type[_T]) -> _T:
        answer = self.call_if_running(request, expected)
        if answer is None:
            raise AdminError(self.not_running())
        return answer

    def call_if_running(self, request: object, expected: type[_T]) -> _T | None:
        """``call``, or None when no daemon runs; every other failure is an AdminError."""
        kind = WIRE_NAMES[type(request)]
        try:
            with DaemonClient(self.paths.socket, timeout=REQUEST_TIMEOUT_SECS) as client:
                return client.call(request, expected)
        except DaemonNotRunning:
            return None
        except Untrusted as exc:
            raise AdminError(str(exc)) from None
        except DaemonError as exc:
            about = getattr(request, "notebook_id", None)
            raise AdminError(
                f"{short_id(about)}: {exc.message}" if about else exc.message
            ) from None
        except TimeoutError:
            raise AdminError(
                f"The daemon did not answer {kind!r} within {REQUEST_TIMEOUT_SECS:.0f}s."
            ) from None
        except OSError as exc:
            raise AdminError(f"Lost the connection to the daemon during {kind!r}: {exc}") from None

    def rooms(self) -> list[RoomView]:
        return self.call(ListRooms(), RoomsListed).rooms

    def resolve(self, prefix: str) -> RoomView:
        """The resident room whose notebook id is ``prefix`` or alone starts with it."""
        rooms = self.rooms()
        exact = [room for room in rooms if room.notebook_id == prefix]
        matches = exact or [room for room in rooms if room.notebook_id.startswith(prefix)]
        if len(matches) == 1:
            return matches[0]
        if not matches:
            known = ", ".join(short_id(room.notebook_id) for room in rooms)
            listing = f"resident: {known}" if known else "no rooms are resident"
            raise AdminError(f"No room's notebook id starts with {prefix!r} ({listing}).")
        ids = ", ".join(room.notebook_id[: len(prefix) + 4] for room in matches)
        raise AdminError(
            f"{prefix!r} matches {len(matches)} rooms ({ids}); type more of the notebook id."
        )

    def notebook_ids(self) -> list[str]:
        return [room.notebook_id for room in self.rooms()]
