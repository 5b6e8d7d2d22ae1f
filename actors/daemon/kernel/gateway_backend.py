"""A kernel behind a Jupyter Kernel Gateway, beside the local JupyterBackend (issue 26).

The Kernel actor drives it as it drives a local kernel: ``start``, ``restart`` and
``shutdown`` block (bounded) and run on the edge's worker threads; ``execute``,
``request_info``, ``interrupt``, ``drain`` and ``is_alive`` return at once on the actor's
thread. The gateway's websocket is read on a ``LoopThread`` of the backend's own, which
queues each message for the actor's side and writes a byte to a pipe when none is pending:
the pipe's read end is what ``wake_fds`` gives the edge to watch, as a local kernel's
channel sockets are. The queue has no bound, so the loop never waits on the actor (a
waiting loop would answer no ping, and the host would close the channels).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import uuid
from collections import deque
from collections.abc import Coroutine, Iterator
from datetime import UTC, datetime
from typing import Any, TypeVar

import orjson

from nbstage.actors.daemon.kernel.gateway_client import (
    CALL_SECS,
    START_SECS,
    GatewayClient,
    GatewayError,
    LoopThread,
)
from nbstage.actors.daemon.kernel.gateway_keepalive import KeepalivePolicy, KeptAlive, keep_alive
from nbstage.actors.daemon.kernel.kernel_backend_events import KernelEvent
from nbstage.actors.daemon.kernel.kernel_messages import iopub_event, shell_event
from nbstage.entrypoints.common.kept_tasks import start_kept
from nbstage.protocol.common.frozen import frozen
from nbstage.protocol.common.kernel_hosts import KernelHost
from nbstage.protocol.daemon_actors.kernel_facts import EnvironmentView, EnvSource

log = logging.getLogger("nbstage.kernel")

PROTOCOL_VERSION = "5.3"

ANSWER_SECS = CALL_SECS
"""How long a host may take to answer ``GET /api`` before a start. A gateway answers it
at once, even while it starts other kernels, whereas it answers the start only once the
kernel is up (``START_SECS``): so a host that takes connections and answers nothing is
told apart from a slow kernel within this bound. (2 s, the health probe's bound, was
tried first: a gateway starting 11 kernels at once on a busy 2-core machine was slower.)"""

T = TypeVar("T")


@frozen
class HostPlacement:
    """Where the kernel runs, as the Kernel actor reports it when the kernel is ready."""

    view: EnvironmentView


class GatewayBackend:
    """One kernel on one kernel host. ``pid`` is None: the process is the host's."""

    def __init__(self, host: KernelHost, kernel_name: str) -> None:
        self.host = host
        self.kernel_name = kernel_name
        self.kernel_id: str | None = None
        self.pid: int | None = None
        self.placement = HostPlacement(EnvironmentView(EnvSource.HOST, host=host.name))
        self.lost: str | None = None
        """Why the kernel's channels closed, once they closed without being asked to."""
        self._client = GatewayClient(host)
        self._session = uuid.uuid4().hex
        self._io = LoopThread(f"gateway-{host.name}")
        self._ws: KeptAlive | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        """The channels' reader and keepalive (held: the loop keeps only weak references)."""
        self._alive = False
        self._closing = False
        self._inbox: deque[bytes] = deque()
        """Messages the websocket reader handed over, oldest first; ``drain`` takes them."""
        self._wake_read, self._wake_write = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self._signalled = False
        """A wake byte is in the pipe and not drained yet: the reader writes one only then."""

    # --- blocking, on a worker thread -----------------------------------------------------

    def start(self, working_dir: str | None) -> str:
        """Start the kernel on the host and open its channels; returns the first
        kernel_info request's msg_id. (``working_dir`` is the daemon machine's: the kernel
        runs in the gateway's own.)"""
        try:
            self._answering()
            self.kernel_id = self._bounded(
                self._client.start_kernel(self.kernel_name), START_SECS, "starting a kernel"
            )
            log.info("kernel %s started on host %s", self.kernel_id, self.host.name)
            self._bounded(self._open(), START_SECS, "opening the kernel's channels")
        except BaseException:
            self.shutdown()
            raise
        return self.request_info()

    def _answering(self) -> None:
        """Blocking: the host answers ``GET /api`` with this token, or GatewayError says how
        it did not (the token refused, the certificate untrusted, no answer in time)."""
        self._bounded(self._client.version(), ANSWER_SECS, "GET /api, before a kernel start,")

    def restart(self) -> str:
        """Restart the kernel on the host and open fresh channels; returns the new
        kernel_info request's msg_id."""
        assert self.kernel_id is not None
        self._io.call(self._close_channels(), CALL_SECS)
        self._bounded(self._client.restart(self.kernel_id), START_SECS, "restarting")
        self._bounded(self._open(), START_SECS, "opening the kernel's channels")
        for _ in self.drain():
            pass
        return self.request_info()

    def shutdown(self) -> None:
        """Close the channels and delete the kernel on the host, each bounded; a host that
        does not answer is logged, and the backend is closed all the same."""
        self._closing = True
        try:
            if not self._io.loop.is_closed():
                self._io.call(self._close_channels(), CALL_SECS)
                if self.kernel_id is not None:
                    self._bounded(self._client.shutdown(self.kernel_id), CALL_SECS, "shutting down")
        except (GatewayError, TimeoutError) as exc:
            log.warning("kernel %s on host %s: %s", self.kernel_id, self.host.name, exc)
        finally:
            self._alive = False
            self._io.stop()
            os.close(self._wake_read)
            os.close(self._wake_write)

    def _bounded(self, work: Coroutine[Any, Any, T], bound: float, what: str) -> T:
        """``work`` on the loop, waited for at most ``bound`` seconds; a wait that runs out
        is a GatewayError naming the host and the step."""
        try:
            return self._io.call(work, bound)
        except TimeoutError:
            raise GatewayError(
                f"kernel host {self.host.name!r} ({self.host.url}): {what} got no answer "
                f"in {bound:g} s"
            ) from None

    # --- on the loop thread ---------------------------------------------------------------

    async def _open(self) -> None:
        assert self.kernel_id is not None
        ws = await self._client.channels(self.kernel_id, self._session, START_SECS)
        self._ws, self._alive, self.lost = ws, True, None
        policy = KeepalivePolicy(silence=self.host.silence_secs)
        for work in (self._read(ws), keep_alive(ws, policy)):
            start_kept(self._tasks, work)

    async def _close_channels(self) -> None:
        ws, self._ws = self._ws, None
        for task in list(self._tasks):
            task.cancel()
        if ws is not None:
            ws.close()

    async def _read(self, ws: KeptAlive) -> None:
        while (message := await ws.read_message()) is not None:
            if isinstance(message, str):
                self._hand_over(message.encode())
        if ws is self._ws and not self._closing:
            reason = ws.lost or ws.close_reason
            reason = reason or (
                f"code {ws.close_code}" if ws.close_code else "the host closed the connection"
            )
            self.lost = f"the channels to kernel host {self.host.name!r} closed ({reason})"
            log.warning("kernel %s: %s", self.kernel_id, self.lost)
            self._alive = False
            self._hand_over(b"")

    def _hand_over(self, raw: bytes) -> None:
        """Queue ``raw`` for ``drain`` and wake the actor's side, unless a wake is pending."""
        self._inbox.append(raw)
        if not self._signalled:
            self._signalled = True
            with contextlib.suppress(BlockingIOError):
                os.write(self._wake_write, b"!")

    def _write(self, data: bytes) -> None:
        ws = self._ws
        if ws is None:
            return
        try:
            sent = ws.write_message(data.decode())
        except Exception as exc:
            log.warning("kernel %s: a message was not sent: %s", self.kernel_id, exc)
            return
        sent.add_done_callback(lambda f: f.cancelled() or f.exception())

    async def _quietly(self, work: Coroutine[Any, Any, Any], what: str) -> None:
        try:
            await work
        except GatewayError as exc:
            log.warning("kernel %s: %s failed: %s", self.kernel_id, what, exc)

    # --- at once, on the actor's thread ---------------------------------------------------

    def _send(self, channel: str, msg_type: str, content: dict[str, Any]) -> str:
        msg_id = uuid.uuid4().hex
        header = {
            "msg_id": msg_id,
            "msg_type": msg_type,
            "username": "nbstage",
            "session": self._session,
            "date": datetime.now(UTC).isoformat(),
            "version": PROTOCOL_VERSION,
        }
        msg = {
            "header": header,
            "parent_header": {},
            "metadata": {},
            "content": content,
            "channel": channel,
            "buffers": [],
        }
        self._io.loop.call_soon_threadsafe(self._write, orjson.dumps(msg))
        return msg_id

    def request_info(self) -> str:
        return self._send("shell", "kernel_info_request", {})

    def execute(self, code: str) -> str:
        content = {
            "code": code,
            "silent": False,
            "store_history": True,
            "user_expressions": {},
            "allow_stdin": False,
            "stop_on_error": False,
        }
        return self._send("shell", "execute_request", content)

    def ask(self, request_type: str, content: dict[str, Any]) -> str:
        """Send a shell request that is no run (a completion, an inspection)."""
        return self._send("shell", request_type, content)

    def wake_fds(self) -> list[int]:
        return [self._wake_read]

    def drain(self) -> Iterator[KernelEvent]:
        """Every message already handed over, without blocking, one at a time. The pipe is
        emptied first and the flag cleared after it, then the queue taken: a message handed
        over meanwhile is taken now or writes a wake of its own. (Cleared the other way
        round, a wake written between the two was read here and lost with the flag left
        set, and no later message woke the actor: about one execute in 400, until the
        actor's next tick.)"""
        with contextlib.suppress(BlockingIOError, OSError):
            while os.read(self._wake_read, 4096):
                pass
        self._signalled = False
        while self._inbox:
            raw = self._inbox.popleft()
            if not raw:
                continue
            msg = orjson.loads(raw)
            channel = msg.get("channel")
            if channel == "iopub":
                event = iopub_event(msg)
                if event is not None:
                    yield event
            elif channel == "shell":
                yield shell_event(msg)

    def is_alive(self) -> bool:
        return self._alive

    def interrupt(self) -> None:
        """Ask the host to interrupt the kernel, without waiting for its answer."""
        if self.kernel_id is not None:
            work = self._client.interrupt(self.kernel_id)
            with contextlib.suppress(RuntimeError):
                self._io.spawn(self._quietly(work, "interrupting"))
