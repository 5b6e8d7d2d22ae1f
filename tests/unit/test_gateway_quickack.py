"""The gateway channels' socket options (actors/daemon/kernel/gateway_quickack.py): quick-ACK
armed again after every read that brought bytes, and nothing worse than a log line where an
option cannot be set."""

from __future__ import annotations

import asyncio
import socket

import pytest
from tornado.iostream import IOStream

from nbstage.actors.daemon.kernel import gateway_quickack as qa

LINUX_ONLY = pytest.mark.skipif(qa.QUICKACK is None, reason="TCP_QUICKACK is Linux's")


class FakeSocket:
    def __init__(self, fails: bool = False) -> None:
        self.options: list[tuple[int, int, int]] = []
        self.fails = fails

    def setsockopt(self, level: int, option: int, value: int, /) -> None:
        if self.fails:
            raise OSError(9, "Bad file descriptor")
        self.options.append((level, option, value))


class FakeStream:
    def __init__(self, sock: FakeSocket, reads: list[int | None]) -> None:
        self.socket = sock
        self._reads = reads

    def read_from_fd(self, buf: bytearray | memoryview) -> int | None:
        return self._reads.pop(0)


@LINUX_ONLY
@pytest.mark.parametrize(
    ("got", "acks"),
    [
        pytest.param(5, 1, id="bytes came: quick-ACK armed again"),
        pytest.param(None, 0, id="nothing to read: nothing set"),
        pytest.param(0, 0, id="end of stream: nothing set"),
    ],
)
def test_a_read_arms_quickack_only_when_bytes_came(got: int | None, acks: int) -> None:
    sock = FakeSocket()
    read = qa.acking_reader(lambda buf: got, sock)
    assert read(bytearray(8)) == got
    assert sock.options == [(socket.IPPROTO_TCP, qa.QUICKACK, 1)] * acks


@LINUX_ONLY
def test_tune_sets_nodelay_then_quickack_and_wraps_the_reads() -> None:
    sock = FakeSocket()
    stream = FakeStream(sock, [3, None, 7])
    qa.tune(stream)
    quick = (socket.IPPROTO_TCP, qa.QUICKACK, 1)
    assert sock.options == [(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1), quick]
    assert [stream.read_from_fd(bytearray(8)) for _ in range(3)] == [3, None, 7]
    assert sock.options[2:] == [quick, quick]


def test_without_quickack_only_nodelay_is_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(qa, "QUICKACK", None)
    sock = FakeSocket()
    stream = FakeStream(sock, [4])
    reader = stream.read_from_fd
    qa.tune(stream)
    assert sock.options == [(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)]
    assert stream.read_from_fd == reader
    qa.ack_now(sock)
    assert len(sock.options) == 1


def test_a_closed_socket_is_left_alone() -> None:
    sock = FakeSocket(fails=True)
    stream = FakeStream(sock, [4])
    reader = stream.read_from_fd
    qa.tune(stream)
    qa.ack_now(sock)
    assert stream.read_from_fd == reader


@LINUX_ONLY
def test_a_real_stream_keeps_quickack_on_through_an_exchange() -> None:
    """Over loopback, after the back and forth that puts Linux in delayed-ACK mode, the
    tuned socket still reports quick-ACK on, and every byte arrives."""
    assert qa.QUICKACK is not None
    quick = qa.QUICKACK

    async def exchange() -> tuple[list[int], bytes, int]:
        server = socket.create_server(("127.0.0.1", 0))
        client = socket.create_connection(server.getsockname())
        peer, _ = server.accept()
        server.close()
        stream = IOStream(client)
        qa.tune(stream)
        got, states = b"", []
        for round_ in range(5):
            peer.sendall(b"%d" % round_)
            got += await stream.read_bytes(1)
            states.append(client.getsockopt(socket.IPPROTO_TCP, quick))
            await stream.write(b"r")
            assert peer.recv(1) == b"r"
        nodelay = client.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
        stream.close()
        peer.close()
        return states, got, nodelay

    states, got, nodelay = asyncio.run(exchange())
    assert got == b"01234"
    assert nodelay == 1
    assert states == [1] * 5
