"""Every change nbstage makes to thespian's internals, in one place.

thespian is pinned (setup.cfg) because these reach into private modules;
``tests/unit/test_thespian_tweaks.py`` fails loudly if the internals move.
Import this module from the main module of any process that starts an actor
system: under the spawn start method every actor process re-imports the main
module, which is how the tweaks reach them all.

1. ``closeFileNums``: under spawn, a child closes the *parent's* fd numbers, which
   are meaningless in the child and break nested actor creation. Under spawn
   nothing is inherited, so there is nothing to close.
2. Queue depths: thespian's defaults (10 per actor, 40 for the admin) make a
   sender block and then drop messages under load. Raised here.
3. ``self_poster``: thespian gives a thread inside an actor process no way to
   post to its own actor (``ActorSystem()`` from there silently loses messages).
   The Kernel actor needs one so kernel I/O can wake it without polling; this
   puts a message straight into the actor's own input queue.
4. The admin daemonizes itself (setsid + double fork), so it would outlive a
   SIGKILLed daemon. ``GuardedAdmin`` watches the daemon's pid and, when it dies,
   kills the admin's whole process group (admin, logger and actors). The logger
   process also gets a parent-death signal, like every nbstage actor.
"""

from __future__ import annotations

import ctypes
import os
import select
import signal
import threading
from importlib.metadata import version

from thespian.system import multiprocCommon
from thespian.system.transport import MultiprocessQueueTransport

PINNED_THESPIAN = "4.0.1"
ACTOR_QUEUE_DEPTH = 256
ADMIN_QUEUE_DEPTH = 1024
EDGE_PID_ENV = "NBSTAGE_EDGE_PID"


def _keep_all_files(_fds: object) -> None:
    return None


_PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """Ask Linux to SIGKILL this process when the process that started it dies."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


_start_logger = multiprocCommon.startupASLogger


def _start_logger_guarded(*args: object, **kwargs: object) -> object:
    """thespian's logger process, which otherwise outlives an admin that was killed."""
    die_with_parent()
    return _start_logger(*args, **kwargs)


def _watch_edge_then_kill_group(edge_pid: int) -> None:
    try:
        pidfd = os.pidfd_open(edge_pid)
    except ProcessLookupError:
        os.killpg(os.getpgrp(), signal.SIGKILL)
        return
    select.select([pidfd], [], [])
    os.killpg(os.getpgrp(), signal.SIGKILL)


class GuardedAdmin(multiprocCommon.MultiProcAdmin):
    """thespian's admin, plus a thread that ends the actor system when its starter dies."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)
        edge_pid = os.environ.get(EDGE_PID_ENV)
        if edge_pid:
            threading.Thread(
                target=_watch_edge_then_kill_group,
                args=(int(edge_pid),),
                name="nbstage-edge-watch",
                daemon=True,
            ).start()


def self_poster(actor: object):
    """A function that any thread of this actor's process may call to message the actor.

    Only valid under multiprocQueueBase. Returns None under other bases, whose
    actors must fall back to timer ticks.
    """
    core = getattr(getattr(actor._myRef, "transport", None), "_QCore", None)
    queue = getattr(core, "_myInputQ", None)
    if queue is None:
        return None
    me = actor.myAddress

    def post(message: object) -> None:
        queue.put((me, (me, me, message)))

    return post


def apply() -> None:
    multiprocCommon.closeFileNums = _keep_all_files
    multiprocCommon.MultiProcAdmin = GuardedAdmin
    multiprocCommon.startupASLogger = _start_logger_guarded
    MultiprocessQueueTransport.MAX_ACTOR_QUEUESIZE = ACTOR_QUEUE_DEPTH
    MultiprocessQueueTransport.MAX_ADMIN_QUEUESIZE = ADMIN_QUEUE_DEPTH


def installed_version_matches() -> bool:
    return version("thespian") == PINNED_THESPIAN


apply()
