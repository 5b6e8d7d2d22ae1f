"""A Room's book of executions: status, outputs, the cell each runs, and who waits.

Pure bookkeeping with no actor or I/O, so the Room's handlers stay short and the
rules (one live execution per cell, waiters answered once) are testable alone.
"""

from __future__ import annotations

import time
import uuid
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from nbstage.actors.common.output_bounds import KeptOutputs
from nbstage.protocol.common.codec import to_wire
from nbstage.protocol.common.settings import OUTPUT_LIMIT_BYTES
from nbstage.protocol.daemon.replies import ExecutionView
from nbstage.protocol.daemon_actors.edge import Origin
from nbstage.protocol.daemon_actors.kernel_facts import ExecutionStatus, OutputsDropped
from nbstage.protocol.daemon_actors.rooms import DaemonRun, EarlierDaemon

REMEMBERED_EXECUTIONS = 256


@dataclass
class Execution:
    execution_id: str
    cell_id: str
    status: ExecutionStatus = ExecutionStatus.QUEUED
    execution_count: int | None = None
    outputs: list[dict[str, Any]] = field(default_factory=list)
    """What ``kept`` holds, as nbformat outputs."""
    error: str | None = None
    kept: KeptOutputs | None = field(default=None, repr=False, compare=False)

    def report(self) -> ExecutionView:
        return ExecutionView(
            self.execution_id,
            self.cell_id,
            self.status,
            self.execution_count,
            list(self.outputs),
            self.error,
        )

    def to_wire(self) -> dict[str, Any]:
        """The record kept in executions/, as the daemon reports it."""
        return to_wire(self.report())


class ExecutionBook:
    def __init__(self, output_limit: int = OUTPUT_LIMIT_BYTES) -> None:
        self.output_limit = output_limit
        """The most output one execution keeps (settings' output_limit_bytes)."""
        self._records: OrderedDict[str, Execution] = OrderedDict()
        self._live_by_cell: dict[str, str] = {}
        self._waiters: dict[str, list[Origin]] = {}

    def queue(self, cell_id: str) -> tuple[Execution, bool]:
        """The cell's live execution if it has one (False), else a new queued one (True)."""
        live = self._live_by_cell.get(cell_id)
        if live is not None:
            return self._records[live], False
        record = Execution(str(uuid.uuid4()), cell_id)
        self._records[record.execution_id] = record
        self._live_by_cell[cell_id] = record.execution_id
        while len(self._records) > REMEMBERED_EXECUTIONS:
            oldest = next(iter(self._records.values()))
            if not oldest.status.finished:
                break
            self._records.popitem(last=False)
        return record, True

    def get(self, execution_id: str) -> Execution | None:
        return self._records.get(execution_id)

    def live_ids(self) -> list[str]:
        return list(self._live_by_cell.values())

    def live_cells(self) -> frozenset[str]:
        """The cells queued or running (Jupyter shows them as ``[*]``)."""
        return frozenset(self._live_by_cell)

    def started(self, execution_id: str) -> Execution | None:
        record = self._records.get(execution_id)
        if record is not None:
            record.status = ExecutionStatus.RUNNING
        return record

    def add_outputs(
        self,
        execution_id: str,
        outputs: list[dict[str, Any]],
        replace: bool,
        dropped: OutputsDropped | None = None,
        tail: Sequence[dict[str, Any]] = (),
    ) -> Execution | None:
        """A batch from the kernel: ``outputs``, then ``dropped``, then ``tail``, kept within
        the limit with streams joined; ``replace`` drops what came before."""
        record = self._records.get(execution_id)
        if record is not None:
            if replace or record.kept is None:
                record.kept = KeptOutputs(self.output_limit)
            record.kept.extend(outputs, dropped, tail)
            record.outputs = record.kept.outputs()
        return record

    def finish(
        self,
        execution_id: str,
        status: ExecutionStatus,
        execution_count: int | None = None,
        error: str | None = None,
    ) -> Execution | None:
        record = self._records.get(execution_id)
        if record is None or record.status.finished:
            return None
        record.status = status
        record.execution_count = execution_count
        record.error = error
        if self._live_by_cell.get(record.cell_id) == execution_id:
            del self._live_by_cell[record.cell_id]
        return record

    def wait(self, execution_id: str, origin: Origin) -> None:
        self._waiters.setdefault(execution_id, []).append(origin)

    def release_waiters(self, execution_id: str) -> list[Origin]:
        return self._waiters.pop(execution_id, [])

    def release_waiter(self, execution_id: str, origin: Origin) -> bool:
        """Remove one waiter; True if it was still waiting."""
        waiting = self._waiters.get(execution_id, [])
        if origin not in waiting:
            return False
        waiting.remove(origin)
        if not waiting:
            self._waiters.pop(execution_id, None)
        return True


RUN_KEY = "daemon"
"""The key of a live record that names the daemon incarnation that queued it."""


def live_record(record: Execution, run: DaemonRun) -> dict[str, Any]:
    """What executions/ holds while an execution is queued or running; the finished record
    replaces it."""
    return {**record.to_wire(), RUN_KEY: [run.pid, run.started_at]}


@dataclass(frozen=True)
class StoredView:
    view: dict[str, Any]


@dataclass(frozen=True)
class LostWithDaemon:
    at: float | None
    """When the daemon that ran it was last seen alive; None when that is not known."""
    cell_id: str
    """The cell it ran, which the agent can run again."""


@dataclass(frozen=True)
class NoRecord:
    pass


def stored_execution(
    record: dict[str, Any] | None, current: DaemonRun, earlier: EarlierDaemon | None
) -> StoredView | LostWithDaemon | NoRecord:
    """What a record in executions/ says of an execution no resident room holds.

    A finished record is the answer. A live one names the incarnation that queued it:
    another daemon's means that daemon stopped or was killed with it in flight. A live
    record of this daemon's own has a room that is gone, and says nothing more.
    """
    if record is None:
        return NoRecord()
    view = {k: v for k, v in record.items() if k != RUN_KEY}
    if ExecutionStatus(record["status"]).finished:
        return StoredView(view)
    queued_by = record.get(RUN_KEY)
    run = DaemonRun(*queued_by) if queued_by is not None else None
    if run == current:
        return NoRecord()
    cell_id = str(record.get("cell_id", ""))
    if earlier is not None and run == earlier.run:
        return LostWithDaemon(earlier.last_alive, cell_id)
    return LostWithDaemon(None, cell_id)


def lost_message(execution_id: str, at: float | None, cell_id: str) -> str:
    when = f" at {time.strftime('%H:%M:%S', time.localtime(at))}" if at is not None else ""
    return (
        f"execution {execution_id} was lost when the daemon stopped{when}; run the cell "
        f'again with execute_cell(cell_id="{cell_id}")'
    )
