"""kernel_backend's reading of kernel messages: dates left as the strings they were sent as,
and a drain that takes what is queued without blocking."""

from __future__ import annotations

from types import SimpleNamespace

import zmq
from jupyter_client.session import DELIM, Session

from nbstage.actors.daemon.kernel import kernel_backend
from tests.support import wait_until


def test_a_deserialised_message_keeps_its_dates_as_strings() -> None:
    assert kernel_backend.jupyter_session.extract_dates is kernel_backend._dates_as_sent
    session = Session(key=b"secret")
    sent = session.msg("status", {"execution_state": "idle"}, parent=session.msg_header("x"))
    parts = session.serialize(sent)
    received = session.deserialize(parts[parts.index(DELIM) + 1 :])
    assert received["content"] == {"execution_state": "idle"}
    assert isinstance(received["header"]["date"], str)
    assert received["header"]["date"].startswith(str(sent["header"]["date"].year))
    assert received["parent_header"]["msg_id"] == sent["parent_header"]["msg_id"]


def test_waiting_reads_every_queued_message_and_then_stops() -> None:
    """The drain's read: what is queued, in order, and no wait once the socket is empty."""
    context = zmq.Context.instance()
    sender, receiver = context.socket(zmq.PAIR), context.socket(zmq.PAIR)
    try:
        receiver.bind("inproc://nbstage-waiting")
        sender.connect("inproc://nbstage-waiting")
        session = Session(key=b"secret")
        states = ["busy", "idle"]
        for state in states:
            session.send(sender, "status", {"execution_state": state})
        channel = SimpleNamespace(socket=receiver, session=session)
        got: list[str] = []

        def drained_both() -> bool:
            got.extend(m["content"]["execution_state"] for m in kernel_backend._waiting(channel))
            return len(got) >= len(states)

        wait_until(drained_both, 5, "both messages to be read")
        assert got == states
        assert list(kernel_backend._waiting(channel)) == []
    finally:
        sender.close(linger=0)
        receiver.close(linger=0)
