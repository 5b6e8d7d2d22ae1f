"""kernel_backend leaves the dates of kernel messages as the strings they were sent as."""

from __future__ import annotations

from jupyter_client.session import DELIM, Session

from nbstage.actors import kernel_backend


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
