"""An execution in flight when its daemon stopped is reported lost (issue 11 §10): the rule
that reads executions/, as a table, and the message the agent gets."""

from __future__ import annotations

import time
from typing import Any

import pytest

from nbstage.actors.daemon.room.executions import (
    Execution,
    LostWithDaemon,
    NoRecord,
    StoredView,
    live_record,
    lost_message,
    stored_execution,
)
from nbstage.protocol.daemon_actors.kernel_facts import ExecutionStatus
from nbstage.protocol.daemon_actors.rooms import DaemonRun, EarlierDaemon

NOW = DaemonRun(200, 2000.5)
BEFORE = DaemonRun(100, 1000.25)
LONG_AGO = DaemonRun(50, 500.0)
BEFORE_SEEN = EarlierDaemon(BEFORE, 1999.75)


def live(run: DaemonRun | None, status: ExecutionStatus = ExecutionStatus.RUNNING) -> dict:
    record = Execution("e-1", "c-1", status)
    if run is None:
        return record.to_wire()
    return live_record(record, run)


FINISHED = Execution("e-1", "c-1", ExecutionStatus.DONE, 3, [{"output_type": "stream"}])

CASES: list[tuple[str, dict[str, Any] | None, EarlierDaemon | None, object]] = [
    ("no record", None, BEFORE_SEEN, NoRecord()),
    ("finished", FINISHED.to_wire(), BEFORE_SEEN, StoredView(FINISHED.to_wire())),
    (
        "finished, with the run that queued it",
        live_record(FINISHED, BEFORE),
        BEFORE_SEEN,
        StoredView(FINISHED.to_wire()),
    ),
    ("running under the daemon before", live(BEFORE), BEFORE_SEEN, LostWithDaemon(1999.75, "c-1")),
    (
        "queued under the daemon before",
        live(BEFORE, ExecutionStatus.QUEUED),
        BEFORE_SEEN,
        LostWithDaemon(1999.75, "c-1"),
    ),
    ("running under an older daemon", live(LONG_AGO), BEFORE_SEEN, LostWithDaemon(None, "c-1")),
    ("running, no earlier daemon known", live(BEFORE), None, LostWithDaemon(None, "c-1")),
    ("running, naming no daemon", live(None), BEFORE_SEEN, LostWithDaemon(None, "c-1")),
    ("running under this daemon, its room gone", live(NOW), BEFORE_SEEN, NoRecord()),
]


@pytest.mark.parametrize(
    ("record", "earlier", "expected"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_what_a_stored_record_says(
    record: dict[str, Any] | None, earlier: EarlierDaemon | None, expected: object
) -> None:
    assert stored_execution(record, NOW, earlier) == expected


def test_the_message_says_when_and_what_to_do() -> None:
    at = time.mktime((2026, 12, 1, 14, 5, 9, 0, 0, -1))
    assert lost_message("e-1", at, "c-1") == (
        "execution e-1 was lost when the daemon stopped at 14:05:09; run the cell again "
        'with execute_cell(cell_id="c-1")'
    )
    assert lost_message("e-1", None, "c-1") == (
        "execution e-1 was lost when the daemon stopped; run the cell again with "
        'execute_cell(cell_id="c-1")'
    )
