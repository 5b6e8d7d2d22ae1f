"""Daemon data (executions, cells, cell summaries) as MCP tool content.

Pure functions, following SPEC §4 "Output text": every tool gets text content items for
people and a structured value for programs. Output text is ANSI-stripped and capped per
output unless ``full_output`` is asked for. PNG and JPEG images up to 1 MiB become MCP image
content; base64 never appears in text or in structured values, and larger images are
described instead of sent.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

import orjson

from nbstage.protocol.mcp import image_content, text_content

TEXT_LIMIT: Final = 8192
IMAGE_LIMIT: Final = 1 << 20
TEXT_MIMES: Final = ("text/plain", "text/markdown", "text/latex", "application/json")
SENT_IMAGE_MIMES: Final = ("image/png", "image/jpeg")

_DISPLAY_TYPES: Final = ("execute_result", "display_data")
_FENCE_LANGUAGES: Final = {"markdown": "markdown", "raw": ""}

_ANSI: Final = re.compile(
    r"""
    \x1b[\]PX^_][^\x07\x1b\n]*(?:\x07|\x1b\\)?  # OSC, DCS, SOS, PM, APC, to BEL, ST or line end
    | (?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]?        # CSI (colours, cursor moves), even unfinished
    | \x1b[ -/]*[0-~]                           # other escapes: ESC ( B, ESC 7, ESC =
    | \x1b                                      # a stray ESC
    """,
    re.VERBOSE,
)
_BACKTICK_RUN: Final = re.compile(r"`{3,}")


def strip_ansi(text: str) -> str:
    """``text`` without ANSI escape sequences: CSI, OSC and other string commands, lone ESC."""
    if "\x1b" not in text and "\x9b" not in text:
        return text
    return _ANSI.sub("", text)


def cap_text(text: str, limit: int = TEXT_LIMIT, *, full_output_tool: str = "get_results") -> str:
    """``text`` if its UTF-8 size is at most ``limit`` bytes, else its head and tail.

    Head and tail get about half of ``limit`` each and together stay within it; a line
    between them says how many bytes were dropped and that ``full_output_tool`` called
    with ``full_output=true`` returns everything. Cuts fall between characters.
    """
    if len(text) * 4 <= limit:
        return text
    raw = text.encode("utf-8", "surrogatepass")
    size = len(raw)
    if size <= limit:
        return text
    head_end = limit // 2
    while head_end > 0 and _is_continuation(raw[head_end]):
        head_end -= 1
    tail_start = size - (limit - head_end)
    while tail_start < size and _is_continuation(raw[tail_start]):
        tail_start += 1
    omitted = tail_start - head_end
    marker = (
        f"\n… [{_plural(omitted, 'byte')} omitted; call {full_output_tool} with full_output=true "
        "for everything] …\n"
    )
    head = raw[:head_end].decode("utf-8", "surrogatepass")
    tail = raw[tail_start:].decode("utf-8", "surrogatepass")
    return head + marker + tail


def output_to_text(output: Mapping[str, Any]) -> str:
    """One nbformat output as ANSI-free, uncapped text.

    Streams give their text; errors ``ename: evalue`` and then the traceback; rich outputs
    their first MIME type in SPEC order (text/plain, text/markdown, text/latex,
    application/json), else a description such as ``[image/png 1,234 bytes]``.
    """
    return _text_of(output)[0]


def render_outputs(
    outputs: Sequence[Mapping[str, Any]],
    full_output: bool = False,
    *,
    full_output_tool: str = "get_results",
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """MCP content items and SPEC §4 structured outputs for nbformat ``outputs``.

    Content: a text item per output with text, an image item per PNG or JPEG up to 1 MiB,
    and a note for each larger one. Structured: ``output_type`` and ``text`` always, plus
    ``name`` (streams) or ``ename``/``evalue`` (errors). Text is capped per output unless
    ``full_output``; only then do errors carry ``traceback`` and rich outputs ``data``
    (without images). ``full_output_tool`` is the tool a cap note points to.
    """
    content: list[dict[str, Any]] = []
    structured: list[dict[str, Any]] = []
    for output in outputs:
        kind = output.get("output_type")
        text, from_text_mime = _text_of(output)
        if not full_output:
            text = cap_text(text, full_output_tool=full_output_tool)
        item: dict[str, Any] = {"output_type": kind, "text": text}
        images: list[tuple[str, str, int]] = []
        if kind == "stream":
            item["name"] = output.get("name", "stdout")
        elif kind == "error":
            item["ename"] = strip_ansi(str(output.get("ename", "")))
            item["evalue"] = strip_ansi(str(output.get("evalue", "")))
            if full_output:
                item["traceback"] = [strip_ansi(line) for line in output.get("traceback") or ()]
        elif kind in _DISPLAY_TYPES:
            data = output.get("data") or {}
            if full_output:
                kept = {
                    mime: _data_value(mime, value)
                    for mime, value in data.items()
                    if not mime.startswith("image/")
                }
                if kept:
                    item["data"] = kept
            for mime in SENT_IMAGE_MIMES:
                if mime in data:
                    encoded = _base64_of(data[mime])
                    images.append((mime, encoded, _decoded_size(encoded)))
        structured.append(item)
        if text and (from_text_mime or not images):
            content.append(text_content(text))
        for mime, encoded, size in images:
            if size <= IMAGE_LIMIT:
                content.append(image_content(encoded, mime))
            else:
                content.append(
                    text_content(
                        f"[{mime} {size / IMAGE_LIMIT:.1f} MiB not sent: over the 1 MiB limit]"
                    )
                )
    return content, structured


def render_execution(
    execution: Mapping[str, Any], full_output: bool = False
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """A header line and the outputs of one execution, and its structured view."""
    outputs = execution.get("outputs") or []
    content, rendered = render_outputs(outputs, full_output)
    structured: dict[str, Any] = {
        "execution_id": execution.get("execution_id"),
        "cell_id": execution.get("cell_id"),
        "status": execution.get("status"),
        "execution_count": execution.get("execution_count"),
        "outputs": rendered,
    }
    if execution.get("error") is not None:
        structured["error"] = execution["error"]
    return [text_content(_execution_header(execution, bool(outputs))), *content], structured


def render_cell(
    cell: Mapping[str, Any], full_output: bool = False, *, language: str = "python"
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """One cell: a header with its source in a fenced block, then its outputs.

    Code cells are fenced as ``language``. Markdown and raw cells without ``outputs`` or
    ``execution_count`` get ``[]`` and ``None``.
    """
    cell_type = cell.get("cell_type", "code")
    source = _joined(cell.get("source", ""))
    count = cell.get("execution_count")
    outputs = cell.get("outputs") or []
    content, rendered = render_outputs(outputs, full_output, full_output_tool="get_cell")
    header = f"Cell {cell.get('cell_id')} ({cell_type})"
    if count is not None:
        header += f" [{count}]"
    if outputs:
        header += f", {_plural(len(outputs), 'output')}"
    longest = max((len(run) for run in _BACKTICK_RUN.findall(source)), default=2)
    fence = "`" * (longest + 1)
    body = source[:-1] if source.endswith("\n") else source
    fenced = f"{header}\n{fence}{_FENCE_LANGUAGES.get(cell_type, language)}\n{body}\n{fence}"
    structured = {
        "cell_id": cell.get("cell_id"),
        "cell_type": cell_type,
        "source": source,
        "execution_count": count,
        "outputs": rendered,
    }
    return [text_content(fenced), *content], structured


def render_cells_summary(summaries: Sequence[Mapping[str, Any]], total: int) -> str:
    """A header line, then one aligned line per cell summary.

    A line reads ``index  cell_id  type  [execution_count]  first line  (n outputs)``:
    code cells never run show ``[ ]``, other cells no count, and cells without outputs no
    output count.
    """
    if not summaries:
        if total == 0:
            return "The notebook has no cells."
        return f"No cells in this range; the notebook has {_plural(total, 'cell')}."
    first, last = summaries[0]["index"], summaries[-1]["index"]
    if len(summaries) == total:
        header = f"{_plural(total, 'cell')}:"
    else:
        header = f"Cells {first} to {last} of {total} (page with start and count):"
    counts = [_count_label(summary) for summary in summaries]
    index_width = max(len(str(first)), len(str(last)))
    id_width = max(len(str(summary["cell_id"])) for summary in summaries)
    count_width = max(map(len, counts))
    lines = [header]
    for summary, count in zip(summaries, counts, strict=True):
        count_column = f"{count:<{count_width}}  " if count_width else ""
        line = (
            f"{summary['index']:>{index_width}}  {summary['cell_id']:<{id_width}}  "
            f"{summary['cell_type']:<8}  {count_column}"
            f"{summary.get('source_preview') or '(empty)'}"
        )
        outputs = summary.get("output_count") or 0
        if outputs:
            line += f"  ({_plural(outputs, 'output')})"
        lines.append(line)
    return "\n".join(lines)


def _text_of(output: Mapping[str, Any]) -> tuple[str, bool]:
    """The output's text, and whether it is real text rather than a data description."""
    kind = output.get("output_type")
    if kind == "stream":
        return strip_ansi(_joined(output.get("text", ""))), True
    if kind == "error":
        text = str(output.get("ename", ""))
        evalue = str(output.get("evalue", ""))
        if evalue:
            text += f": {evalue}"
        traceback = output.get("traceback") or ()
        if traceback:
            text += "\n" + "\n".join(traceback)
        return strip_ansi(text), True
    if kind in _DISPLAY_TYPES:
        data = output.get("data") or {}
        for mime in TEXT_MIMES:
            if mime in data:
                return strip_ansi(_data_text(mime, data[mime])), True
        described = (
            f"[{mime} {_plural(_data_size(mime, value), 'byte')}]" for mime, value in data.items()
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


def _is_continuation(byte: int) -> bool:
    return byte & 0xC0 == 0x80


def _joined(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "".join(map(str, value))
    return "" if value is None else str(value)


def _json_text(value: Any) -> str:
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def _is_json_mime(mime: str) -> bool:
    return mime == "application/json" or mime.endswith("+json")


def _data_text(mime: str, value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and not _is_json_mime(mime):
        return _joined(value)
    return _json_text(value)


def _data_value(mime: str, value: Any) -> Any:
    if isinstance(value, list) and not _is_json_mime(mime):
        return _joined(value)
    return value


def _is_base64_mime(mime: str) -> bool:
    return mime.startswith(("image/", "audio/", "video/")) and not mime.endswith(("+xml", "json"))


def _base64_of(value: Any) -> str:
    encoded = _joined(value)
    if "\n" in encoded or "\r" in encoded or " " in encoded:
        encoded = "".join(encoded.split())
    return encoded


def _decoded_size(encoded: str) -> int:
    padding = 2 if encoded.endswith("==") else 1 if encoded.endswith("=") else 0
    return len(encoded) * 3 // 4 - padding


def _data_size(mime: str, value: Any) -> int:
    if _is_base64_mime(mime):
        return _decoded_size(_base64_of(value))
    return len(_data_text(mime, value).encode("utf-8", "surrogatepass"))


def _count_label(summary: Mapping[str, Any]) -> str:
    count = summary.get("execution_count")
    if count is not None:
        return f"[{count}]"
    return "[ ]" if summary.get("cell_type") == "code" else ""


def _plural(n: int, noun: str) -> str:
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {noun}s"
