"""The gateway channels' keepalive (actors/daemon/kernel/gateway_keepalive.py): the decision
as a table and as a walk through time, then the real thing on loopback against a websocket
server that answers and one that has gone silent."""

from __future__ import annotations

import asyncio
import base64
import hashlib

import pytest
from tornado.httpclient import HTTPRequest
from tornado.httpserver import HTTPServer
from tornado.netutil import bind_sockets
from tornado.web import Application
from tornado.websocket import WebSocketHandler

from nbstage.actors.daemon.kernel.gateway_keepalive import (
    KeepalivePolicy,
    Lost,
    SendPing,
    Wait,
    _heard_after_reading,
    connect,
    keep_alive,
    next_step,
)

POLICY = KeepalivePolicy(every=1.0, silence=3.0)


@pytest.mark.parametrize(
    ("now", "heard_at", "pinged_at", "expected"),
    [
        pytest.param(10.0, 10.0, 10.0, Wait(1.0), id="just pinged and heard: wait for the next"),
        pytest.param(11.0, 10.0, 10.0, SendPing(), id="a ping is due"),
        pytest.param(10.4, 10.2, 10.0, Wait(0.6), id="heard meanwhile: still ping on time"),
        pytest.param(12.5, 10.0, 12.0, Wait(0.5), id="silent 2.5 s: wake when the silence is due"),
        pytest.param(13.0, 10.0, 12.0, Lost(3.0), id="silent 3 s: lost"),
        pytest.param(20.0, 10.0, 12.0, Lost(10.0), id="woken late: lost, with the silence"),
        pytest.param(13.0, 12.9, 12.0, SendPing(), id="heard just before the deadline: not lost"),
    ],
)
def test_next_step(now: float, heard_at: float, pinged_at: float, expected: object) -> None:
    step = next_step(now, heard_at, pinged_at, POLICY)
    if isinstance(expected, Wait):
        assert isinstance(step, Wait)
        assert step.secs == pytest.approx(expected.secs)
    else:
        assert step == expected


def walk(answers_until: float, end: float, rtt: float = 0.05) -> float | None:
    """Drive the decision as the keepalive loop does, against a host that answers each
    ping after ``rtt`` until ``answers_until``; when it was declared lost, if it was."""
    now, heard_at, pinged_at = 0.0, 0.0, 0.0
    pongs: list[float] = []
    while now < end:
        heard_at = max([heard_at, *(pong for pong in pongs if pong <= now)])
        pongs = [pong for pong in pongs if pong > now]
        step = next_step(now, heard_at, pinged_at, POLICY)
        if isinstance(step, Lost):
            return now
        if isinstance(step, SendPing):
            pinged_at = now
            if now + rtt < answers_until:
                pongs.append(now + rtt)
            continue
        assert step.secs > 0
        now += min([step.secs, *(pong - now for pong in pongs)])
    return None


def test_a_host_that_answers_is_never_lost() -> None:
    assert walk(answers_until=1e9, end=600.0) is None
    assert walk(answers_until=1e9, end=600.0, rtt=POLICY.silence - POLICY.every - 0.01) is None


@pytest.mark.parametrize("frozen_at", [0.5, 7.0, 7.04, 7.06, 7.99, 100.3])
def test_a_frozen_host_is_lost_within_the_silence(frozen_at: float) -> None:
    lost_at = walk(answers_until=frozen_at, end=frozen_at + 60)
    assert lost_at is not None
    assert lost_at - frozen_at <= POLICY.silence
    assert lost_at - frozen_at >= POLICY.silence - POLICY.every


# --- on loopback --------------------------------------------------------------------------

FAST = KeepalivePolicy(every=0.05, silence=0.3)


class Echo(WebSocketHandler):
    def on_message(self, message: str | bytes) -> None:
        self.write_message(message)


async def silent_server() -> tuple[asyncio.Server, int, asyncio.Event]:
    """A server that accepts the websocket upgrade, then reads on and never says a word:
    a host whose process is frozen while its sockets stay open. The event is set once it
    has seen the client go and closed its side."""
    ended = asyncio.Event()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        key = next(
            line.split(b":", 1)[1].strip()
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"sec-websocket-key:")
        )
        magic = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
        accept = base64.b64encode(hashlib.sha1(key + magic).digest())
        writer.write(
            b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
            b"Connection: Upgrade\r\nSec-WebSocket-Accept: " + accept + b"\r\n\r\n"
        )
        await writer.drain()
        while await reader.read(4096):
            pass
        writer.close()
        await writer.wait_closed()
        ended.set()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    return server, server.sockets[0].getsockname()[1], ended


def request(port: int) -> HTTPRequest:
    return HTTPRequest(
        f"ws://127.0.0.1:{port}/channels",
        headers={"Authorization": "token t"},
        connect_timeout=5,
        request_timeout=5,
    )


def test_a_silent_host_is_cut_off_and_the_reader_told_why() -> None:
    async def run() -> tuple[float, str | None]:
        server, port, server_done = await silent_server()
        ws = await connect(request(port), 1 << 20)
        loop = asyncio.get_running_loop()
        began = loop.time()
        watch = loop.create_task(keep_alive(ws, FAST))
        ended = await asyncio.wait_for(ws.read_message(), 5)
        took = loop.time() - began
        await watch
        ws.close()
        await asyncio.wait_for(server_done.wait(), 5)
        server.close()
        await server.wait_closed()
        assert ended is None
        return took, ws.lost

    took, lost = asyncio.run(run())
    assert FAST.silence <= took < FAST.silence + 1.0, "closed at once, no close handshake"
    assert lost is not None
    assert "answered nothing" in lost


def test_a_host_that_answers_pings_stays_connected() -> None:
    async def run() -> str | bytes | None:
        sockets = bind_sockets(0, "127.0.0.1")
        server = HTTPServer(Application([("/channels", Echo)]))
        server.add_sockets(sockets)
        ws = await connect(request(sockets[0].getsockname()[1]), 1 << 20)
        watch = asyncio.get_running_loop().create_task(keep_alive(ws, FAST))
        await asyncio.sleep(FAST.silence * 4)
        assert ws.lost is None
        assert not watch.done()
        await ws.write_message("still here")
        echoed = await asyncio.wait_for(ws.read_message(), 5)
        ws.close()
        await asyncio.wait_for(watch, 5)
        server.stop()
        return echoed

    assert asyncio.run(run()) == "still here"


class Heard:
    """What ``_heard_after_reading`` looks at: when the host was last heard."""

    def __init__(self) -> None:
        self.heard_at = 1.0


@pytest.mark.parametrize(
    ("arrives", "expected"),
    [
        pytest.param(True, True, id="a pong already read in: not lost"),
        pytest.param(False, False, id="nothing came: lost"),
    ],
)
def test_frames_already_in_are_read_before_giving_up(arrives: bool, expected: bool) -> None:
    async def run() -> bool:
        ws = Heard()
        if arrives:
            asyncio.get_running_loop().call_soon(setattr, ws, "heard_at", 9.0)
        return await _heard_after_reading(ws, since=5.0)  # type: ignore[arg-type]

    assert asyncio.run(run()) is expected
