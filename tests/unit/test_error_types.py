"""One exception type carries a ``(code, message)``, wherever the failure was met."""

from __future__ import annotations

import pytest

from nbstage.actors.session.daemon_link import DaemonFailure
from nbstage.entrypoints.control.daemon_client import DaemonError
from nbstage.protocol.common.errors import ErrorCode, NbstageError


@pytest.mark.parametrize("kind", [NbstageError, DaemonFailure, DaemonError])
def test_every_coded_failure_is_an_nbstage_error_with_its_code_and_message(kind) -> None:
    failure = kind(ErrorCode.NOT_FOUND, "no such cell")
    assert isinstance(failure, NbstageError)
    assert (failure.code, failure.message) == (ErrorCode.NOT_FOUND, "no such cell")
    assert repr(failure) == f"{kind.__name__}('not_found', 'no such cell')"


def test_each_says_what_it_said_before() -> None:
    assert str(NbstageError(ErrorCode.NOT_FOUND, "no such cell")) == "no such cell"
    assert str(DaemonFailure(ErrorCode.NOT_FOUND, "no such cell")) == "no such cell"
    assert str(DaemonError(ErrorCode.NOT_FOUND, "no such cell")) == "not_found: no such cell"
