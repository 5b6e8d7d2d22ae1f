"""kernel_wire, the daemon's reading of kernel messages: dates left as the strings they
were sent as, protocol 5 messages not adapted (older ones still are), and a drain that
takes what is queued without blocking."""

from __future__ import annotations

from types import SimpleNamespace

import zmq
from jupyter_client.session import DELIM, Session

from nbstage.actors.daemon.kernel import kernel_wire
from tests.support import wait_until


def test_a_deserialised_message_keeps_its_dates_as_strings() -> None:
    assert kernel_wire.jupyter_session.extract_dates is kernel_wire._dates_as_sent
    session = Session(key=b"secret")
    sent = session.msg("status", {"execution_state": "idle"}, parent=session.msg_header("x"))
    parts = session.serialize(sent)
    received = session.deserialize(parts[parts.index(DELIM) + 1 :])
    assert received["content"] == {"execution_state": "idle"}
    assert isinstance(received["header"]["date"], str)
    assert received["header"]["date"].startswith(str(sent["header"]["date"].year))
    assert received["parent_header"]["msg_id"] == sent["parent_header"]["msg_id"]


def received_after_sending(header_changes: dict[str, object], msg_type: str, content: dict):
    session = Session(key=b"secret")
    sent = session.msg(msg_type, content)
    sent["header"].update(header_changes)
    parts = session.serialize(sent)
    return session.deserialize(parts[parts.index(DELIM) + 1 :])


def test_a_protocol_5_message_is_taken_as_sent() -> None:
    assert kernel_wire.jupyter_session.adapt is kernel_wire._adapt_older
    received = received_after_sending({"version": "5.4"}, "execute_reply", {"status": "ok"})
    assert received["header"]["version"] == "5.4"
    assert received["content"] == {"status": "ok"}


def test_a_protocol_4_message_is_still_adapted() -> None:
    """jupyter_client's adapter turns a v4 ``pyout`` into v5's ``execute_result``."""
    content = {"data": {"text/plain": "2"}, "execution_count": 1, "metadata": {}}
    received = received_after_sending({"version": "4.1"}, "pyout", content)
    assert received["header"]["msg_type"] == "execute_result"
    assert received["header"]["version"].startswith("5.")


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
            got.extend(m["content"]["execution_state"] for m in kernel_wire.waiting(channel))
            return len(got) >= len(states)

        wait_until(drained_both, 5, "both messages to be read")
        assert got == states
        assert list(kernel_wire.waiting(channel)) == []
    finally:
        sender.close(linger=0)
        receiver.close(linger=0)


def test_a_send_to_an_older_kernel_is_still_adapted_to_its_protocol() -> None:
    """``Session.send`` calls ``adapt(msg, adapt_version)`` for a kernel whose
    kernel_info named an older protocol: the v4 execute_request carries user_variables."""
    session = Session()
    content = {"code": "1", "silent": False, "store_history": True, "user_expressions": {}}
    request = session.msg("execute_request", {**content, "allow_stdin": False})
    adapted = kernel_wire.jupyter_session.adapt(request, 4)
    assert "user_variables" in adapted["content"]
    assert kernel_wire.jupyter_session.adapt(request) is request
