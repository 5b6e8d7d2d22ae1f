"""A Room's book of executions: status, outputs, the cell each runs, and who waits.

Pure bookkeeping with no actor or I/O, so the Room's handlers stay short and the
rules (one live execution per cell, waiters answered once) are testable alone.
"""

from __future__ import annotations

import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from nbstage.actors.document import append_output
from nbstage.protocol.codec import to_wire
from nbstage.protocol.edge import Origin
from nbstage.protocol.kernels import ExecutionStatus
from nbstage.protocol.replies import ExecutionView

REMEMBERED_EXECUTIONS = 256


@dataclass
class Execution:
    execution_id: str
    cell_id: str
    status: ExecutionStatus = ExecutionStatus.QUEUED
    execution_count: int | None = None
    outputs: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None

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
    def __init__(self) -> None:
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

    def started(self, execution_id: str) -> Execution | None:
        record = self._records.get(execution_id)
        if record is not None:
            record.status = ExecutionStatus.RUNNING
        return record

    def add_outputs(
        self, execution_id: str, outputs: list[dict[str, Any]], replace: bool
    ) -> Execution | None:
        record = self._records.get(execution_id)
        if record is not None:
            if replace:
                record.outputs = []
            for output in outputs:
                append_output(record.outputs, output)
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
