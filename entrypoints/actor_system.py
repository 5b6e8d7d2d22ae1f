"""Starting the actor system from an edge process, and the edge's two thespian contexts.

Both edges (the daemon's socket and `nbstage mcp`'s stdio) start the same kind of
system: thespian's Queue base under spawn, which opens no network listener.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
from datetime import timedelta
from pathlib import Path
from typing import Any

from nbstage.actors.thespian_tweaks import EDGE_PID_ENV

log = logging.getLogger("nbstage.edge")

BASE = "multiprocQueueBase"
CAPABILITIES = {"Process Startup Method": "spawn"}


def start_actor_system(logs_dir: Path) -> Any:
    """Start this process's actor system; its actors log to logs/actors.log.

    Every actor process inherits NBSTAGE_EDGE_PID, which lets the actor admin end the
    whole system if this process dies, and lets tests find every process of it.
    """
    from thespian.actors import ActorSystem

    from nbstage.entrypoints.logs import actor_log_config

    os.environ[EDGE_PID_ENV] = str(os.getpid())
    return ActorSystem(BASE, CAPABILITIES, logDefs=actor_log_config(logs_dir))


class ActorBridge:
    """The two thespian contexts the edge uses, each on its own thread."""

    def __init__(self, system: Any, deliver: Any) -> None:
        self._system = system
        self._deliver = deliver
        self._outbox: queue.SimpleQueue[tuple[Any, Any] | None] = queue.SimpleQueue()
        self._stopped = threading.Event()
        self._listener = threading.Thread(target=self._listen, name="edge-listen", daemon=True)
        self._sender = threading.Thread(target=self._send, name="edge-send", daemon=True)
        self._first: tuple[Any, Any] | None = None

    def start(self, first_address: Any, first_message: Any) -> None:
        """Start both threads; ``first_message`` goes out from the listener's own context."""
        self._first = (first_address, first_message)
        self._listener.start()
        self._sender.start()

    def tell(self, address: Any, message: Any) -> None:
        self._outbox.put((address, message))

    def stop(self) -> None:
        self._stopped.set()
        self._outbox.put(None)
        self._sender.join(timeout=5)
        self._listener.join(timeout=5)

    def _listen(self) -> None:
        with self._system.private() as ctx:
            ctx.tell(*self._first)
            while not self._stopped.is_set():
                message = ctx.listen(timedelta(milliseconds=200))
                if message is None:
                    continue
                try:
                    self._deliver(message)
                except Exception:
                    log.exception("the edge could not take %s", type(message).__name__)

    def _send(self) -> None:
        with self._system.private() as ctx:
            while (item := self._outbox.get()) is not None:
                ctx.tell(*item)
