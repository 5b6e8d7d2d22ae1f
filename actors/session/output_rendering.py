"""Outputs and executions as MCP tool content: a text item per output for people, the
images sent alongside, and a structured value for programs (SPEC §4 "Output text").

Output text is ANSI-stripped and capped per output unless ``full_output`` is asked for.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from nbstage.actors.common.output_bounds import PREVIEW_CUT
from nbstage.actors.session.media import Media, described_data, media_in
from nbstage.actors.session.text_forms import (
    cap_text,
    data_size,
    data_text,
    data_value,
    joined,
    strip_ansi,
)
from nbstage.protocol.common.words import plural
from nbstage.protocol.mcp.tool_results import text_content

TEXT_MIMES: Final = ("text/plain", "text/markdown", "text/latex", "application/json")
_DISPLAY_TYPES: Final = ("execute_result", "display_data")


def output_to_text(output: Mapping[str, Any]) -> str:
    """One nbformat output as ANSI-free, uncapped text.

    Streams give their text; errors their traceback, which ends with ``ename: evalue``
    (said first where it does not, or where there is no traceback); rich outputs
    their first MIME type in SPEC order (text/plain, text/markdown, text/latex,
    application/json), else a description such as ``[image/png 1,234 bytes]``.
    """
    return _text_of(output)[0]


def render_outputs(
    outputs: Sequence[Mapping[str, Any]],
    full_output: bool = False,
    *,
    full_output_tool: str = "get_results",
    figures: str | None = None,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """MCP content items and SPEC §4 structured outputs for nbformat ``outputs``.

    Content: a text item per output with text, then for each image or binary value in a
    rich output either an image item (a PNG or JPEG up to 1 MiB) or a note describing it.
    Structured: ``output_type`` and ``text`` always, plus ``name`` (streams) or
    ``ename``/``evalue`` (errors), and ``images``, each described (see Media.shown), for
    an output that has any. Text is capped per output unless ``full_output``, and a capped
    one says ``truncated``; only with ``full_output`` do errors carry ``traceback`` and
    rich outputs ``data``, where a description stands in for each image.
    ``full_output_tool`` is the tool a cap note points to; ``figures`` the folder attached
    images are also written to.
    """
    content: list[dict[str, Any]] = []
    structured: list[dict[str, Any]] = []
    for output in outputs:
        kind = output.get("output_type")
        data = (output.get("data") or {}) if kind in _DISPLAY_TYPES else {}
        media = media_in(data)
        text, from_text_mime = _text_of(output, media)
        whole = text
        if not full_output:
            text = cap_text(text, full_output_tool=full_output_tool)
        item: dict[str, Any] = {"output_type": kind, "text": text}
        if text is not whole or output.get(PREVIEW_CUT):
            item["truncated"] = True
        if kind == "stream":
            item["name"] = output.get("name", "stdout")
        elif kind == "error":
            item["ename"] = strip_ansi(str(output.get("ename", "")))
            item["evalue"] = strip_ansi(str(output.get("evalue", "")))
            if full_output:
                item["traceback"] = [strip_ansi(line) for line in output.get("traceback") or ()]
        elif full_output and data:
            item["data"] = described_data(data, media, data_value, figures)
        images = [one.shown(figures) for one in media.values() if one.mime.startswith("image/")]
        if images:
            item["images"] = images
        structured.append(item)
        media_items = [one.item() for one in media.values()]
        if text and (from_text_mime or not media_items):
            content.append(text_content(text))
        content += media_items
    return content, structured


def render_execution(
    execution: Mapping[str, Any], full_output: bool = False, *, figures: str | None = None
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """A header line and the outputs of one execution, and its structured view.

    The view says what to call next where there is something: the rest of a run still
    going, or the whole of an output that was capped."""
    outputs = execution.get("outputs") or []
    content, rendered = render_outputs(outputs, full_output, figures=figures)
    structured: dict[str, Any] = {
        "execution_id": execution.get("execution_id"),
        "cell_id": execution.get("cell_id"),
        "status": execution.get("status"),
        "execution_count": execution.get("execution_count"),
        "outputs": rendered,
    }
    if execution.get("error") is not None:
        structured["error"] = execution["error"]
    execution_id = execution.get("execution_id")
    if execution.get("status") in ("running", "queued"):
        structured["next_call"] = f'get_results(execution_id="{execution_id}")'
    elif any(item.get("truncated") for item in rendered):
        structured["next_call"] = f'get_results(execution_id="{execution_id}", full_output=true)'
    return [text_content(_execution_header(execution, bool(outputs))), *content], structured


def _text_of(
    output: Mapping[str, Any], media: Mapping[str, Media] | None = None
) -> tuple[str, bool]:
    """The output's text, and whether it is real text rather than a data description.

    ``media`` is the output's media by MIME type, when the caller has already read it.
    """
    kind = output.get("output_type")
    if kind == "stream":
        return strip_ansi(joined(output.get("text", ""))), True
    if kind == "error":
        summary = str(output.get("ename", ""))
        evalue = str(output.get("evalue", ""))
        if evalue:
            summary += f": {evalue}"
        traceback = strip_ansi("\n".join(output.get("traceback") or ()))
        lines = traceback.rstrip().splitlines()
        if lines and strip_ansi(summary) in lines[-1]:
            return traceback, True
        return strip_ansi("\n".join(filter(None, (summary, traceback)))), True
    if kind in _DISPLAY_TYPES:
        data = output.get("data") or {}
        for mime in TEXT_MIMES:
            if mime in data:
                return strip_ansi(data_text(mime, data[mime])), True
        if media is None:
            media = media_in(data)
        described = (
            media[mime].note()
            if mime in media
            else f"[{mime} {plural(data_size(mime, value), 'byte')}]"
            for mime, value in data.items()
        )
        return " ".join(described), False
    return "", False


def _execution_header(execution: Mapping[str, Any], has_outputs: bool) -> str:
    execution_id = str(execution.get("execution_id", ""))
    short = execution_id[:8] + "…" if len(execution_id) > 8 else execution_id
    status = execution.get("status")
    header = f"Execution {short} of cell {execution.get('cell_id')}: {status}"
    count = execution.get("execution_count")
    if count is not None:
        header += f" [{count}]"
    follow_up = f'call get_results(execution_id="{execution_id}")'
    if status == "running":
        header += f" — still running; {follow_up} for the rest of its output"
    elif status == "queued":
        header += f" — still waiting to run; {follow_up} for its output"
    error = execution.get("error")
    if error:
        header += f" — {error}"
    elif status == "done" and not has_outputs:
        header += " (no output)"
    return header
