"""Noticing that a kernel host stopped answering on a kernel's channels websocket (issue
26, item 4: a lost host told within 5 s; docs/adr/0007-kernel-hosts.md, "Keepalive").

A host that is killed closes its sockets, and the websocket's reader sees the end at once.
A host that hangs (frozen, swapping, cut off by a network that drops packets) keeps them
open and says nothing: only silence tells. The channels ping every ``every`` seconds, and
any frame heard (a message, a pong, the host's own ping) counts as an answer; after
``silence`` seconds without one the connection is taken as lost and its socket closed at
once. (tornado's own ping timeout is not used: it closes with a handshake that waits
5 s more for a host that is not listening.) When to ping and when to give up is
``next_step``, a pure function of the clock; before giving up, frames that have already
arrived are read, so a daemon that ran this loop late does not blame the host.
"""

from __future__ import annotations

import asyncio
import logging

from tornado.httpclient import HTTPRequest
from tornado.httputil import HTTPHeaders
from tornado.websocket import WebSocketClientConnection

from nbstage.protocol.common.frozen import frozen
from nbstage.protocol.common.kernel_hosts import DEFAULT_SILENCE_SECS

log = logging.getLogger("nbstage.kernel")


@frozen
class KeepalivePolicy:
    every: float = 1.0
    """Seconds between pings."""
    silence: float = DEFAULT_SILENCE_SECS
    """Seconds without any frame from the host after which the connection is lost (a
    host's ``silence_secs``)."""


DEFAULT_KEEPALIVE = KeepalivePolicy()

READ_PASSES = 4
"""Loop passes given to frames already in the socket before silence is taken as lost (a
frame is read in a few steps: header, then payload)."""


@frozen
class SendPing:
    pass


@frozen
class Wait:
    secs: float


@frozen
class Lost:
    silent: float
    """Seconds since the host was last heard."""


KeepaliveStep = SendPing | Wait | Lost


def next_step(
    now: float, heard_at: float, pinged_at: float, policy: KeepalivePolicy = DEFAULT_KEEPALIVE
) -> KeepaliveStep:
    """What the keepalive does at ``now``: give up, ping, or sleep until one of them is due."""
    silent = now - heard_at
    if silent >= policy.silence:
        return Lost(silent)
    if now - pinged_at >= policy.every:
        return SendPing()
    return Wait(min(pinged_at + policy.every, heard_at + policy.silence) - now)


class KeptAlive(WebSocketClientConnection):
    """A channels websocket that notes when it last heard from the host."""

    heard_at: float = 0.0
    lost: str | None = None
    """Why the keepalive closed it, once it did."""

    def _heard(self) -> None:
        self.heard_at = asyncio.get_running_loop().time()

    def on_message(self, message: str | bytes):  # type: ignore[no-untyped-def]
        self._heard()
        return super().on_message(message)

    def on_pong(self, data: bytes) -> None:
        self._heard()

    def on_ping(self, data: bytes) -> None:
        self._heard()


async def connect(request: HTTPRequest, max_message_size: int) -> KeptAlive:
    """Open the websocket ``request`` names (the caller bounds the wait), heard from now."""
    request.headers = HTTPHeaders(request.headers)
    ws = KeptAlive(request, max_message_size=max_message_size)
    try:
        await ws.connect_future
    except BaseException:
        ws.close()
        raise
    ws._heard()
    return ws


async def keep_alive(ws: KeptAlive, policy: KeepalivePolicy = DEFAULT_KEEPALIVE) -> None:
    """Ping ``ws`` until it closes; close its socket when the host has been silent too long
    (the reader then sees the end, and ``ws.lost`` says why)."""
    loop = asyncio.get_running_loop()
    pinged_at = loop.time()
    while ws.protocol is not None and not ws.protocol.is_closing():
        now = loop.time()
        step = next_step(now, ws.heard_at, pinged_at, policy)
        if isinstance(step, Lost):
            if await _heard_after_reading(ws, now):
                continue
            if ws.protocol is not None:  # not closed meanwhile
                ws.lost = f"the host answered nothing for {step.silent:.1f} s"
                ws.protocol.stream.close()
            return
        if isinstance(step, SendPing):
            ws.ping()
            pinged_at = now
            continue
        await asyncio.sleep(step.secs)


async def _heard_after_reading(ws: KeptAlive, since: float) -> bool:
    """Whether a frame that had already arrived is heard once the loop has read it: a
    daemon too busy to run this loop on time wakes with the host's answer still unread."""
    for _ in range(READ_PASSES):
        await asyncio.sleep(0)
        if ws.heard_at > since:
            return True
    return False
