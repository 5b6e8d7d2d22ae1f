"""The Room's parts (actors/daemon/room/): plain classes with no thespian in them, and the
once-only keys as a table."""

from __future__ import annotations

import ast
import pkgutil
from dataclasses import replace
from pathlib import Path

import pytest

import nbstage.actors.daemon.room
from nbstage.actors.daemon.room.actions import (
    Answer,
    BindPath,
    DetachKernel,
    Edited,
    Fail,
    FinishClose,
    FlushFirst,
    Loaded,
    Offload,
    Persist,
    ReadDone,
    ReadJournal,
    ReadKernelspecs,
    RefuseHeld,
    ReportStatus,
    SaveFile,
    Send,
    SetOutputs,
    SettleClose,
    Started,
    StartFailed,
    StartKernelChild,
    TruncateJournal,
    Wake,
    WantKernel,
)
from nbstage.actors.daemon.room.closing import Closing
from nbstage.actors.daemon.room.dependency_calls import DependencyCalls
from nbstage.actors.daemon.room.environment import EnvironmentSeat
from nbstage.actors.daemon.room.file_seat import FileSeat
from nbstage.actors.daemon.room.journalling import Journalling
from nbstage.actors.daemon.room.kernel_seat import KernelSeat
from nbstage.actors.daemon.room.notices import NoticeBoard
from nbstage.actors.daemon.room.once import OnceKeys
from nbstage.actors.daemon.room.opening import Opening
from nbstage.protocol.common.errors import ErrorCode, NbstageError
from nbstage.protocol.common.offload import BlockingWorkDone
from nbstage.protocol.common.settings import Settings
from nbstage.protocol.daemon.replies import RestartCompleted
from nbstage.protocol.daemon_actors.edge import Origin
from nbstage.protocol.daemon_actors.kernel_facts import ExecutionStatus, KernelState
from nbstage.protocol.daemon_actors.kernels import RunCode, ShutdownKernel
from nbstage.protocol.daemon_actors.room_followups import (
    DependenciesPrepared,
    DependenciesRecorded,
    DiskStamp,
    FileCheckDue,
    FileOnDisk,
    LiveExecutionRecorded,
    NotebookFileRead,
    SaveFinished,
    SavePurpose,
    StoredExecutionRead,
    WaitExpired,
)
from nbstage.protocol.daemon_actors.rooms import RoomClosed, RoomSource, StartRoom

ACTOR_MODULES = {"actor"}


def _imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module is not None:
            names.add(node.module)
    return names


def _part_modules() -> list[pkgutil.ModuleInfo]:
    found = list(pkgutil.walk_packages(nbstage.actors.daemon.room.__path__))
    return [info for info in found if info.name not in ACTOR_MODULES]


def test_the_room_has_parts_besides_its_actor() -> None:
    assert len(_part_modules()) >= 3


@pytest.mark.parametrize("info", _part_modules(), ids=lambda info: info.name)
def test_no_part_of_the_room_imports_thespian(info: pkgutil.ModuleInfo) -> None:
    """Only the Room actor sends, offloads and arms timers; a part returns actions."""
    if info.name == "__init__":
        return
    path = Path(info.module_finder.path) / f"{info.name}.py"
    thespian = {name for name in _imports(path) if name.split(".")[0] == "thespian"}
    assert thespian == set(), f"{info.name} imports {sorted(thespian)}"


def test_the_package_init_imports_no_thespian_of_its_own() -> None:
    init = Path(nbstage.actors.daemon.room.__file__)
    assert not any(name.startswith("thespian") for name in _imports(init))


def origin(n: int) -> Origin:
    return Origin(conn=1, request_id=n)


@pytest.mark.parametrize(
    ("steps", "known", "waiting"),
    [
        # begin, then a repeat waits; the answer reaches both and is remembered
        ([("begin", 1), ("repeat", 2), ("answer", 1)], True, [2]),
        # a refusal reaches the repeats and is not remembered
        ([("begin", 1), ("repeat", 2), ("fail", 1)], False, [2]),
        # nothing under way: a repeat does not wait
        ([("repeat", 2)], False, []),
    ],
)
def test_once_only_keys(steps: list, known: bool, waiting: list[int]) -> None:
    once, reached = OnceKeys(), []
    for step, n in steps:
        match step:
            case "begin":
                once.begin("k", origin(n))
            case "repeat":
                once.wait_if_under_way("k", origin(n))
            case "answer":
                reached = once.answered(origin(n), "reply")
            case "fail":
                reached = once.failed(origin(n))
    assert once.known("k") is known
    assert reached == [origin(n) for n in waiting]


def test_the_memo_forgets_its_oldest_keys_first() -> None:
    once = OnceKeys(size=2)
    for key in ("a", "b", "c"):
        once.remember(key, key)
    assert [once.known(k) for k in ("a", "b", "c")] == [False, True, True]


# --- the file part and the kernel seat, as tables ------------------------------------------


def start_for(tmp_path: Path, **settings: object) -> StartRoom:
    return StartRoom(
        notebook_id="nb",
        source=RoomSource.FILE,
        path=str(tmp_path / "a.ipynb"),
        ephemeral=False,
        kernelspec=None,
        working_dir=None,
        state_dir=str(tmp_path),
        kernel_dir=str(tmp_path),
        settings=Settings(**settings),
        edge=None,
    )


@pytest.mark.parametrize(
    ("revision", "purpose", "problem", "wanted"),
    [
        (0, SavePurpose.AUTOSAVE, None, False),  # nothing unsaved
        (1, SavePurpose.AUTOSAVE, None, True),
        (1, SavePurpose.AUTOSAVE, "not a notebook", False),  # autosave paused
        (1, SavePurpose.REQUEST, "not a notebook", True),  # an explicit save writes over it
        (1, SavePurpose.CLOSE, None, True),
    ],
)
def test_when_the_file_part_wants_a_save(
    tmp_path: Path, revision: int, purpose: SavePurpose, problem: str | None, wanted: bool
) -> None:
    seat = FileSeat(NoticeBoard())
    seat.start(start_for(tmp_path))
    seat.disk.problem = problem
    assert seat.wants_save(revision, purpose) is wanted


@pytest.mark.parametrize(
    ("path", "peers", "every", "armed"),
    [
        ("/a.ipynb", True, 2.0, True),
        (None, True, 2.0, False),  # no file to watch
        ("/a.ipynb", False, 2.0, False),  # nobody to tell
        ("/a.ipynb", True, 0.0, False),  # the check is off
    ],
)
def test_when_the_file_check_is_armed(
    tmp_path: Path, path: str | None, peers: bool, every: float, armed: bool
) -> None:
    seat = FileSeat(NoticeBoard())
    seat.start(start_for(tmp_path, file_check_secs=every))
    actions = seat.arm_check(path, peers)
    assert actions == ([Wake(every, FileCheckDue(1))] if armed else [])
    assert seat.arm_check(path, peers) == []  # armed once until it fires


def test_a_file_gone_from_disk_is_said_once_and_autosave_waits_for_an_edit(
    tmp_path: Path,
) -> None:
    notices = NoticeBoard()
    notices.follow(1)
    seat = FileSeat(notices)
    seat.start(start_for(tmp_path))
    seat.disk.stamp = DiskStamp(1, 2, 3, 4)
    assert seat.changed(FileOnDisk(None, None), "/a.ipynb", {}) == (None, False)
    assert seat.disk.missing
    assert seat.autosave_generation == 1
    seat.changed(FileOnDisk(None, None), "/a.ipynb", {})
    assert len(notices.take(1)) == 1


@pytest.mark.parametrize(
    ("purpose", "problem", "missing", "wanted"),
    [
        (SavePurpose.REQUEST, None, False, [SaveFile(None, SavePurpose.REQUEST, origin(1))]),
        (SavePurpose.REQUEST, "bad", False, [SaveFile(None, SavePurpose.REQUEST, origin(1))]),
        (SavePurpose.CLOSE, None, False, [Persist(SavePurpose.CLOSE)]),
        (SavePurpose.AUTOSAVE, None, False, [Persist(SavePurpose.AUTOSAVE)]),
        (SavePurpose.AUTOSAVE, None, True, []),  # a deleted file waits for an edit
    ],
)
def test_how_a_save_goes_on_after_the_file_changed_under_it(
    tmp_path: Path, purpose: SavePurpose, problem: str | None, missing: bool, wanted: list
) -> None:
    seat = FileSeat(NoticeBoard())
    seat.start(start_for(tmp_path))
    seat.disk.problem, seat.disk.missing = problem, missing
    token = SaveFinished("/a.ipynb", 1, purpose, origin(1), 0)
    assert seat.again(token) == wanted


def test_a_close_over_a_file_that_is_no_notebook_finishes_unsaved(tmp_path: Path) -> None:
    seat = FileSeat(NoticeBoard())
    seat.start(start_for(tmp_path))
    seat.disk.problem = "not a notebook"
    [finish] = seat.again(SaveFinished("/a.ipynb", 1, SavePurpose.CLOSE, None, 0))
    assert isinstance(finish, FinishClose)
    assert not finish.saved


@pytest.mark.parametrize(
    ("ok", "purpose", "wanted"),
    [
        (True, SavePurpose.REQUEST, [TruncateJournal, Send, Answer]),
        (False, SavePurpose.REQUEST, [Fail]),
        (True, SavePurpose.NEW_PATH, [TruncateJournal, Send, Send, BindPath]),
        (False, SavePurpose.NEW_PATH, [Send, Fail]),
        (True, SavePurpose.CLOSE, [TruncateJournal, Send, FinishClose]),
        (True, SavePurpose.AUTOSAVE, [TruncateJournal, Send]),
    ],
)
def test_what_follows_a_save(
    tmp_path: Path, ok: bool, purpose: SavePurpose, wanted: list[type]
) -> None:
    seat = FileSeat(NoticeBoard())
    seat.start(start_for(tmp_path), daemon="daemon")
    token = SaveFinished("/a.ipynb", 3, purpose, origin(1), 7)
    done = BlockingWorkDone(token, None, None if ok else OSError("full"))
    assert [type(action) for action in seat.settled(done, 3)] == wanted
    assert seat.saved_revision == (3 if ok else 0)


def test_saves_wait_their_turn_and_a_close_is_a_persist(tmp_path: Path) -> None:
    seat = FileSeat(NoticeBoard())
    seat.start(start_for(tmp_path))
    seat.busy = True
    seat.queue = [(SavePurpose.CLOSE, "/a.ipynb", None), (SavePurpose.NEW_PATH, "/b", origin(2))]
    assert seat.next_job() is None
    seat.busy = False
    assert seat.next_job() == Persist(SavePurpose.CLOSE)
    assert seat.next_job() == SaveFile("/b", SavePurpose.NEW_PATH, origin(2))
    assert seat.next_job() is None


def seat_with(tmp_path: Path, env: EnvironmentSeat | None = None) -> KernelSeat:
    seat = KernelSeat(env or EnvironmentSeat())
    seat.start(start_for(tmp_path), has_runtime=True)
    return seat


def test_how_an_execution_is_answered(tmp_path: Path) -> None:
    runs, asker = seat_with(tmp_path).runs, origin(1)
    record, _ = runs.book.queue("c1")
    [live] = runs.answer_execution(asker, record.execution_id, 0)
    assert isinstance(live, Offload)
    assert live.token == LiveExecutionRecorded(record.execution_id, asker)
    [wait] = runs.answer_execution(asker, record.execution_id, 5)
    assert wait == Wake(5, WaitExpired(record.execution_id, asker))
    runs.book.finish(record.execution_id, ExecutionStatus.DONE, 1)
    [done] = runs.answer_execution(asker, record.execution_id, 5)
    assert isinstance(done, Answer)
    assert done.origin == asker
    [stored] = runs.answer_execution(asker, "gone", 0)
    assert isinstance(stored, Offload)
    assert stored.token == StoredExecutionRead("gone", asker)


def test_the_latch_stops_the_child_once_and_forgets_it(tmp_path: Path) -> None:
    seat = seat_with(tmp_path)
    seat.seated("kernel-address")
    assert seat.state is KernelState.STARTING
    detached = seat.detach("stopped")
    assert detached == [Send("kernel-address", ShutdownKernel()), ReportStatus()]
    assert seat.address is None
    assert seat.stopping == ["kernel-address"]
    assert seat.detach("stopped") == [ReportStatus()]
    assert not seat.is_current("kernel-address")


def test_a_run_clears_the_cell_once_and_a_finish_writes_it_back(tmp_path: Path) -> None:
    runs = seat_with(tmp_path).runs
    execution_id, start = runs.run("c1", "1 + 1", "kernel")
    assert start[0] == SetOutputs("c1", [], None)
    assert start[1] == Send("kernel", RunCode(execution_id, "1 + 1"))
    assert runs.run("c1", "1 + 1", "kernel") == (execution_id, [])  # joins the run under way
    finished = runs.finish(execution_id, ExecutionStatus.DONE, 4)
    assert finished[0] == SetOutputs("c1", [], 4)
    assert isinstance(finished[-1], Edited)
    assert runs.finish(execution_id, ExecutionStatus.DONE, 4) == []  # already settled


def test_restarts_waiting_are_answered_or_failed_once(tmp_path: Path) -> None:
    seat = seat_with(tmp_path)
    seat.pending_restart = [origin(1), origin(2)]
    seat.up(pid=42)
    answers = seat.answer_restarts()
    assert [(a.origin, a.reply) for a in answers] == [
        (origin(1), RestartCompleted(42)),
        (origin(2), RestartCompleted(42)),
    ]
    assert seat.answer_restarts() == []
    seat.pending_restart = [origin(3)]
    [failed] = seat.fail_restarts()
    assert isinstance(failed, Fail)
    assert failed.origin == origin(3)
    assert seat.pending_restart == []


@pytest.mark.parametrize(
    ("restart", "closing", "wanted"),
    [
        (False, False, [Answer, SettleClose]),
        (False, True, [Answer, SettleClose]),  # the edit is durable: answered even while closing
        (True, True, [Fail, SettleClose]),  # the kernel is not restarted into a closing room
        (True, False, [DetachKernel, WantKernel, SettleClose]),  # answered once the kernel is up
    ],
)
def test_what_follows_a_recorded_dependency_edit(
    tmp_path: Path, restart: bool, closing: bool, wanted: list[type]
) -> None:
    env, journalling = EnvironmentSeat(), Journalling()
    calls = DependencyCalls(env, journalling, NoticeBoard())
    calls.start(start_for(tmp_path))
    journalling.jobs = 1
    done = BlockingWorkDone(DependenciesRecorded(origin(1), "reply", restart))
    assert [type(action) for action in calls.recorded(done, closing)] == wanted
    assert journalling.jobs == 0
    assert env.pending == ([(origin(1), "reply")] if wanted[0] is DetachKernel else [])


def test_environment_work_that_comes_back_to_a_closing_room_changes_nothing(
    tmp_path: Path,
) -> None:
    env = EnvironmentSeat()
    calls = DependencyCalls(env, Journalling(), NoticeBoard())
    calls.start(start_for(tmp_path))
    env.jobs = 1
    token = DependenciesPrepared(origin(1), None, "restart", 0.0)
    [refused, settle] = calls.prepared(BlockingWorkDone(token), {}, closing=True)
    assert settle == SettleClose()
    assert isinstance(refused, Fail)
    assert refused.error.code is ErrorCode.SHUTTING_DOWN
    assert env.jobs == 0


@pytest.mark.parametrize(
    ("state", "wanted"),
    [
        (KernelState.IDLE, [Send]),  # restarted in place
        (KernelState.DEAD, [StartKernelChild, Wake]),  # replaced, kept alive while unjoined
    ],
)
def test_how_a_restart_goes(tmp_path: Path, state: KernelState, wanted: list[type]) -> None:
    env = EnvironmentSeat()
    env.kernel_name = "python3"
    seat = seat_with(tmp_path, env)
    seat.seated("kernel")
    seat.state = state
    todo = seat.restart(origin(1))
    if state is KernelState.DEAD:
        todo = [action for action in todo if not isinstance(action, Send)]
    assert [type(action) for action in todo] == wanted
    assert seat.pending_restart == [origin(1)]


def test_a_restart_without_a_kernel_runtime_is_refused_and_changes_nothing(
    tmp_path: Path,
) -> None:
    seat = KernelSeat(EnvironmentSeat())
    seat.start(start_for(tmp_path), has_runtime=False)
    with pytest.raises(NbstageError):
        seat.restart(origin(1))
    assert seat.pending_restart == []


@pytest.mark.parametrize(
    ("source", "ephemeral", "journalled", "wanted", "reads"),
    [
        (RoomSource.FILE, False, True, [Offload, ReadKernelspecs, ReadJournal], 2),
        (RoomSource.UNTITLED, False, True, [ReadKernelspecs, ReadJournal], 2),
        (RoomSource.UNTITLED, True, False, [ReadKernelspecs], 1),
        (RoomSource.NEW, False, True, [FlushFirst], 0),
        (RoomSource.NEW, True, False, [Started], 0),
    ],
)
def test_what_the_start_does_once_the_document_is_loaded(
    tmp_path: Path,
    source: RoomSource,
    ephemeral: bool,
    journalled: bool,
    wanted: list[type],
    reads: int,
) -> None:
    start = replace(start_for(tmp_path), source=source, ephemeral=ephemeral)
    part = Opening()
    assert [type(action) for action in part.loaded(start, journalled, "lane")] == wanted
    assert part.reads == reads
    assert (part.held is not None) is (wanted[-1] is not Started)


@pytest.mark.parametrize(
    ("stopping", "journal_jobs", "env_jobs", "reported"),
    [
        ([], 0, 0, True),
        (["kernel"], 0, 0, False),  # a kernel told to stop has not said it stopped
        ([], 1, 0, False),  # journal work under way
        ([], 0, 1, False),  # an environment build under way
    ],
)
def test_the_close_is_reported_once_nothing_it_waits_for_is_under_way(
    tmp_path: Path, stopping: list, journal_jobs: int, env_jobs: int, reported: bool
) -> None:
    env, journalling = EnvironmentSeat(), Journalling()
    seat, file = KernelSeat(env), FileSeat(NoticeBoard())
    seat.start(start_for(tmp_path), has_runtime=True)
    file.start(start_for(tmp_path))
    close = Closing(seat, journalling, env, file)
    close.by = "daemon"
    assert close.settle() == []  # nothing to report before the last flush is over
    seat.stopping, journalling.jobs, env.jobs = stopping, journal_jobs, env_jobs
    finished = close.finish(saved=True, error=None)
    assert (Send("daemon", RoomClosed("nb", True, None)) in finished) is reported
    seat.stopping, journalling.jobs, env.jobs = [], 0, 0
    assert len(close.settle()) == (0 if reported else 1)  # reported once, when settled


@pytest.mark.parametrize(
    ("closing", "ok", "wanted"),
    [
        (True, True, [RefuseHeld]),  # the room closes before anyone joined it
        (False, False, [StartFailed]),
        (False, True, [Loaded, ReadDone]),
    ],
)
def test_what_the_start_does_once_the_file_is_read(
    closing: bool, ok: bool, wanted: list[type]
) -> None:
    done = BlockingWorkDone(
        NotebookFileRead(), ("doc", "stamp", {}) if ok else None, None if ok else OSError("gone")
    )
    assert [type(action) for action in Opening().file_read(done, closing)] == wanted
