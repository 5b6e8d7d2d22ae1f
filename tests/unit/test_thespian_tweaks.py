"""nbstage's changes to thespian internals still fit the installed thespian (SPEC §13)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from thespian.actors import ActorSystem
from thespian.system import multiprocCommon
from thespian.system.transport import MultiprocessQueueTransport

from nbstage.actors import thespian_tweaks
from tests.unit.tweak_actors import Parent, PostFromThread, ThreadPoster


def test_the_installed_thespian_is_the_pinned_version() -> None:
    assert thespian_tweaks.installed_version_matches(), (
        "thespian changed: re-check every tweak in actors/thespian_tweaks.py, then re-pin"
    )


def test_the_patched_internals_exist_and_are_patched() -> None:
    assert multiprocCommon.closeFileNums is thespian_tweaks._keep_all_files
    assert multiprocCommon.MultiProcAdmin is thespian_tweaks.GuardedAdmin
    assert multiprocCommon.startupASLogger is thespian_tweaks._start_logger_guarded
    assert MultiprocessQueueTransport.MAX_ACTOR_QUEUESIZE == thespian_tweaks.ACTOR_QUEUE_DEPTH
    assert MultiprocessQueueTransport.MAX_ADMIN_QUEUESIZE == thespian_tweaks.ADMIN_QUEUE_DEPTH


@pytest.fixture
def queue_system() -> Iterator[ActorSystem]:
    system = ActorSystem(
        "multiprocQueueBase", {"Process Startup Method": "spawn"}, transientUnique=True
    )
    yield system
    system.shutdown()


def test_a_thread_in_an_actor_process_reaches_its_own_actor(queue_system) -> None:
    poster = queue_system.createActor(ThreadPoster)
    assert queue_system.ask(poster, PostFromThread(200), 20) == 200


def test_an_actor_creates_a_child_under_spawn(queue_system) -> None:
    parent = queue_system.createActor(Parent)
    child_pid = queue_system.ask(parent, "spawn-child", 30)
    assert isinstance(child_pid, int)
    assert child_pid != os.getpid()
