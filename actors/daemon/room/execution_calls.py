"""execute_cell and get_execution in the Room: the runs queued on its kernel, their
outputs, whoever waits for them, and their records on disk (executions.py keeps the
book and the records' shapes). The seat (kernel_seat.py) holds this part and ends the
runs when its kernel goes; what a run asks for comes back as actions: the Room writes
the outputs into the document (``SetOutputs``)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import orjson

from nbstage.actors.daemon.notebook import persistence
from nbstage.actors.daemon.notebook.document import Cell, Document
from nbstage.actors.daemon.room import executions
from nbstage.actors.daemon.room.actions import (
    Action,
    Answer,
    Edited,
    Fail,
    Offload,
    Send,
    SetOutputs,
    Wake,
)
from nbstage.actors.daemon.room.executions import Execution, ExecutionBook
from nbstage.actors.daemon.room.once import OnceKeys
from nbstage.actors.daemon.room.room_support import scoped_key
from nbstage.protocol.common.codec import from_wire
from nbstage.protocol.common.errors import ErrorCode, NbstageError
from nbstage.protocol.common.offload import BlockingWorkDone
from nbstage.protocol.daemon.replies import ExecutionReported, ExecutionView
from nbstage.protocol.daemon.requests import ExecuteCell, GetExecution
from nbstage.protocol.daemon_actors.edge import Origin
from nbstage.protocol.daemon_actors.kernel_facts import ExecutionStatus
from nbstage.protocol.daemon_actors.kernels import ExecutionsCancelled, OutputsArrived, RunCode
from nbstage.protocol.daemon_actors.room_followups import (
    ExecutionRecorded,
    LiveExecutionRecorded,
    StoredExecutionRead,
    WaitExpired,
)
from nbstage.protocol.daemon_actors.rooms import StartRoom

log = logging.getLogger("nbstage.room")

MAX_WAIT_SECS = 24 * 3600.0


class ExecutionCalls:
    def __init__(self) -> None:
        self.config: StartRoom | None = None
        self.book = ExecutionBook()
        self.finished_count = 0

    def start(self, config: StartRoom) -> None:
        self.config = config
        self.book.output_limit = config.settings.output_limit_bytes

    def answer_execution(self, origin: Origin, execution_id: str, wait_secs: float) -> list:
        record = self.book.get(execution_id)
        if record is None:
            where, limit = self.executions_dir, self.config.settings.max_file_bytes
            read = lambda: persistence.read_execution(where, execution_id, limit)  # noqa: E731
            return [Offload(StoredExecutionRead(execution_id, origin), read)]
        if record.status.finished:
            return [Answer(origin, ExecutionReported(record.report()))]
        if wait_secs <= 0:
            return [self.live_record(origin, record)]
        self.book.wait(execution_id, origin)
        return [Wake(min(wait_secs, MAX_WAIT_SECS), WaitExpired(execution_id, origin))]

    def wait_expired(self, expired: WaitExpired) -> list[Action]:
        if not self.book.release_waiter(expired.execution_id, expired.origin):
            return []
        return [self.live_record(expired.origin, self.book.get(expired.execution_id))]

    def live_record(self, origin: Origin, record: Execution) -> Offload:
        """The id of an execution that has not finished leaves the daemon: its live record
        lands first, so that a daemon killed from then on has it reported lost (issue 11 §10).
        An execution answered only once finished never has a live record written."""
        live = orjson.dumps(executions.live_record(record, self.config.run))
        return self._write(record.execution_id, live, answer_to=origin)

    def live_recorded(self, done: BlockingWorkDone) -> list:
        execution_id, origin = done.token.execution_id, done.token.origin
        if not done.ok:
            log.error("could not record execution %s: %s", execution_id, done.error)
        record = self.book.get(execution_id)
        if record is None:
            return self.answer_execution(origin, execution_id, 0)
        return [Answer(origin, ExecutionReported(record.report()))]

    def stored_read(self, done: BlockingWorkDone) -> list[Action]:
        return [self.stored(done)]

    def stored(self, done: BlockingWorkDone) -> Action:
        execution_id, origin = done.token.execution_id, done.token.origin
        cfg = self.config
        found = executions.stored_execution(done.result if done.ok else None, cfg.run, cfg.earlier)
        match found:
            case executions.StoredView(view):
                return Answer(origin, ExecutionReported(from_wire(ExecutionView, view)))
            case executions.LostWithDaemon(at, cell_id):
                lost = executions.lost_message(execution_id, at, cell_id)
                return Fail(origin, NbstageError(ErrorCode.EXECUTION_LOST, lost))
        missing = f"No execution {execution_id} in this notebook."
        return Fail(origin, NbstageError(ErrorCode.EXECUTION_NOT_FOUND, missing))

    def get(self, origin: Origin, req: GetExecution) -> list[Action]:
        return self.answer_execution(origin, req.execution_id, req.wait_secs)

    def execute(
        self, origin: Origin, req: ExecuteCell, doc: Document, once: OnceKeys, kernel: Any
    ) -> list[Action]:
        """execute_cell, once the kernel is asked for: a repeated key answers for the first
        run."""
        key = scoped_key(req)
        if once.known(key):
            known = once.first_answer(key)["execution_id"]
            return self.answer_execution(origin, known, req.wait_secs)
        cell = code_cell(doc, req.cell_id)
        execution_id, start = self.run(cell.id, cell.source, kernel)
        once.remember(key, {"execution_id": execution_id})
        return [*start, *self.answer_execution(origin, execution_id, req.wait_secs)]

    def run(self, cell_id: str, source: str, kernel: Any) -> tuple[str, list[Action]]:
        """Queue a run of the cell on ``kernel`` (or join the one queued): its id, and what
        starts it."""
        record, is_new = self.book.queue(cell_id)
        if not is_new:
            return record.execution_id, []
        run = Send(kernel, RunCode(record.execution_id, source))
        return record.execution_id, [SetOutputs(cell_id, [], None), run]

    def cancelled(self, msg: ExecutionsCancelled, sender: Any) -> list[Action]:
        todo: list[Action] = []
        for execution_id in msg.execution_ids:
            todo += self.finish(execution_id, msg.status, error=msg.reason)
        return todo

    def recorded(self, done: BlockingWorkDone) -> list[Action]:
        if not done.ok:
            log.error("could not record execution %s: %s", done.token.execution_id, done.error)
        return []

    def outputs(self, msg: OutputsArrived, closing: bool = False) -> list[Action]:
        """Outputs that arrive once the room is closing are not written."""
        if closing:
            return []
        book = self.book
        record = book.add_outputs(msg.execution_id, msg.outputs, msg.replace, msg.dropped, msg.tail)
        return [] if record is None else [SetOutputs(record.cell_id, record.outputs, None)]

    def finish(
        self,
        execution_id: str,
        status: ExecutionStatus,
        count: int | None = None,
        error: Any = None,
    ) -> list[Action]:
        record = self.book.finish(execution_id, status, count, error)
        return [] if record is None else self.settled(record)

    def fail_live(self, status: ExecutionStatus, reason: str) -> list[Action]:
        """End every live execution; ``{cell_id}`` in ``reason`` names each one's cell."""
        ended: list[Action] = []
        for execution_id in self.book.live_ids():
            live = self.book.get(execution_id)
            said = reason.replace("{cell_id}", live.cell_id) if live is not None else reason
            ended += self.finish(execution_id, status, error=said)
        return ended

    def settled(self, record: Execution) -> list[Action]:
        """A finished execution: write it into the cell, answer its waiters, keep its record
        on disk."""
        reported = ExecutionReported(record.report())
        actions: list[Action] = [SetOutputs(record.cell_id, record.outputs, record.execution_count)]
        for origin in self.book.release_waiters(record.execution_id):
            actions.append(Answer(origin, reported))
        self.finished_count += 1
        keep = None
        if self.finished_count % persistence.PRUNE_EVERY == 0:
            keep = self.config.settings.execution_retention
        view = record.to_wire()
        actions.append(self._write(view["execution_id"], orjson.dumps(view), keep))
        actions.append(Edited())
        return actions

    @property
    def executions_dir(self) -> Path:
        return Path(self.config.state_dir) / "executions"

    def _write(
        self, execution_id: str, record: bytes, keep: int | None = None, answer_to: Any = None
    ) -> Offload:
        """The live record and the finished one share a lane, so the finished one lands last."""
        where = self.executions_dir

        def write() -> None:
            persistence.record_execution(where, execution_id, record, keep)

        token = (
            ExecutionRecorded(execution_id)
            if answer_to is None
            else LiveExecutionRecorded(execution_id, answer_to)
        )
        return Offload(token, write, f"execution:{execution_id}")


def code_cell(doc: Document, cell_id: str) -> Cell:
    """The cell execute_cell names, refused unless it is code."""
    cell = doc.cell(cell_id)
    if cell.cell_type != "code":
        raise NbstageError(ErrorCode.BAD_REQUEST, f"Cell {cell.id} is {cell.cell_type}, not code.")
    return cell
