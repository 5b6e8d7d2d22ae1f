"""The Lab edge's daemon link reads a refusal's code once, where the frame is decoded."""

from __future__ import annotations

import pytest

from nbstage.entrypoints.lab.room_link import refused
from nbstage.protocol.common.errors import ErrorCode


def test_a_refusal_keeps_its_code_as_the_enum() -> None:
    error = refused({"code": "unknown_request", "message": "unknown request type 'x'"})
    assert error.code is ErrorCode.UNKNOWN_REQUEST
    assert error.message == "unknown request type 'x'"
    assert "unknown_request" in repr(error)


@pytest.mark.parametrize(
    "error",
    [None, "no", {"code": "no_such_code", "message": "m"}, {"code": "internal"}, {"message": 3}],
)
def test_a_malformed_refusal_is_a_bad_reply_that_can_be_shown(error: object) -> None:
    made = refused(error)
    assert made.code is ErrorCode.BAD_REPLY
    assert made.message.startswith("the daemon sent a malformed refusal")
    assert "malformed refusal" in repr(made)
