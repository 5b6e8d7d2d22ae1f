"""How much of a cell's output the daemon keeps, and how much of it a reply carries.

A cell keeps at most ``limit`` bytes of output: the first half and the last half of
what it printed and displayed, with a notice between them that says how much was
dropped. Streams arrive in many small messages, so the bound holds for their
concatenation: a stream is held as pieces and cut by bytes at either end. One output
larger than half the limit is shrunk on its own first (a rich display becomes a marked
text, a traceback keeps its first and last lines).

A preview (what an agent's reply carries unless it asks for everything) cuts each text
in the kept outputs to a few kilobytes before the daemon encodes the reply.

Pure functions and one accumulator; no actor or I/O.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, Final

import orjson

from nbstage.protocol.common.mime_types import is_json_mime
from nbstage.protocol.common.words import plural
from nbstage.protocol.daemon.replies import CellShown, CellsShown, ExecutionReported
from nbstage.protocol.daemon_actors.kernel_facts import OutputsDropped

NOTICE_STREAM: Final = "stderr"
"""The stream a drop notice is written to, between the kept start and end."""
SETTING: Final = "output_limit_bytes"
MIN_LIMIT: Final = 4096
"""The least a cell keeps, whatever the setting says: room for the notices."""
MIN_PREVIEW: Final = 256
_MEDIA_PREFIXES: Final = ("image/", "audio/", "video/")
_BINARY_MIMES: Final = ("application/pdf", "application/octet-stream")


def text_size(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def output_size(output: Mapping[str, Any]) -> int:
    """Bytes an output holds: a stream's text, else its JSON encoding."""
    if output.get("output_type") == "stream":
        return text_size(joined_text(output.get("text", "")))
    return len(orjson.dumps(output, default=str, option=orjson.OPT_NON_STR_KEYS))


def drop_notice(dropped: OutputsDropped, limit: int) -> str:
    """The line that stands where output was dropped, saying how much and why."""
    parts = [plural(dropped.size, "byte")]
    if dropped.lines:
        parts.append(plural(dropped.lines, "line"))
    if dropped.outputs:
        parts.append(plural(dropped.outputs, "other output"))
    return (
        f"\n[nbstage: {', '.join(parts)} of output dropped here; a cell keeps the first and "
        f"last {plural(limit // 2, 'byte')} of its output (setting {SETTING})]\n"
    )


def cut_text(text: str, budget: int, why: str) -> str:
    """``text`` if its UTF-8 size is within ``budget``, else its head and tail with a line
    between them that says how many bytes and lines were cut, and ``why``."""
    if text_size(text) <= budget:
        return text
    raw = text.encode("utf-8", "surrogatepass")
    head = _decode(raw[: budget // 2], at_end=True)
    tail = _decode(raw[len(raw) - budget // 2 :], at_end=False)
    cut = raw[text_size(head) : len(raw) - text_size(tail)]
    lines = cut.count(b"\n")
    what = plural(len(cut), "byte") + (f" in {plural(lines, 'line')}" if lines else "")
    return f"{head}\n… [nbstage: {what} cut here; {why}] …\n{tail}"


def shrink_output(output: dict[str, Any], budget: int, size: int | None = None) -> dict[str, Any]:
    """One non-stream output made to fit ``budget`` bytes, marked where it lost something.
    ``size``: its ``output_size`` when the caller has it, so it is not encoded again."""
    size = output_size(output) if size is None else size
    if size <= budget:
        return output
    why = f"one output keeps at most {plural(budget, 'byte')} (setting {SETTING})"
    kind = output.get("output_type")
    if kind == "error":
        return _cut_error(output, budget, why)
    given = output.get("data")
    data: Mapping[str, Any] = given if isinstance(given, Mapping) else {}
    mimes = cut_text(", ".join(map(str, data)) or str(kind), 256, why)
    notice = f"[nbstage: an output of {plural(size, 'byte')} ({mimes}) was dropped: {why}]"
    plain = data.get("text/plain")
    if plain is not None:
        notice += "\n" + cut_text(joined_text(plain), budget // 2, why)
    shrunk: dict[str, Any] = {
        "output_type": "display_data",
        "data": {"text/plain": notice},
        "metadata": {},
    }
    if kind == "execute_result":
        shrunk.update(output_type=kind, execution_count=output.get("execution_count"))
    return shrunk


PREVIEW_CUT = "nbstage_preview_cut"
"""Set on an output of a reply whose text the preview cut, so a renderer says so."""


def preview_outputs(outputs: Sequence[Mapping[str, Any]], cap: int) -> list[dict[str, Any]]:
    """``outputs`` with each text cut to about ``cap`` bytes; images and other media stay
    whole (the kept outputs already bound them), as a reply's renderer needs them."""
    why = "ask with full_output=true for the whole output"
    cap = max(cap, MIN_PREVIEW)
    shown = []
    for whole in outputs:
        kind = whole.get("output_type")
        output = dict(whole)
        if kind == "stream":
            output["text"] = cut_text(joined_text(whole.get("text", "")), cap, why)
        elif kind == "error":
            output = _cut_error(output, cap, why)
        elif isinstance(whole.get("data"), Mapping):
            data = {
                mime: _previewed(mime, value, cap, why) for mime, value in whole["data"].items()
            }
            output["data"] = data
        if output != whole:
            output[PREVIEW_CUT] = True
        shown.append(output)
    return shown


def previewed(reply: object, cap: int) -> object:
    """A reply whose outputs are cut for a preview; other replies as they are."""
    match reply:
        case ExecutionReported(execution):
            return ExecutionReported(
                replace(execution, outputs=preview_outputs(execution.outputs, cap))
            )
        case CellShown(cell):
            return CellShown(replace(cell, outputs=preview_outputs(cell.outputs, cap)))
        case CellsShown(cells, total, metadata):
            shown = [
                {**cell, "outputs": preview_outputs(cell["outputs"], cap)}
                if isinstance(cell.get("outputs"), list)
                else cell
                for cell in cells
            ]
            return CellsShown(shown, total, metadata)
    return reply


class KeptOutputs:
    """A cell's outputs as they arrive, kept to ``limit`` bytes: the first half of the
    limit from the start, the second half from the end, a count of what fell between."""

    def __init__(self, limit: int) -> None:
        self.limit = max(limit, MIN_LIMIT)
        self._half = self.limit // 2
        self.head: list[_Entry] = []
        self._head_size = 0
        self.tail: deque[_Entry] = deque()
        self._tail_size = 0
        self._dropped = [0, 0, 0]

    @property
    def dropped(self) -> OutputsDropped:
        return OutputsDropped(*self._dropped)

    def add(self, output: dict[str, Any]) -> None:
        if output.get("output_type") != "stream":
            size = output_size(output)
            if size > self._half:
                output = shrink_output(output, self._half, size)
                size = output_size(output)
            entry = _Entry(output, "", deque(), size)
            if self._open_head() and self._head_size + entry.size <= self._half:
                self.head.append(entry)
                self._head_size += entry.size
            else:
                self._to_tail(entry)
            return
        name = str(output.get("name", "stdout"))
        text = joined_text(output.get("text", ""))
        if self._open_head():
            taken = _first_bytes(text, self._half - self._head_size)
            if taken:
                self._head_size += _append_stream(self.head, name, taken)
            text = text[len(taken) :]
            if not text:
                return
        self._to_tail(_Entry(None, name, deque([text]), text_size(text)))

    def add_gap(self, dropped: OutputsDropped) -> None:
        """Output dropped upstream (in the kernel's batch), between what came before and after."""
        self._dropped[0] += dropped.size
        self._dropped[1] += dropped.lines
        self._dropped[2] += dropped.outputs

    def extend(
        self,
        head: Sequence[dict[str, Any]],
        dropped: OutputsDropped | None,
        tail: Sequence[dict[str, Any]],
    ) -> None:
        for output in head:
            self.add(output)
        if dropped is not None:
            self.add_gap(dropped)
        for output in tail:
            self.add(output)

    def parts(self) -> tuple[list[dict[str, Any]], OutputsDropped | None, list[dict[str, Any]]]:
        """What was kept from the start, what was dropped (None if nothing), from the end."""
        dropped = self.dropped if any(self._dropped) else None
        return _rendered(self.head), dropped, _rendered(self.tail)

    def outputs(self) -> list[dict[str, Any]]:
        """The kept outputs, a notice on ``NOTICE_STREAM`` where some were dropped."""
        head, dropped, tail = self.parts()
        if dropped is None:
            merged: list[dict[str, Any]] = []
            for output in [*head, *tail]:
                append_output(merged, output)
            return merged
        notice = drop_notice(dropped, self.limit)
        return [*head, {"output_type": "stream", "name": NOTICE_STREAM, "text": notice}, *tail]

    def _open_head(self) -> bool:
        return not self.tail and not any(self._dropped)

    def _to_tail(self, entry: _Entry) -> None:
        last = self.tail[-1] if self.tail else None
        if (
            entry.output is None
            and last is not None
            and last.output is None
            and last.name == entry.name
        ):
            last.pieces.extend(entry.pieces)
            last.size += entry.size
        else:
            self.tail.append(entry)
        self._tail_size += entry.size
        self._trim_tail()

    def _trim_tail(self) -> None:
        while self._tail_size > self._half:
            first = self.tail[0]
            excess = self._tail_size - self._half
            if first.output is not None or first.size <= excess:
                self.tail.popleft()
                self._tail_size -= first.size
                self._note_dropped(first)
                continue
            piece = first.pieces[0]
            if text_size(piece) <= excess:
                first.pieces.popleft()
                cut = piece
            else:
                kept = _after_bytes(piece, excess)
                cut = piece[: len(piece) - len(kept)]
                first.pieces[0] = kept
            size = text_size(cut)
            first.size -= size
            self._tail_size -= size
            self._dropped[0] += size
            self._dropped[1] += cut.count("\n")

    def _note_dropped(self, entry: _Entry) -> None:
        self._dropped[0] += entry.size
        if entry.output is None:
            self._dropped[1] += sum(piece.count("\n") for piece in entry.pieces)
        else:
            self._dropped[2] += 1


class _Entry:
    """A kept output: a whole non-stream ``output``, or a stream's ``name`` and pieces."""

    __slots__ = ("name", "output", "pieces", "size")

    def __init__(
        self, output: dict[str, Any] | None, name: str, pieces: deque[str], size: int
    ) -> None:
        self.output = output
        self.name = name
        self.pieces = pieces
        self.size = size


def _append_stream(entries: list[_Entry], name: str, text: str) -> int:
    last = entries[-1] if entries else None
    if last is not None and last.output is None and last.name == name:
        last.pieces.append(text)
    else:
        entries.append(_Entry(None, name, deque([text]), 0))
    size = text_size(text)
    entries[-1].size += size
    return size


def _rendered(entries: Sequence[_Entry]) -> list[dict[str, Any]]:
    return [
        entry.output
        if entry.output is not None
        else {"output_type": "stream", "name": entry.name, "text": "".join(entry.pieces)}
        for entry in entries
    ]


def append_output(outputs: list[dict[str, Any]], output: dict[str, Any]) -> None:
    """Append an output, joining it to the previous one when both are the same stream."""
    prev = outputs[-1] if outputs else None
    if (
        prev is not None
        and prev.get("output_type") == "stream" == output.get("output_type")
        and prev.get("name") == output.get("name")
    ):
        text = joined_text(prev.get("text", "")) + joined_text(output.get("text", ""))
        outputs[-1] = {**prev, "text": text}
    else:
        outputs.append(output)


def _previewed(mime: str, value: Any, cap: int, why: str) -> Any:
    if mime.startswith(_MEDIA_PREFIXES) or mime in _BINARY_MIMES:
        return value
    if isinstance(value, str) or (isinstance(value, list) and not is_json_mime(mime)):
        return cut_text(joined_text(value), cap, why)
    encoded = orjson.dumps(value, default=str, option=orjson.OPT_NON_STR_KEYS)
    return value if len(encoded) <= cap else cut_text(encoded.decode(), cap, why)


def _cut_error(output: Mapping[str, Any], budget: int, why: str) -> dict[str, Any]:
    """An error within ``budget``: its name, value and traceback each given a share."""
    return {
        **output,
        "ename": cut_text(str(output.get("ename", "")), budget // 16, why),
        "evalue": cut_text(str(output.get("evalue", "")), budget // 8, why),
        "traceback": _cut_lines(output.get("traceback") or [], budget // 2, why),
    }


def _cut_lines(lines: Sequence[Any], budget: int, why: str) -> list[str]:
    """Traceback lines within ``budget`` bytes: the first and last lines, each cut to fit,
    and a line between them saying how many were dropped."""
    texts = [str(line) for line in lines]
    if sum(map(text_size, texts)) <= budget:
        return texts
    texts = [cut_text(text, budget // 4, why) for text in texts]
    head: list[str] = []
    used = 0
    while texts and used + text_size(texts[0]) + 4 <= budget // 2:
        used += text_size(texts[0]) + 4
        head.append(texts.pop(0))
    tail: list[str] = []
    used = 0
    while texts and used + text_size(texts[-1]) + 4 <= budget // 2:
        used += text_size(texts[-1]) + 4
        tail.insert(0, texts.pop())
    if texts:
        head.append(f"[nbstage: {plural(len(texts), 'traceback line')} cut here; {why}]")
    return [*head, *tail]


def _first_bytes(text: str, count: int) -> str:
    """The longest start of ``text`` within ``count`` UTF-8 bytes."""
    if text.isascii():
        return text[:count]
    return _decode(text[:count].encode("utf-8", "surrogatepass")[:count], at_end=True)


def _after_bytes(text: str, count: int) -> str:
    """``text`` without its first ``count`` UTF-8 bytes (and a character they split)."""
    if text.isascii():
        return text[count:]
    return _decode(text.encode("utf-8", "surrogatepass")[count:], at_end=False)


def _decode(raw: bytes, *, at_end: bool) -> str:
    """``raw`` cut from a longer UTF-8 text, without the partial character at the cut."""
    for trim in range(4):
        part = raw[: len(raw) - trim] if at_end else raw[trim:]
        try:
            return part.decode("utf-8", "surrogatepass")
        except UnicodeDecodeError:
            continue
    return raw.decode("utf-8", "replace")


def joined_text(value: Any) -> str:
    """An nbformat multiline string (a str or a list of str) as one str."""
    return "".join(map(str, value)) if isinstance(value, list) else str(value)
