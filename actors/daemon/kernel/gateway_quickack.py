"""Socket options for a kernel's channels websocket: no Nagle on our side, no delayed ACKs
on our side (issue 26's first budget; docs/adr/0007-kernel-hosts.md, "Latency").

A gateway answers one execute with several small websocket frames (status busy, the
input, the result, the reply, status idle), written one at a time on a socket with Nagle
on. Nagle holds each small frame until the previous one is acknowledged, and a Linux
receiver that has just sent data (the request) delays its ACKs by up to 40 ms: each
execute then pays that delay once or twice. ``TCP_QUICKACK`` makes the receiver ACK at
once, but Linux clears it again as the connection goes back and forth, so it is set again
after every read of the socket.

Where the platform has no ``TCP_QUICKACK`` (not Linux), only ``TCP_NODELAY`` is set.
"""

from __future__ import annotations

import contextlib
import logging
import socket
from collections.abc import Callable
from typing import Protocol

log = logging.getLogger("nbstage.kernel")

QUICKACK: int | None = getattr(socket, "TCP_QUICKACK", None)


class OptionSocket(Protocol):
    def setsockopt(self, level: int, option: int, value: int, /) -> None: ...


class ReadingStream(Protocol):
    """The part of tornado's ``IOStream`` this module touches."""

    socket: OptionSocket

    def read_from_fd(self, buf: bytearray | memoryview) -> int | None: ...


def ack_now(sock: OptionSocket) -> None:
    """ACK whatever has arrived at once, and leave quick-ACK mode on for now."""
    if QUICKACK is None:
        return
    with contextlib.suppress(OSError):  # closed meanwhile: the next read says so
        sock.setsockopt(socket.IPPROTO_TCP, QUICKACK, 1)


def acking_reader(
    read: Callable[[bytearray | memoryview], int | None], sock: OptionSocket
) -> Callable[[bytearray | memoryview], int | None]:
    """``read``, after which quick-ACK mode is armed again whenever bytes came in."""

    def read_and_ack(buf: bytearray | memoryview) -> int | None:
        got = read(buf)
        if got:
            ack_now(sock)
        return got

    return read_and_ack


def tune(stream: ReadingStream) -> None:
    """Send small writes at once and ACK every read at once, on ``stream``'s socket."""
    sock = stream.socket
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    except OSError as exc:
        log.debug("TCP_NODELAY not set on a gateway socket: %s", exc)
        return
    if QUICKACK is None:
        return
    ack_now(sock)
    # tornado reads the socket through this one method (read_from_fd); each read re-arms.
    stream.read_from_fd = acking_reader(stream.read_from_fd, sock)  # type: ignore[method-assign]
