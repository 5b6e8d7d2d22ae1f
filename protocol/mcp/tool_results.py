"""What a ``tools/call`` answers and the notifications a server sends unasked: the
content items of a result, a result and a tool failure the model can act on, progress,
and the tool list's change."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from nbstage.protocol.mcp.jsonrpc import Notification


def text_content(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def image_content(data_base64: str, mime_type: str) -> dict[str, Any]:
    return {"type": "image", "data": data_base64, "mimeType": mime_type}


def tool_result(
    structured: Any = None,
    *,
    text: str | None = None,
    content: Sequence[Mapping[str, Any]] = (),
    is_error: bool = False,
) -> dict[str, Any]:
    """A ``tools/call`` result: text for people first, then ``content``, then the data.

    With neither ``text`` nor ``content``, the structured value is serialized as JSON
    into the one text item, as the spec asks for clients that do not read
    ``structuredContent``.
    """
    if text is None and not content and structured is not None:
        text = orjson.dumps(structured).decode()
    blocks = [text_content(text)] if text is not None else []
    blocks.extend(dict(block) for block in content)
    result: dict[str, Any] = {"content": blocks, "isError": is_error}
    if structured is not None:
        result["structuredContent"] = structured
    return result


def tool_error(
    message: str, structured: Mapping[str, Any] | None = None, next_call: str | None = None
) -> dict[str, Any]:
    """A tool failure the model can act on: ``isError`` with ``message`` as its text, and
    in its structured part as ``error`` (clients that read that part show nothing else),
    with ``code`` and the ``next_call`` to make where there are some. Claude Code shows
    only the text of a failure, so the text names the next call too."""
    shown: dict[str, Any] = {"error": message, **(structured or {})}
    if next_call is not None:
        shown["next_call"] = next_call
        if next_call.partition("(")[0] not in message:
            message += f" Next: {next_call}"
    return tool_result(shown, text=message, is_error=True)


def progress_notification(
    token: str | int, progress: float, *, total: float | None = None, message: str | None = None
) -> Notification:
    if isinstance(token, bool) or not isinstance(token, str | int):
        raise TypeError("a progress token is a string or an integer")
    params: dict[str, Any] = {"progressToken": token, "progress": progress}
    if total is not None:
        params["total"] = total
    if message is not None:
        params["message"] = message
    return Notification("notifications/progress", params)


def tools_list_changed() -> Notification:
    return Notification("notifications/tools/list_changed")
