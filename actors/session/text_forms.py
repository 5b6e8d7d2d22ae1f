"""Text as the tools show it: ANSI escapes stripped, long text capped to its head and
tail, nbformat multiline strings joined and MIME values as text (SPEC §4 "Output text")."""

from __future__ import annotations

import json
import re
from typing import Any, Final

import orjson

from nbstage.protocol.common.mime_types import is_json_mime
from nbstage.protocol.common.words import plural

TEXT_LIMIT: Final = 8192

_ANSI: Final = re.compile(
    r"""
    \x1b[\]PX^_][^\x07\x1b\n]*(?:\x07|\x1b\\)?  # OSC, DCS, SOS, PM, APC, to BEL, ST or line end
    | (?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]?        # CSI (colours, cursor moves), even unfinished
    | \x1b[ -/]*[0-~]                           # other escapes: ESC ( B, ESC 7, ESC =
    | \x1b                                      # a stray ESC
    """,
    re.VERBOSE,
)


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
        f"\n… [{plural(omitted, 'byte')} omitted; call {full_output_tool} with full_output=true "
        "for everything] …\n"
    )
    head = raw[:head_end].decode("utf-8", "surrogatepass")
    tail = raw[tail_start:].decode("utf-8", "surrogatepass")
    return head + marker + tail


def joined(value: Any) -> str:
    """An nbformat multiline string (a str or a list of str) as one str; None as ""."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "".join(map(str, value))
    return "" if value is None else str(value)


def json_text(value: Any) -> str:
    """``value`` as compact JSON text; what JSON cannot hold is written as its str."""
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def data_text(mime: str, value: Any) -> str:
    """A MIME bundle's value as text: strings as they are, JSON values as JSON text."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and not is_json_mime(mime):
        return joined(value)
    return json_text(value)


def data_value(mime: str, value: Any) -> Any:
    """A MIME bundle's value with a multiline string joined; JSON values as they are."""
    if isinstance(value, list) and not is_json_mime(mime):
        return joined(value)
    return value


def data_size(mime: str, value: Any) -> int:
    """The UTF-8 size of a MIME bundle's value as text."""
    return len(data_text(mime, value).encode("utf-8", "surrogatepass"))


def _is_continuation(byte: int) -> bool:
    return byte & 0xC0 == 0x80
