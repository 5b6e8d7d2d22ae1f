"""Jupyter's kernel messages decoded into the typed events a backend reports
(kernel_backend_events.py): the same for a local kernel's ZeroMQ channels and a
gateway kernel's websocket."""

from __future__ import annotations

from typing import Any

from nbstage.actors.daemon.kernel.kernel_backend_events import (
    ExecutionCounted,
    KernelEvent,
    KernelWentIdle,
    OutputCleared,
    OutputEmitted,
    QuestionAnswered,
    ReplyReceived,
)
from nbstage.protocol.daemon.code_questions import QuestionKind

QUESTION_REPLIES = frozenset(kind.reply_type for kind in QuestionKind)


def _to_output(msg_type: str, content: dict[str, Any]) -> dict[str, Any] | None:
    if msg_type == "stream":
        return {"output_type": "stream", "name": content["name"], "text": content["text"]}
    if msg_type in ("display_data", "execute_result"):
        output = {
            "output_type": msg_type,
            "data": content.get("data", {}),
            "metadata": content.get("metadata", {}),
        }
        if msg_type == "execute_result":
            output["execution_count"] = content.get("execution_count")
        return output
    if msg_type == "error":
        return {
            "output_type": "error",
            "ename": content.get("ename", ""),
            "evalue": content.get("evalue", ""),
            "traceback": content.get("traceback", []),
        }
    return None


def iopub_event(msg: dict[str, Any]) -> KernelEvent | None:
    parent_id = msg.get("parent_header", {}).get("msg_id", "")
    msg_type = msg["header"]["msg_type"]
    content = msg.get("content", {})
    if msg_type == "status":
        return KernelWentIdle(parent_id) if content.get("execution_state") == "idle" else None
    if msg_type == "execute_input":
        return ExecutionCounted(parent_id, content.get("execution_count"))
    if msg_type == "clear_output":
        return OutputCleared(parent_id)
    output = _to_output(msg_type, content)
    return OutputEmitted(parent_id, output) if output is not None else None


def shell_event(msg: dict[str, Any]) -> ReplyReceived | QuestionAnswered:
    content = msg.get("content", {})
    if msg.get("header", {}).get("msg_type") in QUESTION_REPLIES:
        return QuestionAnswered(msg.get("parent_header", {}).get("msg_id", ""), content)
    ok = content.get("status") == "ok"
    error = None if ok else f"{content.get('ename', 'Error')}: {content.get('evalue', '')}"
    return ReplyReceived(
        msg.get("parent_header", {}).get("msg_id", ""), ok, content.get("execution_count"), error
    )
