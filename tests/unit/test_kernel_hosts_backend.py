"""The gateway backend's hand-over, without a gateway: what the websocket reader queues
comes out of ``drain`` as the Kernel actor's typed events, and the wake pipe is readable
exactly while something waits (actors/daemon/kernel/gateway_backend.py)."""

from __future__ import annotations

import select
from collections.abc import Iterator

import orjson
import pytest

from nbstage.actors.daemon.kernel.gateway_backend import GatewayBackend
from nbstage.actors.daemon.kernel.kernel_backend_events import (
    ExecutionCounted,
    KernelWentIdle,
    OutputEmitted,
    ReplyReceived,
)
from nbstage.protocol.common.kernel_hosts import KernelHost


@pytest.fixture
def backend() -> Iterator[GatewayBackend]:
    made = GatewayBackend(KernelHost("h", "http://127.0.0.1:9", "t"), "python3")
    yield made
    made.shutdown()


def message(channel: str, msg_type: str, parent: str, **content: object) -> bytes:
    return orjson.dumps(
        {
            "channel": channel,
            "header": {"msg_type": msg_type, "msg_id": "m"},
            "parent_header": {"msg_id": parent},
            "content": content,
        }
    )


def readable(fd: int) -> bool:
    return bool(select.select([fd], [], [], 0)[0])


@pytest.mark.parametrize(
    ("raw", "events"),
    [
        pytest.param(
            message("iopub", "stream", "p", name="stdout", text="hi\n"),
            [OutputEmitted("p", {"output_type": "stream", "name": "stdout", "text": "hi\n"})],
            id="a stream",
        ),
        pytest.param(
            message("iopub", "execute_input", "p", execution_count=3),
            [ExecutionCounted("p", 3)],
            id="the count",
        ),
        pytest.param(
            message("iopub", "status", "p", execution_state="idle"),
            [KernelWentIdle("p")],
            id="idle",
        ),
        pytest.param(
            message("iopub", "status", "p", execution_state="busy"), [], id="busy says nothing"
        ),
        pytest.param(
            message("shell", "execute_reply", "p", status="error", ename="E", evalue="v"),
            [ReplyReceived("p", False, None, "E: v")],
            id="a failed reply",
        ),
        pytest.param(
            message("control", "interrupt_reply", "p", status="ok"), [], id="control is ignored"
        ),
        pytest.param(b"", [], id="the wake of closed channels"),
    ],
)
def test_what_the_reader_hands_over_drains_as_events(backend, raw, events) -> None:
    backend._hand_over(raw)
    assert list(backend.drain()) == events


def test_the_wake_pipe_is_readable_exactly_while_messages_wait(backend) -> None:
    (fd,) = backend.wake_fds()
    assert not readable(fd)
    first = message("iopub", "status", "a", execution_state="idle")
    backend._hand_over(first)
    backend._hand_over(message("iopub", "status", "b", execution_state="idle"))
    assert readable(fd)
    assert list(backend.drain()) == [KernelWentIdle("a"), KernelWentIdle("b")]
    assert not readable(fd), "drained: no wake is left behind"
    backend._hand_over(first)
    assert readable(fd), "a message after a drain wakes again"


def test_a_message_handed_over_during_a_drain_is_taken_or_wakes_again(backend) -> None:
    (fd,) = backend.wake_fds()
    backend._hand_over(message("iopub", "status", "a", execution_state="idle"))
    draining = backend.drain()
    assert next(draining) == KernelWentIdle("a")
    backend._hand_over(message("iopub", "status", "b", execution_state="idle"))
    assert readable(fd), "the wake was cleared when the drain began, so this one wakes"
    assert list(draining) == [KernelWentIdle("b")]


def test_before_its_channels_open_it_is_not_alive_and_has_no_local_pid(backend) -> None:
    assert not backend.is_alive()
    assert backend.pid is None
    assert backend.placement.view.host == "h"
