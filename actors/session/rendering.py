"""Daemon data (executions, cells, cell summaries) as MCP tool content.

Pure functions, following SPEC §4 "Output text": every tool gets text content items for
people and a structured value for programs. Output text is ANSI-stripped and capped per
output unless ``full_output`` is asked for. PNG and JPEG images up to 1 MiB become MCP image
content, each sent once; base64 never appears in text or in structured values. Wherever an
image (SVG included) or other binary data would be shown, a description stands in for it
(its kind, width and height, size, and whether and how it was sent); larger images are
described instead of sent.
"""

from __future__ import annotations

import binascii
import json
import re
import struct
from collections.abc import Mapping, Sequence
from typing import Any, Final

import orjson

from nbstage.actors.common.output_bounds import PREVIEW_CUT
from nbstage.actors.session.figure_files import figure_path
from nbstage.protocol.common.frozen import frozen
from nbstage.protocol.mcp.tool_results import image_content, text_content

TEXT_LIMIT: Final = 8192
IMAGE_LIMIT: Final = 1 << 20
TEXT_MIMES: Final = ("text/plain", "text/markdown", "text/latex", "application/json")
SENT_IMAGE_MIMES: Final = ("image/png", "image/jpeg")
MEDIA_PREFIXES: Final = ("image/", "audio/", "video/")
BINARY_APPLICATION_MIMES: Final = ("application/pdf", "application/octet-stream")
"""Besides images, audio and video: MIME types whose nbformat value is base64, never shown."""

TIMES: Final = "\N{MULTIPLICATION SIGN}"
"""What joins an image's width and height in its description."""
SENT: Final = "sent as image content"
TOO_LARGE: Final = (
    "too large to send (over 1 MiB); to see it, display a smaller version, "
    "or write it to a file from the kernel"
)
NOT_SENT: Final = "not sent; only PNG and JPEG go out as image content"

_HEADER_BASE64_CHARS: Final = 256 * 1024
"""How much of an image's base64 is decoded to find its dimensions (192 KiB of bytes)."""
_PNG_SIGNATURE: Final = b"\x89PNG\r\n\x1a\n"
_JPEG_SOF_MARKERS: Final = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}
_JPEG_STANDALONE_MARKERS: Final = frozenset({0x01, 0xD8, *range(0xD0, 0xD8)})

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

    Streams give their text; errors their traceback, which ends with ``ename: evalue``
    (said first where it does not, or where there is no traceback); rich outputs
    their first MIME type in SPEC order (text/plain, text/markdown, text/latex,
    application/json), else a description such as ``[image/png 1,234 bytes]``.
    """
    return _text_of(output)[0]


@frozen
class Media:
    """An image, audio, video or other binary MIME value, as the tools show it.

    ``encoded`` is the base64 to send as MCP image content, set only for a PNG or JPEG of
    at most 1 MiB; everything else is described and never sent.
    """

    mime: str
    size: int
    dimensions: tuple[int, int] | None = None
    encoded: str | None = None

    def describe(self, figures: str | None = None) -> str:
        """What stands in for the value in JSON: ``<image 4x4, 93 bytes: sent as image content>``.

        The dimensions, when they could be read, are joined by U+00D7 (TIMES), not an x.
        With ``figures``, the figure folder, a sent image also names the file it is
        written to: ``<image 4x4, 93 bytes: sent as image content; file /…/figures/….png>``.
        """
        file = ""
        if figures is not None and self.encoded is not None:
            file = f"; file {figure_path(figures, self.encoded, self.mime)}"
        return f"<{self._kind()}{self._facts()}{file}>"

    def note(self) -> str:
        """The description in text, naming the MIME type: ``[image/png 4x4, 93 bytes: …]``."""
        return f"[{self.mime}{self._facts()}]"

    def _facts(self) -> str:
        if self.encoded is not None:
            fate = SENT
        elif self.mime in SENT_IMAGE_MIMES:
            fate = TOO_LARGE
        else:
            fate = NOT_SENT
        dimensions = f" {self.dimensions[0]}{TIMES}{self.dimensions[1]}" if self.dimensions else ""
        return f"{dimensions}, {_plural(self.size, 'byte')}: {fate}"

    def shown(self, figures: str | None = None) -> dict[str, Any]:
        """The image in a structured output: its type, size and dimensions, whether it is
        attached as image content and, if so and ``figures`` is the figure folder, the file
        it is also written to; if not attached, why not."""
        shown: dict[str, Any] = {"mime_type": self.mime, "bytes": self.size}
        if self.dimensions:
            shown["width"], shown["height"] = self.dimensions
        shown["attached"] = self.encoded is not None
        if self.encoded is None:
            shown["note"] = TOO_LARGE if self.mime in SENT_IMAGE_MIMES else NOT_SENT
        elif figures is not None:
            shown["file"] = figure_path(figures, self.encoded, self.mime)
        return shown

    def _kind(self) -> str:
        if self.mime == "image/svg+xml":
            return "SVG"
        top = self.mime.partition("/")[0]
        return top if top in ("image", "audio", "video") else "data"


def is_media_mime(mime: str) -> bool:
    """Whether ``mime``'s value is an image (SVG included) or binary data, never shown as is."""
    return mime.startswith(MEDIA_PREFIXES) or mime in BINARY_APPLICATION_MIMES


def media_of(mime: str, value: Any) -> Media | None:
    """``value`` under ``mime`` as Media (size, dimensions, what to send); None if not media.

    Base64 values are measured by their decoded size and, for images, their dimensions are
    read from the first bytes; SVG and other XML images are text, measured in UTF-8.
    """
    if not is_media_mime(mime):
        return None
    if not _is_base64_mime(mime):
        return Media(mime, len(_data_text(mime, value).encode("utf-8", "surrogatepass")))
    encoded = _base64_of(value)
    size = _decoded_size(encoded)
    dimensions = image_dimensions(_decoded_head(encoded)) if mime.startswith("image/") else None
    sent = mime in SENT_IMAGE_MIMES and size <= IMAGE_LIMIT
    return Media(mime, size, dimensions, encoded if sent else None)


def image_dimensions(head: bytes) -> tuple[int, int] | None:
    """(width, height) from the first bytes of a PNG, JPEG or GIF file; None if unreadable.

    PNG and GIF keep them at fixed offsets; a JPEG's are in its first SOF segment, found by
    walking the segments before it, so ``head`` must reach that far.
    """
    if head.startswith(_PNG_SIGNATURE) and head[12:16] == b"IHDR" and len(head) >= 24:
        width, height = struct.unpack(">II", head[16:24])
    elif head[:6] in (b"GIF87a", b"GIF89a") and len(head) >= 10:
        width, height = struct.unpack("<HH", head[6:10])
    elif head.startswith(b"\xff\xd8"):
        found = _jpeg_dimensions(head)
        if found is None:
            return None
        width, height = found
    else:
        return None
    return (width, height) if width and height else None


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
        media = _media_in(data)
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
            item["data"] = _described_data(data, media, _data_value, figures)
        images = [one.shown(figures) for one in media.values() if one.mime.startswith("image/")]
        if images:
            item["images"] = images
        structured.append(item)
        media_items = [_media_item(one) for one in media.values()]
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


def render_cell(
    cell: Mapping[str, Any],
    full_output: bool = False,
    *,
    language: str = "python",
    figures: str | None = None,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """One cell: a header with its source in a fenced block, then its outputs.

    Code cells are fenced as ``language``. Markdown and raw cells without ``outputs`` or
    ``execution_count`` get ``[]`` and ``None``. A cell shown without its outputs (it has
    ``output_count`` instead) has no ``outputs`` but ``output_count``.
    """
    cell_type = cell.get("cell_type", "code")
    source = _joined(cell.get("source", ""))
    count = cell.get("execution_count")
    left_out = "outputs" not in cell and isinstance(cell.get("output_count"), int)
    outputs = cell.get("outputs") or []
    content, rendered = render_outputs(
        outputs, full_output, full_output_tool="get_cell", figures=figures
    )
    header = f"Cell {cell.get('cell_id')} ({cell_type})"
    if count is not None:
        header += f" [{count}]"
    if left_out and cell["output_count"]:
        header += f", {_plural(cell['output_count'], 'output')} (not shown)"
    elif outputs:
        header += f", {_plural(len(outputs), 'output')}"
    longest = max((len(run) for run in _BACKTICK_RUN.findall(source)), default=2)
    fence = "`" * (longest + 1)
    body = source[:-1] if source.endswith("\n") else source
    fenced = f"{header}\n{fence}{_FENCE_LANGUAGES.get(cell_type, language)}\n{body}\n{fence}"
    structured: dict[str, Any] = {
        "cell_id": cell.get("cell_id"),
        "cell_type": cell_type,
        "source": source,
        "execution_count": count,
    }
    if left_out:
        structured["output_count"] = cell["output_count"]
    else:
        structured["outputs"] = rendered
    if any(item.get("truncated") for item in rendered):
        structured["next_call"] = f'get_cell(cell_id="{cell.get("cell_id")}", full_output=true)'
    return [text_content(fenced), *content], structured


def render_dependencies(state: Mapping[str, Any]) -> str:
    """manage_dependencies' words: the set, its trust and environment, what changed."""
    deps = state["dependencies"]
    lines = [
        f"Dependencies ({len(deps)}): {', '.join(deps) if deps else 'none'}; "
        f"fingerprint {state['fingerprint']}."
    ]
    if state.get("added"):
        lines.append(f"Added: {', '.join(state['added'])}.")
    removed = state.get("removed") or {}
    if removed.get("removed"):
        lines.append(f"Removed: {', '.join(removed['removed'])}.")
    if removed.get("not_found"):
        lines.append(f"Not listed, so not removed: {', '.join(removed['not_found'])}.")
    trust = state["trust"]
    if trust["needs_approval"]:
        lines.append(
            "Not approved yet: the kernel runs without them. Approve with "
            'manage_dependencies(trust=true, apply="restart").'
        )
    elif trust["status"] == "trusted":
        lines.append("Approved.")
    if state.get("env_source"):
        lines.append(f"The kernel runs in the {state['env_source']} environment.")
    applied = state.get("apply")
    if applied:
        lines.append(f"apply={applied['mode']} took {applied['seconds']:.1f} s.")
    return "\n".join(lines)


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
    id_width = max(len(summary["cell_id"]) for summary in summaries)
    count_width = max(map(len, counts))
    columns = [
        [str(summary["index"]).rjust(index_width) for summary in summaries],
        [summary["cell_id"].ljust(id_width) for summary in summaries],
        [summary["cell_type"].ljust(8) for summary in summaries],
    ]
    if count_width:
        columns.append([count.ljust(count_width) for count in counts])
    columns.append([summary["source_preview"] or "(empty)" for summary in summaries])
    lines = list(map("  ".join, zip(*columns, strict=True)))
    for i, summary in enumerate(summaries):
        outputs = summary.get("output_count")
        if outputs:
            lines[i] += f"  ({_plural(outputs, 'output')})"
    return "\n".join([header, *lines])


def render_cells_json(
    cells: Sequence[Mapping[str, Any]], total: int, *, figures: str | None = None
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """``get_all_cells`` in the json format: nbformat cells with their media described.

    In outputs' ``data`` and markdown cells' ``attachments`` a description stands in for
    each image or binary value (see Media.describe). The content is the structured value
    as JSON text, then each PNG or JPEG of at most 1 MiB as image content, once.
    ``figures`` is the folder those images are also written to.
    """
    images: list[dict[str, Any]] = []
    shown = [_cell_with_media_described(cell, images, figures) for cell in cells]
    structured = {"cells": shown, "total": total}
    return [text_content(_json_text(structured)), *images], structured


def _cell_with_media_described(
    cell: Mapping[str, Any], images: list[dict[str, Any]], figures: str | None
) -> dict[str, Any]:
    shown = dict(cell)
    outputs = cell.get("outputs")
    if isinstance(outputs, list):
        shown["outputs"] = [
            _output_with_media_described(output, images, figures) for output in outputs
        ]
    attachments = cell.get("attachments")
    if isinstance(attachments, Mapping):
        shown["attachments"] = {
            name: _bundle_with_media_described(bundle, images, figures)
            for name, bundle in attachments.items()
        }
    return shown


def _output_with_media_described(
    output: Any, images: list[dict[str, Any]], figures: str | None
) -> Any:
    if not isinstance(output, Mapping) or not isinstance(output.get("data"), Mapping):
        return output
    return {**output, "data": _bundle_with_media_described(output["data"], images, figures)}


def _bundle_with_media_described(
    bundle: Any, images: list[dict[str, Any]], figures: str | None
) -> Any:
    if not isinstance(bundle, Mapping):
        return bundle
    media = _media_in(bundle)
    images += [_media_item(one) for one in media.values() if one.encoded is not None]
    return _described_data(bundle, media, lambda _mime, value: value, figures)


def _media_in(data: Mapping[str, Any]) -> dict[str, Media]:
    """The media values of a MIME bundle by MIME type, in the bundle's order."""
    found = {}
    for mime, value in data.items():
        media = media_of(mime, value)
        if media is not None:
            found[mime] = media
    return found


def _described_data(
    data: Mapping[str, Any], media: Mapping[str, Media], value_of, figures: str | None = None
) -> dict:
    """``data`` with each media value's description in its place, others via ``value_of``."""
    return {
        mime: media[mime].describe(figures) if mime in media else value_of(mime, value)
        for mime, value in data.items()
    }


def _media_item(media: Media) -> dict[str, Any]:
    if media.encoded is not None:
        return image_content(media.encoded, media.mime)
    return text_content(media.note())


def _text_of(
    output: Mapping[str, Any], media: Mapping[str, Media] | None = None
) -> tuple[str, bool]:
    """The output's text, and whether it is real text rather than a data description.

    ``media`` is the output's media by MIME type, when the caller has already read it.
    """
    kind = output.get("output_type")
    if kind == "stream":
        return strip_ansi(_joined(output.get("text", ""))), True
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
                return strip_ansi(_data_text(mime, data[mime])), True
        if media is None:
            media = _media_in(data)
        described = (
            media[mime].note()
            if mime in media
            else f"[{mime} {_plural(_data_size(mime, value), 'byte')}]"
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
    if mime in BINARY_APPLICATION_MIMES:
        return True
    return mime.startswith(MEDIA_PREFIXES) and not mime.endswith(("+xml", "json"))


def _base64_of(value: Any) -> str:
    encoded = _joined(value)
    if "\n" in encoded or "\r" in encoded or " " in encoded:
        encoded = "".join(encoded.split())
    return encoded


def _decoded_size(encoded: str) -> int:
    padding = 2 if encoded.endswith("==") else 1 if encoded.endswith("=") else 0
    return len(encoded) * 3 // 4 - padding


def _decoded_head(encoded: str) -> bytes:
    """The first bytes that base64 ``encoded`` stands for; b"" if they do not decode."""
    head = encoded[:_HEADER_BASE64_CHARS]
    head = head[: len(head) - len(head) % 4]
    try:
        return binascii.a2b_base64(head)
    except binascii.Error:
        return b""


def _jpeg_dimensions(head: bytes) -> tuple[int, int] | None:
    """(width, height) from the first SOF segment of a JPEG; None before it or if malformed."""
    at = 2
    while at + 4 <= len(head):
        if head[at] != 0xFF:
            return None
        marker = head[at + 1]
        if marker == 0xFF:
            at += 1
        elif marker in _JPEG_STANDALONE_MARKERS:
            at += 2
        elif marker in (0xD9, 0xDA):
            return None
        elif marker in _JPEG_SOF_MARKERS:
            if at + 9 > len(head):
                return None
            height, width = struct.unpack(">HH", head[at + 5 : at + 9])
            return width, height
        else:
            (length,) = struct.unpack(">H", head[at + 2 : at + 4])
            if length < 2:
                return None
            at += 2 + length
    return None


def _data_size(mime: str, value: Any) -> int:
    return len(_data_text(mime, value).encode("utf-8", "surrogatepass"))


def _count_label(summary: Mapping[str, Any]) -> str:
    count = summary.get("execution_count")
    if count is not None:
        return f"[{count}]"
    return "[ ]" if summary["cell_type"] == "code" else ""


def _plural(n: int, noun: str) -> str:
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {noun}s"
