"""The Daemon's admissions, carried through: which room an open, attach or create joins
or starts, the limits on new rooms, and the keyed creates waiting on their first.

It reads the room directory and the registry and keeps the keyed creates
(create_keys.py); admission.py decides. What it settles on comes back as steps, which
the Daemon actor carries out in order in the same mailbox step: it joins, starts and
refuses nothing itself. A refusal of the caller alone is raised, as the actor's guard
answers it.

A step is one of the effects any actor carries out (actors/common/effects.py: a refusal
is a Fail for each caller, the kernelspec read an Offload), the very types the Room's
parts return, or one of the two only the Daemon can carry out: Join (tell a resident
room of a joiner, counted in the room directory) and NewRoom (create a Room actor and
enter it in the directory). The Room's own actions (room/actions.py) are about one
document and its kernel; none of them has a meaning here, nor these in a Room.
"""

from __future__ import annotations

import uuid
from pathlib import Path

from nbstage.actors.common.effects import Fail, Offload
from nbstage.actors.daemon import admission as decide
from nbstage.actors.daemon.admission import Admission, JoinResident, Refuse, StartNewRoom
from nbstage.actors.daemon.create_keys import CreateKeys, JoinMade, WaitForFirst
from nbstage.actors.daemon.kernel.placement import ANY_HOST
from nbstage.actors.daemon.notebook.notebook_files import absolute_notebook_path
from nbstage.actors.daemon.registry import Registry
from nbstage.actors.daemon.room_directory import RoomDirectory
from nbstage.actors.daemon.room_start import RoomWish, installed_kernelspecs, kernelspec_for
from nbstage.protocol.common.errors import ErrorCode, NbstageError
from nbstage.protocol.common.frozen import frozen
from nbstage.protocol.common.offload import BlockingWorkDone
from nbstage.protocol.common.settings import Settings
from nbstage.protocol.daemon.requests import AttachNotebook, CreateNotebook, OpenNotebook
from nbstage.protocol.daemon_actors.daemon_followups import KernelspecResolved
from nbstage.protocol.daemon_actors.edge import Origin
from nbstage.protocol.daemon_actors.kernels import KernelspecInfo
from nbstage.protocol.daemon_actors.rooms import RoomSource


@frozen
class Join:
    notebook_id: str
    origin: Origin
    peer_label: str
    created: bool


@frozen
class NewRoom:
    """Start a room; the caller ``origin`` is counted as the one who started it."""

    start: StartNewRoom
    wish: RoomWish
    origin: Origin


Step = Join | NewRoom | Fail | Offload


class Admitting:
    def __init__(self, rooms: RoomDirectory, settings: Settings) -> None:
        self._rooms = rooms
        self._settings = settings
        self.create_keys: CreateKeys[tuple[Origin, CreateNotebook]] = CreateKeys()

    def admit(
        self,
        origin: Origin,
        req: OpenNotebook | AttachNotebook | CreateNotebook,
        registry: Registry,
    ) -> list[Step]:
        match req:
            case OpenNotebook():
                return self.open(origin, req, registry)
            case AttachNotebook():
                return self.attach(origin, req, registry)
        return self.create(origin, req)

    def open(self, origin: Origin, req: OpenNotebook, registry: Registry) -> list[Step]:
        path = absolute_notebook_path(req.path)
        registered = registry.id_for(path)
        fresh = str(uuid.uuid4())
        admission = decide.admit_open(
            self._rooms.by_path, path, Path(path).is_file(), registered, fresh
        )
        return self._admitted(origin, admission, RoomWish(req.peer_label))

    def attach(self, origin: Origin, req: AttachNotebook, registry: Registry) -> list[Step]:
        resident = req.notebook_id in self._rooms
        bound = registry.path_for(req.notebook_id)
        untitled = None if resident else registry.load_untitled(req.notebook_id)
        facts = decide.AttachFacts(
            bound, bound is not None and Path(bound).is_file(), untitled is not None
        )
        admission = decide.admit_attach(self._rooms.rooms, req.notebook_id, facts)
        return self._admitted(origin, admission, RoomWish(req.peer_label, content=untitled))

    def create(self, origin: Origin, req: CreateNotebook) -> list[Step]:
        if req.key is not None:
            match self.create_keys.begin(req.key, (origin, req), self._rooms.alive()):
                case JoinMade(notebook_id):
                    return [Join(notebook_id, origin, req.peer_label, True)]
                case WaitForFirst():
                    return []
        if req.runtime is None:
            return self.create_with(origin, req, None, stopping=False)
        return [Offload(KernelspecResolved(origin, req), installed_kernelspecs)]

    def kernelspecs_read(self, done: BlockingWorkDone, stopping: bool) -> list[Step]:
        origin, req = done.token.origin, done.token.request
        chosen = kernelspec_for(req.runtime, done)
        if isinstance(chosen, NbstageError):
            return self._create_failed(origin, req, chosen)
        return self.create_with(origin, req, chosen, stopping)

    def create_with(
        self,
        origin: Origin,
        req: CreateNotebook,
        kernelspec: KernelspecInfo | None,
        stopping: bool,
    ) -> list[Step]:
        """A new room for the create, joined by its caller and every repeat of its key;
        or, refused, the refusal of them all."""
        notebook_id = str(uuid.uuid4())
        wish = RoomWish(req.peer_label, req.ephemeral, kernelspec, req.working_dir, req.kernel_host)
        try:
            if stopping:
                raise shutting_down()
            self._check_kernel_host(req.kernel_host)
            steps = self._admitted(origin, StartNewRoom(notebook_id, RoomSource.NEW, None), wish)
        except NbstageError as exc:
            return self._create_failed(origin, req, exc)
        made = self.create_keys.made(req.key, notebook_id) if req.key is not None else []
        joins = [Join(notebook_id, waiter, repeat.peer_label, True) for waiter, repeat in made]
        return [*steps, *joins]

    def _check_kernel_host(self, name: str | None) -> None:
        hosts = [host.name for host in self._settings.kernel_hosts]
        if name is None or name in hosts or (name == ANY_HOST and hosts):
            return
        named = f'{", ".join(hosts)}, or "*" for any of them' if hosts else "none"
        raise NbstageError(
            ErrorCode.BAD_REQUEST,
            f"kernel_host {name!r} is not a kernel host of the daemon's config.toml "
            f"(it names: {named}); leave kernel_host out to run the kernel here",
        )

    def _create_failed(
        self, origin: Origin, req: CreateNotebook, error: NbstageError
    ) -> list[Step]:
        """The create, and every repeat of its key waiting on it, refused; a later repeat
        tries afresh."""
        waiting = self.create_keys.failed(req.key) if req.key is not None else []
        return [Fail(each, error) for each in (origin, *(waiter for waiter, _ in waiting))]

    def _admitted(self, origin: Origin, admission: Admission, wish: RoomWish) -> list[Step]:
        match admission:
            case Refuse(code, message):
                raise NbstageError(code, message)
            case JoinResident(notebook_id):
                return [Join(notebook_id, origin, wish.peer_label, False)]
            case StartNewRoom(notebook_id, source):
                self._refuse_beyond_limits(origin)
                created = source is RoomSource.NEW
                return [
                    NewRoom(admission, wish, origin),
                    Join(notebook_id, origin, wish.peer_label, created),
                ]
        raise AssertionError(admission)

    def _refuse_beyond_limits(self, origin: Origin) -> None:
        refusal = decide.refuse_beyond_limits(
            len(self._rooms),
            self._rooms.started_by(origin.conn),
            self._settings.max_rooms,
            self._settings.max_rooms_per_connection,
        )
        if refusal is not None:
            raise NbstageError(refusal.code, refusal.message)


def shutting_down() -> NbstageError:
    return NbstageError(ErrorCode.SHUTTING_DOWN, "The daemon is shutting down.")
