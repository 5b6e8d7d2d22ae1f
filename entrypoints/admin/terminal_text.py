"""Text from the daemon made safe to print on an operator's terminal.

File names, peer labels and log lines come from whoever made them, and a file named
``"\x1b]0;owned\x07.ipynb"`` would retitle the terminal that lists it (or clear it, move
the cursor, answer back). The console shows every control character, C0, DEL and C1,
as a visible ``\\xNN`` escape instead. ``--json`` is data, not text for a terminal:
JSON already escapes C0 in strings, and DEL and C1 are escaped as ``\\u00NN`` here,
which parses to the same values.
"""

from __future__ import annotations

_CONTROLS = (*range(0x20), 0x7F, *range(0x80, 0xA0))
_ESCAPED = {code: f"\\x{code:02x}" for code in _CONTROLS}
_ESCAPED_BUT_NEWLINES = {code: text for code, text in _ESCAPED.items() if code != 0x0A}
_RAW_IN_JSON = {code: f"\\u{code:04x}" for code in (0x7F, *range(0x80, 0xA0))}


def visible(value: str) -> str:
    """``value`` with every control character, newlines too, written as ``\\xNN``."""
    return value.translate(_ESCAPED)


def visible_lines(text: str) -> str:
    """``text`` with every control character but its line breaks written as ``\\xNN``."""
    return text.translate(_ESCAPED_BUT_NEWLINES)


def json_for_terminal(text: str) -> str:
    """JSON text (as orjson writes it) with DEL and C1 escaped in its strings, where alone
    they can occur raw; it parses to the same value."""
    return text.translate(_RAW_IN_JSON)
