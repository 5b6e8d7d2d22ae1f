"""A stand-in for a model API, for driving the real Claude Code and Codex CLIs in tests.

It serves Anthropic's Messages API (``POST /v1/messages``, for ``claude -p`` with
``ANTHROPIC_BASE_URL``) and OpenAI's Responses API (``POST /v1/responses``, for ``codex
exec`` with a model provider whose ``base_url`` points here), both as streamed SSE, on
127.0.0.1. Each turn of the main conversation (a request that offers the nbstage tools) is
answered with the next step of a script: one tool call. The tool results the client sends
back are recorded: they are exactly what the client hands its model. A request that
offers no nbstage tool (a title, a summary) gets a short text answer.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Step:
    tool: str
    """The nbstage tool's own name; the client's name for it is found by its suffix."""
    arguments: dict[str, Any] = field(default_factory=dict)
    before: Callable[[], None] | None = None
    """Run before the call is handed out (a change on disk, a daemon restart)."""


@dataclass
class Turn:
    """One tool call handed out and the result the client sent back for it."""

    step: Step
    result: Any = None


class ModelStandIn:
    def __init__(self, script: Sequence[Step]) -> None:
        self.script = list(script)
        self.turns: list[Turn] = []
        self.tool_names: list[str] = []
        self.errors: list[str] = []
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> ModelStandIn:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)

    def results(self) -> list[Any]:
        return [turn.result for turn in self.turns]

    # --- one turn -------------------------------------------------------------------------

    def next_call(self, offered: list[str], results: list[Any]) -> tuple[str, dict] | None:
        """The tool call that answers a request which carried ``results`` so far; None
        once the script is done. A request is answered by how many results it carries, so
        a client's retry of a turn gets the same call again."""
        with self._lock:
            if offered:
                self.tool_names = offered
            for turn, result in zip(self.turns, results, strict=False):
                turn.result = result
            at = len(results)
            if at >= len(self.script):
                return None
            step = self.script[at]
            if at == len(self.turns):
                self.turns.append(Turn(step))
                if step.before is not None:
                    try:
                        step.before()
                    except Exception as exc:
                        self.errors.append(f"before {step.tool}: {type(exc).__name__}: {exc}")
            name = next((n for n in offered if _is_named(n, step.tool)), None)
            if name is None:
                self.errors.append(f"no tool for {step.tool} among {offered}")
                return None
            return name, step.arguments


def _is_named(client_name: str, tool: str) -> bool:
    return client_name == tool or client_name.endswith(("__" + tool, "." + tool, "/" + tool))


def _handler(standin: ModelStandIn) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_HEAD(self) -> None:
            self._send(200, "application/json", b"{}")

        def do_GET(self) -> None:
            self._send(200, "application/json", b'{"data":[],"models":[]}')

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            try:
                body = json.loads(self.rfile.read(length) or b"{}")
            except ValueError:
                body = {}
            path = self.path.split("?")[0]
            standin.requests.append(body)
            try:
                if path.endswith("/messages/count_tokens"):
                    self._send(200, "application/json", b'{"input_tokens":1}')
                elif path.endswith("/messages"):
                    self._messages(body)
                elif path.endswith("/responses"):
                    self._responses(body)
                else:
                    self._send(404, "application/json", b'{"error":"not here"}')
            except Exception as exc:
                standin.errors.append(f"{path}: {type(exc).__name__}: {exc}")
                raise

        def _send(self, status: int, kind: str, data: bytes) -> None:
            self.send_response(status)
            self.send_header("content-type", kind)
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _sse(self, events: list[tuple[str, dict]]) -> None:
            data = "".join(
                f"event: {name}\ndata: {json.dumps(payload)}\n\n" for name, payload in events
            )
            self._send(200, "text/event-stream", data.encode())

        # --- Anthropic Messages ------------------------------------------------------------

        def _messages(self, body: dict) -> None:
            offered = [t.get("name", "") for t in body.get("tools") or () if isinstance(t, dict)]
            nbstage = [n for n in offered if "nbstage" in n]
            results = [
                block
                for message in body.get("messages") or ()
                if message.get("role") == "user" and isinstance(message.get("content"), list)
                for block in message["content"]
                if isinstance(block, dict) and block.get("type") == "tool_result"
            ]
            call = standin.next_call(nbstage, results) if nbstage else None
            n = len(results)
            if call is None:
                block = {"type": "text", "text": ""}
                deltas = [{"type": "text_delta", "text": "Done."}]
                stop = "end_turn"
            else:
                block = {"type": "tool_use", "id": f"toolu_{n:04d}", "name": call[0], "input": {}}
                deltas = [{"type": "input_json_delta", "partial_json": json.dumps(call[1])}]
                stop = "tool_use"
            usage = {"input_tokens": 10, "output_tokens": 10}
            message = {
                "id": f"msg_{n:04d}",
                "type": "message",
                "role": "assistant",
                "model": body.get("model", "stand-in"),
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": usage,
            }
            if not body.get("stream"):
                whole = dict(block)
                if call is None:
                    whole["text"] = "Done."
                else:
                    whole["input"] = call[1]
                answer = {**message, "content": [whole], "stop_reason": stop}
                self._send(200, "application/json", json.dumps(answer).encode())
                return
            events = [
                ("message_start", {"type": "message_start", "message": message}),
                (
                    "content_block_start",
                    {"type": "content_block_start", "index": 0, "content_block": block},
                ),
                *(
                    ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": d})
                    for d in deltas
                ),
                ("content_block_stop", {"type": "content_block_stop", "index": 0}),
                (
                    "message_delta",
                    {
                        "type": "message_delta",
                        "delta": {"stop_reason": stop, "stop_sequence": None},
                        "usage": {"output_tokens": 10},
                    },
                ),
                ("message_stop", {"type": "message_stop"}),
            ]
            self._sse(events)

        # --- OpenAI Responses --------------------------------------------------------------

        def _responses(self, body: dict) -> None:
            offered = [n for t in body.get("tools") or () for n in _response_tool_names(t)]
            nbstage = [n for n in offered if "nbstage" in n]
            items = body.get("input") or []
            results = [
                item
                for item in items
                if isinstance(item, dict) and item.get("type") == "function_call_output"
            ]
            call = standin.next_call(nbstage, results) if nbstage else None
            n = len(results)
            response = {"id": f"resp_{n:04d}", "object": "response", "status": "in_progress"}
            if call is None:
                item = {
                    "type": "message",
                    "role": "assistant",
                    "id": f"msg_{n:04d}",
                    "content": [{"type": "output_text", "text": "Done.", "annotations": []}],
                }
            else:
                namespace, _, name = call[0].rpartition(".")
                item = {
                    "type": "function_call",
                    "id": f"fc_{n:04d}",
                    "call_id": f"call_{n:04d}",
                    "name": name,
                    "arguments": json.dumps(call[1]),
                }
                if namespace:
                    item["namespace"] = namespace
            usage = {
                "input_tokens": 10,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": 10,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": 20,
            }
            done = {**response, "status": "completed", "output": [item], "usage": usage}
            self._sse(
                [
                    ("response.created", {"type": "response.created", "response": response}),
                    (
                        "response.output_item.done",
                        {"type": "response.output_item.done", "output_index": 0, "item": item},
                    ),
                    ("response.completed", {"type": "response.completed", "response": done}),
                ]
            )

    return Handler


def _response_tool_names(tool: Any) -> list[str]:
    """A Responses API tool's names; a namespace's tools as ``namespace.name``."""
    if not isinstance(tool, dict):
        return []
    if tool.get("type") == "namespace":
        inner = (n for t in tool.get("tools") or () for n in _response_tool_names(t))
        return [f"{tool.get('name')}.{n}" for n in inner]
    return [tool.get("name") or ""]
