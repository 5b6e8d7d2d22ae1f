"""An in-memory stand-in for a Jupyter kernel, beside the real JupyterBackend.

Unit tests of the Room and Kernel actors use it to drive message order without
starting processes. "Executing" code echoes it as stdout; code that starts with
``raise`` fails. Each instance reports a distinct fake pid.
"""

from __future__ import annotations

import itertools
import uuid
from typing import Any

from nbstage.actors.daemon.kernel.kernel_backend_events import (
    ExecutionCounted,
    KernelEvent,
    KernelWentIdle,
    OutputEmitted,
    QuestionAnswered,
    ReplyReceived,
)

_fake_pids = itertools.count(900_000)


class ScriptedBackend:
    def __init__(self) -> None:
        self.pid = next(_fake_pids)
        self.alive = True
        self._count = 0
        self._outbox: list[KernelEvent] = []
        self.placement = None

    def start(self, working_dir: str | None) -> str:
        return self._reply_now(ok=True)

    def _reply_now(self, ok: bool, error: str | None = None) -> str:
        msg_id = uuid.uuid4().hex
        self._outbox.append(ReplyReceived(msg_id, ok, self._count or None, error))
        self._outbox.append(KernelWentIdle(msg_id))
        return msg_id

    def request_info(self) -> str:
        return self._reply_now(ok=True)

    def wake_fds(self) -> list[int]:
        return []

    def execute(self, code: str) -> str:
        self._count += 1
        msg_id = uuid.uuid4().hex
        self._outbox.append(ExecutionCounted(msg_id, self._count))
        failed = code.startswith("raise")
        if failed:
            output = {"output_type": "error", "ename": "Error", "evalue": code, "traceback": []}
        else:
            output = {"output_type": "stream", "name": "stdout", "text": code}
        self._outbox.append(OutputEmitted(msg_id, output))
        self._outbox.append(
            ReplyReceived(msg_id, not failed, self._count, code if failed else None)
        )
        self._outbox.append(KernelWentIdle(msg_id))
        return msg_id

    def ask(self, request_type: str, content: dict[str, Any]) -> str:
        """A completion offers the code's last word doubled; an inspection finds it."""
        msg_id = uuid.uuid4().hex
        word = content["code"][: content["cursor_pos"]].split()[-1:] or [""]
        if request_type == "complete_request":
            end = content["cursor_pos"]
            reply = {"status": "ok", "matches": [word[0] * 2], "cursor_start": end - len(word[0])}
            reply |= {"cursor_end": end, "metadata": {}}
        else:
            reply = {"status": "ok", "found": True, "data": {"text/plain": word[0]}, "metadata": {}}
        self._outbox.append(QuestionAnswered(msg_id, reply))
        self._outbox.append(KernelWentIdle(msg_id))
        return msg_id

    def drain(self) -> list[KernelEvent]:
        events, self._outbox = self._outbox, []
        return events

    def is_alive(self) -> bool:
        return self.alive

    def interrupt(self) -> None:
        return None

    def restart(self) -> str:
        self.pid = next(_fake_pids)
        self._count = 0
        return self._reply_now(ok=True)

    def shutdown(self) -> None:
        self.alive = False
