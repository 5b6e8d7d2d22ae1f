"""Daemon executions, cells and summaries turned into MCP content and structured values."""

from __future__ import annotations

import base64
import re

import orjson
import pytest

from nbstage.actors.session.figure_files import figure_path
from nbstage.actors.session.rendering import (
    IMAGE_LIMIT,
    NOT_SENT,
    SENT,
    TEXT_LIMIT,
    TIMES,
    TOO_LARGE,
    Media,
    cap_text,
    image_dimensions,
    media_of,
    output_to_text,
    render_cell,
    render_cells_json,
    render_cells_summary,
    render_execution,
    render_outputs,
    strip_ansi,
)
from tests.images import base64_runs, jpeg_bytes, png_bytes, svg_text

CAP_NOTE = re.compile(
    r"\n… \[([\d,]+) bytes? omitted; call (\w+) with full_output=true for everything\] …\n"
)
EXECUTION_ID = "0123abcd-4567-89ef-0123-456789abcdef"


def stream(text, name: str = "stdout") -> dict:
    return {"output_type": "stream", "name": name, "text": text}


def display(data: dict, output_type: str = "display_data") -> dict:
    output = {"output_type": output_type, "data": data, "metadata": {}}
    if output_type == "execute_result":
        output["execution_count"] = 1
    return output


def error(ename: str, evalue: str, traceback: list[str]) -> dict:
    return {"output_type": "error", "ename": ename, "evalue": evalue, "traceback": traceback}


def b64(size: int) -> str:
    return base64.b64encode(bytes(size)).decode()


def split_capped(text: str) -> tuple[str, int, str, str]:
    """(head, omitted bytes, tool named, tail) of a capped text; fails if it is not capped."""
    notes = list(CAP_NOTE.finditer(text))
    assert len(notes) == 1, text[:200]
    note = notes[0]
    omitted = int(note.group(1).replace(",", ""))
    return text[: note.start()], omitted, note.group(2), text[note.end() :]


def utf8_size(text: str) -> int:
    return len(text.encode())


def texts(content: list[dict]) -> list[str]:
    return [item["text"] for item in content if item["type"] == "text"]


def execution(status: str = "done", outputs=None, count=3, **extra) -> dict:
    view = {
        "execution_id": EXECUTION_ID,
        "cell_id": "c1",
        "status": status,
        "execution_count": count,
        "outputs": outputs if outputs is not None else [],
    }
    view.update(extra)
    return view


# strip_ansi


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("\x1b[31mred\x1b[0m", "red", id="a colour and its reset are removed"),
        pytest.param(
            "\x1b[1;38;5;196mbold\x1b[39;49m", "bold", id="256-colour and bold codes are removed"
        ),
        pytest.param("\x1b[38;2;255;0;0mtrue\x1b[m", "true", id="24-bit colour codes are removed"),
        pytest.param("\x1b[2K\x1b[1Gdone", "done", id="cursor and erase codes are removed"),
        pytest.param("\x1b[?25lhidden\x1b[?25h", "hidden", id="private mode codes are removed"),
        pytest.param(
            "\x1b]8;;https://example.com\x1b\\link\x1b]8;;\x1b\\",
            "link",
            id="an OSC hyperlink ended by ST keeps only its label",
        ),
        pytest.param("\x1b]0;title\x07text", "text", id="an OSC title ended by BEL is removed"),
        pytest.param(
            "\x1b]0;unterminated\nnext line",
            "\nnext line",
            id="an unterminated OSC ends at the line end",
        ),
        pytest.param("\x1bP1$r0m\x1b\\after", "after", id="a DCS string is removed"),
        pytest.param("\x1b(Bascii", "ascii", id="a charset selection escape is removed"),
        pytest.param("\x1b7saved\x1b8", "saved", id="save and restore cursor escapes are removed"),
        pytest.param("\x1b=keypad\x1b>", "keypad", id="keypad mode escapes are removed"),
        pytest.param("\x9b31mred", "red", id="an 8-bit CSI is removed"),
        pytest.param("tail\x1b", "tail", id="a stray ESC at the end is removed"),
        pytest.param("tail\x1b[31", "tail", id="an unfinished CSI at the end is removed"),
        pytest.param("[31m not an escape", "[31m not an escape", id="brackets without ESC stay"),
        pytest.param("π ≈ 3.14 😀\ttab\r\n", "π ≈ 3.14 😀\ttab\r\n", id="plain text is unchanged"),
        pytest.param("", "", id="empty text stays empty"),
        pytest.param(
            "\x1b[0;31m---------------------------------------------------------------------------\x1b[0m\n"
            "\x1b[0;31mZeroDivisionError\x1b[0m Traceback (most recent call last)\n"
            "Cell \x1b[0;32mIn[1], line 1\x1b[0m\n\x1b[0;32m----> 1\x1b[0m \x1b[38;5;241m1\x1b[39m"
            "\x1b[38;5;241m/\x1b[39m\x1b[38;5;241m0\x1b[39m",
            "---------------------------------------------------------------------------\n"
            "ZeroDivisionError Traceback (most recent call last)\n"
            "Cell In[1], line 1\n----> 1 1/0",
            id="an IPython traceback loses all its colours",
        ),
    ],
)
def test_strip_ansi(text, expected):
    assert strip_ansi(text) == expected


# cap_text


@pytest.mark.parametrize(
    "size",
    [
        pytest.param(TEXT_LIMIT - 1, id="one byte under the limit is unchanged"),
        pytest.param(TEXT_LIMIT, id="exactly the limit is unchanged"),
        pytest.param(0, id="empty text is unchanged"),
    ],
)
def test_cap_text_leaves_text_within_the_limit(size):
    text = "x" * size
    assert cap_text(text) is text


@pytest.mark.parametrize(
    ("text", "limit"),
    [
        pytest.param("a" * (TEXT_LIMIT - 2) + "é", TEXT_LIMIT, id="multibyte text of limit bytes"),
        pytest.param("😀" * (TEXT_LIMIT // 4), TEXT_LIMIT, id="four-byte text of limit bytes"),
        pytest.param("€" * 3, 9, id="three-byte text of a small limit"),
    ],
)
def test_cap_text_counts_bytes_not_characters_within_the_limit(text, limit):
    assert utf8_size(text) == limit
    assert cap_text(text, limit) is text


def test_cap_text_one_byte_over_the_limit_drops_one_byte():
    text = "h" * (TEXT_LIMIT // 2) + "x" + "t" * (TEXT_LIMIT // 2)
    head, omitted, tool, tail = split_capped(cap_text(text))
    assert (head, omitted, tail) == ("h" * 4096, 1, "t" * 4096)
    assert tool == "get_results"
    assert "[1 byte omitted;" in cap_text(text)


def test_cap_text_drops_a_multibyte_character_straddling_the_cut_whole():
    text = "a" * 4095 + "€" + "a" * 4095
    assert utf8_size(text) == TEXT_LIMIT + 1
    head, omitted, _, tail = split_capped(cap_text(text))
    assert (head, omitted, tail) == ("a" * 4095, 3, "a" * 4095)


@pytest.mark.parametrize(
    ("char", "count", "limit"),
    [
        pytest.param("é", 5000, TEXT_LIMIT, id="two-byte characters cut at a boundary"),
        pytest.param("é", 5000, TEXT_LIMIT + 1, id="two-byte characters cut mid-character"),
        pytest.param("€", 3000, TEXT_LIMIT, id="three-byte characters cut mid-character"),
        pytest.param("€", 3000, TEXT_LIMIT + 2, id="three-byte characters cut at a boundary"),
        pytest.param("😀", 2500, TEXT_LIMIT, id="four-byte characters cut at a boundary"),
        pytest.param("😀", 2500, TEXT_LIMIT + 3, id="four-byte characters cut mid-character"),
        pytest.param("😀", 10, 3, id="a limit smaller than one character keeps nothing"),
    ],
)
def test_cap_text_never_splits_a_character(char, count, limit):
    text = char * count
    capped = cap_text(text, limit)
    assert "\ufffd" not in capped
    head, omitted, _, tail = split_capped(capped)
    assert set(head + tail) <= {char}
    assert utf8_size(head) + utf8_size(tail) <= limit
    assert utf8_size(head) + omitted + utf8_size(tail) == utf8_size(text)
    width = len(char.encode())
    assert limit // 2 - width < utf8_size(head) <= limit // 2
    assert limit - utf8_size(head) - width < utf8_size(tail) <= limit - utf8_size(head)


@pytest.mark.parametrize(
    ("text", "limit", "expected"),
    [
        pytest.param(
            "abcdefghij",
            4,
            "ab\n… [6 bytes omitted; call get_results with full_output=true for everything] …\nij",
            id="head and tail get half the limit each",
        ),
        pytest.param(
            "abcdefghij",
            5,
            "ab\n… [5 bytes omitted; call get_results with full_output=true for everything] …\nhij",
            id="an odd limit gives the tail the extra byte",
        ),
        pytest.param(
            "x" * 20_000 + "END",
            TEXT_LIMIT,
            "x" * 4096
            + "\n… [11,811 bytes omitted; call get_results with full_output=true "
            + "for everything] …\n"
            + "x" * 4093
            + "END",
            id="the omitted size is written with thousands separators",
        ),
    ],
)
def test_cap_text_keeps_head_and_tail(text, limit, expected):
    assert cap_text(text, limit) == expected


def test_cap_text_names_the_tool_that_returns_everything():
    _, _, tool, _ = split_capped(cap_text("z" * 100, 10, full_output_tool="get_cell"))
    assert tool == "get_cell"


def test_cap_text_handles_text_far_over_the_limit():
    text = "line\n" * 400_000
    head, omitted, _, tail = split_capped(cap_text(text))
    assert utf8_size(head) + omitted + utf8_size(tail) == len(text)
    assert len(head) == len(tail) == TEXT_LIMIT // 2


# output_to_text


PNG_1234 = b64(1234)


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        pytest.param(stream("hello\n"), "hello\n", id="a stream gives its text"),
        pytest.param(
            stream(["a\n", "b\n"], "stderr"), "a\nb\n", id="a stream's text list is joined"
        ),
        pytest.param(stream("\x1b[32mok\x1b[0m\n"), "ok\n", id="a stream loses its ANSI colours"),
        pytest.param(
            display(
                {
                    "text/html": "<b>x</b>",
                    "application/json": {"a": 1},
                    "text/latex": "$x$",
                    "text/markdown": "**x**",
                    "text/plain": "x",
                }
            ),
            "x",
            id="text/plain is preferred over every other type",
        ),
        pytest.param(
            display(
                {
                    "text/html": "<b>x</b>",
                    "application/json": {"a": 1},
                    "text/latex": "$x$",
                    "text/markdown": "**x**",
                }
            ),
            "**x**",
            id="text/markdown comes next",
        ),
        pytest.param(
            display({"application/json": {"a": 1}, "text/latex": "$x$", "text/html": "<i/>"}),
            "$x$",
            id="text/latex comes before JSON",
        ),
        pytest.param(
            display({"application/json": {"b": [1, 2.5, None, True], "a": {"c": "é"}}}),
            '{"b":[1,2.5,null,true],"a":{"c":"é"}}',
            id="JSON is compact and keeps its key order",
        ),
        pytest.param(
            display({"application/json": ["x", "y"]}),
            '["x","y"]',
            id="a JSON array of strings stays JSON",
        ),
        pytest.param(
            display({"application/json": '{"already": "text"}'}),
            '{"already": "text"}',
            id="JSON given as a string is kept as it is",
        ),
        pytest.param(
            display({"application/json": {"big": 2**70}}),
            '{"big":1180591620717411303424}',
            id="JSON beyond 64-bit integers still renders",
        ),
        pytest.param(
            display({"text/plain": ["line 1\n", "line 2"]}, "execute_result"),
            "line 1\nline 2",
            id="a list-valued text/plain is joined",
        ),
        pytest.param(
            display({"text/markdown": ["# Title\n", "\n", "body"]}),
            "# Title\n\nbody",
            id="a list-valued text/markdown is joined",
        ),
        pytest.param(
            display({"text/plain": "\x1b[1mbold\x1b[0m"}, "execute_result"),
            "bold",
            id="rich text loses its ANSI codes",
        ),
        pytest.param(
            display({"image/png": PNG_1234}),
            f"[image/png, 1,234 bytes: {SENT}]",
            id="a PNG alone is described by its decoded size",
        ),
        pytest.param(
            display({"image/jpeg": b64(1)}),
            f"[image/jpeg, 1 byte: {SENT}]",
            id="a JPEG alone is described by its decoded size",
        ),
        pytest.param(
            display({"image/png": [PNG_1234[:76] + "\n", PNG_1234[76:] + "\n"]}),
            f"[image/png, 1,234 bytes: {SENT}]",
            id="a wrapped base64 list is measured without its line breaks",
        ),
        pytest.param(
            display({"image/png": base64.b64encode(png_bytes(3, 2)).decode()}),
            f"[image/png 3{TIMES}2, {len(png_bytes(3, 2))} bytes: {SENT}]",
            id="a real PNG is described with its dimensions",
        ),
        pytest.param(
            display({"image/png": PNG_1234, "text/plain": "<Figure size 640x480>"}),
            "<Figure size 640x480>",
            id="an image with text/plain gives the text",
        ),
        pytest.param(
            display({"text/html": "<p>é</p>"}),
            "[text/html 9 bytes]",
            id="HTML alone is described by its UTF-8 size",
        ),
        pytest.param(
            display({"image/svg+xml": "<svg/>"}),
            f"[image/svg+xml, 6 bytes: {NOT_SENT}]",
            id="SVG is text, so it is measured as it is, and never sent",
        ),
        pytest.param(display({}), "", id="a display without data has no text"),
        pytest.param(
            error(
                "ZeroDivisionError",
                "division by zero",
                [
                    "\x1b[0;31m----\x1b[0m",
                    "\x1b[0;31mZeroDivisionError\x1b[0m: division by zero",
                ],
            ),
            "----\nZeroDivisionError: division by zero",
            id="an error gives its stripped traceback, which ends with its name and value",
        ),
        pytest.param(
            error("KeyError", "'k'", ["\x1b[0;31m----\x1b[0m", "a frame"]),
            "KeyError: 'k'\n----\na frame",
            id="a traceback that does not end with the name and value gets them first",
        ),
        pytest.param(
            error("KeyError", "'k'", []),
            "KeyError: 'k'",
            id="an error without a traceback is its name and value",
        ),
        pytest.param(
            error("KeyboardInterrupt", "", []),
            "KeyboardInterrupt",
            id="an error without value or traceback gives its name",
        ),
        pytest.param(
            error("ValueError", "bad\x1b[0m", ["line 1\nline 2", "line 3"]),
            "ValueError: bad\nline 1\nline 2\nline 3",
            id="traceback entries with line breaks are kept whole",
        ),
        pytest.param({"output_type": "mystery"}, "", id="an unknown output type has no text"),
    ],
)
def test_output_to_text(output, expected):
    assert output_to_text(output) == expected


def test_output_to_text_does_not_cap():
    text = "y" * (TEXT_LIMIT * 3)
    assert output_to_text(stream(text)) == text


# render_outputs


SHOWN_PNG = {"mime_type": "image/png", "bytes": 1234, "attached": True}
SHOWN_JPEG = {"mime_type": "image/jpeg", "bytes": 1234, "attached": True}
SHOWN_SVG = {"mime_type": "image/svg+xml", "bytes": 6, "attached": False, "note": NOT_SENT}
"""How an output's structured ``images`` show each image, with no figure folder."""


@pytest.mark.parametrize(
    ("outputs", "full_output", "content", "structured"),
    [
        pytest.param(
            [stream("hi\n")],
            False,
            [{"type": "text", "text": "hi\n"}],
            [{"output_type": "stream", "name": "stdout", "text": "hi\n"}],
            id="a stream is one text item and keeps its name",
        ),
        pytest.param(
            [stream("\x1b[33mwarn\x1b[0m\n", "stderr")],
            False,
            [{"type": "text", "text": "warn\n"}],
            [{"output_type": "stream", "name": "stderr", "text": "warn\n"}],
            id="stderr is stripped of ANSI in both views",
        ),
        pytest.param(
            [stream("")],
            False,
            [],
            [{"output_type": "stream", "name": "stdout", "text": ""}],
            id="an empty stream has no text item",
        ),
        pytest.param(
            [error("NameError", "name 'x' is not defined", ["\x1b[31mNameError\x1b[0m: x"])],
            False,
            [{"type": "text", "text": "NameError: name 'x' is not defined\nNameError: x"}],
            [
                {
                    "output_type": "error",
                    "text": "NameError: name 'x' is not defined\nNameError: x",
                    "ename": "NameError",
                    "evalue": "name 'x' is not defined",
                }
            ],
            id="an error leaves its traceback to the text by default",
        ),
        pytest.param(
            [error("NameError", "\x1b[1mx\x1b[0m", ["\x1b[31mNameError\x1b[0m: x"])],
            True,
            [{"type": "text", "text": "NameError: x"}],
            [
                {
                    "output_type": "error",
                    "text": "NameError: x",
                    "ename": "NameError",
                    "evalue": "x",
                    "traceback": ["NameError: x"],
                }
            ],
            id="an error with full output carries the stripped traceback",
        ),
        pytest.param(
            [display({"text/plain": "42", "text/html": "<b>42</b>"}, "execute_result")],
            False,
            [{"type": "text", "text": "42"}],
            [{"output_type": "execute_result", "text": "42"}],
            id="a result has no data without full output",
        ),
        pytest.param(
            [
                display(
                    {
                        "text/plain": ["4", "2"],
                        "text/html": ["<b>", "42</b>"],
                        "application/json": ["a", "b"],
                        "image/png": PNG_1234,
                        "image/svg+xml": "<svg/>",
                    },
                    "execute_result",
                )
            ],
            True,
            [
                {"type": "text", "text": "42"},
                {"type": "image", "data": PNG_1234, "mimeType": "image/png"},
                {"type": "text", "text": f"[image/svg+xml, 6 bytes: {NOT_SENT}]"},
            ],
            [
                {
                    "output_type": "execute_result",
                    "text": "42",
                    "data": {
                        "text/plain": "42",
                        "text/html": "<b>42</b>",
                        "application/json": ["a", "b"],
                        "image/png": f"<image, 1,234 bytes: {SENT}>",
                        "image/svg+xml": f"<SVG, 6 bytes: {NOT_SENT}>",
                    },
                    "images": [SHOWN_PNG, SHOWN_SVG],
                }
            ],
            id="full output keeps data with text lists joined and images described",
        ),
        pytest.param(
            [display({"image/png": PNG_1234})],
            True,
            [{"type": "image", "data": PNG_1234, "mimeType": "image/png"}],
            [
                {
                    "output_type": "display_data",
                    "text": f"[image/png, 1,234 bytes: {SENT}]",
                    "data": {"image/png": f"<image, 1,234 bytes: {SENT}>"},
                    "images": [SHOWN_PNG],
                }
            ],
            id="an image alone is sent as an image item and described in structured text",
        ),
        pytest.param(
            [display({"image/jpeg": PNG_1234, "text/plain": "<Figure>"})],
            False,
            [
                {"type": "text", "text": "<Figure>"},
                {"type": "image", "data": PNG_1234, "mimeType": "image/jpeg"},
            ],
            [{"output_type": "display_data", "text": "<Figure>", "images": [SHOWN_JPEG]}],
            id="a JPEG with text/plain gives the text and the image",
        ),
        pytest.param(
            [display({"image/png": PNG_1234, "image/jpeg": PNG_1234})],
            False,
            [
                {"type": "image", "data": PNG_1234, "mimeType": "image/png"},
                {"type": "image", "data": PNG_1234, "mimeType": "image/jpeg"},
            ],
            [
                {
                    "output_type": "display_data",
                    "text": f"[image/png, 1,234 bytes: {SENT}] [image/jpeg, 1,234 bytes: {SENT}]",
                    "images": [SHOWN_PNG, SHOWN_JPEG],
                }
            ],
            id="each sendable image in one output is sent",
        ),
        pytest.param(
            [display({"image/gif": PNG_1234})],
            False,
            [{"type": "text", "text": f"[image/gif, 1,234 bytes: {NOT_SENT}]"}],
            [
                {
                    "output_type": "display_data",
                    "text": f"[image/gif, 1,234 bytes: {NOT_SENT}]",
                    "images": [
                        {
                            "mime_type": "image/gif",
                            "bytes": 1234,
                            "attached": False,
                            "note": NOT_SENT,
                        }
                    ],
                }
            ],
            id="a GIF is described, not sent",
        ),
        pytest.param(
            [display({"image/svg+xml": "<svg/>", "text/plain": "<SVG>"})],
            False,
            [
                {"type": "text", "text": "<SVG>"},
                {"type": "text", "text": f"[image/svg+xml, 6 bytes: {NOT_SENT}]"},
            ],
            [{"output_type": "display_data", "text": "<SVG>", "images": [SHOWN_SVG]}],
            id="an SVG with text/plain gives the text and a note that it was not sent",
        ),
        pytest.param(
            [display({"audio/wav": b64(10), "application/pdf": b64(20)})],
            False,
            [
                {"type": "text", "text": f"[audio/wav, 10 bytes: {NOT_SENT}]"},
                {"type": "text", "text": f"[application/pdf, 20 bytes: {NOT_SENT}]"},
            ],
            [
                {
                    "output_type": "display_data",
                    "text": f"[audio/wav, 10 bytes: {NOT_SENT}] "
                    f"[application/pdf, 20 bytes: {NOT_SENT}]",
                }
            ],
            id="audio and PDF are binary: described by their decoded size, not sent",
        ),
        pytest.param(
            [display({"text/html": "<table/>"})],
            False,
            [{"type": "text", "text": "[text/html 8 bytes]"}],
            [{"output_type": "display_data", "text": "[text/html 8 bytes]"}],
            id="HTML alone is described in text",
        ),
        pytest.param(
            [
                stream("one\n"),
                display({"text/plain": "two"}, "execute_result"),
                stream("three\n", "stderr"),
            ],
            False,
            [
                {"type": "text", "text": "one\n"},
                {"type": "text", "text": "two"},
                {"type": "text", "text": "three\n"},
            ],
            [
                {"output_type": "stream", "name": "stdout", "text": "one\n"},
                {"output_type": "execute_result", "text": "two"},
                {"output_type": "stream", "name": "stderr", "text": "three\n"},
            ],
            id="outputs keep their order",
        ),
        pytest.param([], False, [], [], id="no outputs render to nothing"),
    ],
)
def test_render_outputs(outputs, full_output, content, structured):
    assert render_outputs(outputs, full_output) == (content, structured)


@pytest.mark.parametrize(
    ("decoded_size", "sent"),
    [
        pytest.param(IMAGE_LIMIT - 1, True, id="an image one byte under 1 MiB is sent"),
        pytest.param(IMAGE_LIMIT, True, id="an image of exactly 1 MiB is sent"),
        pytest.param(IMAGE_LIMIT + 1, False, id="an image one byte over 1 MiB is not sent"),
        pytest.param(IMAGE_LIMIT + IMAGE_LIMIT // 10, False, id="a 1.1 MiB image is not sent"),
    ],
)
@pytest.mark.parametrize("full_output", [False, True], ids=["capped", "full output"])
def test_render_outputs_sends_images_up_to_1_mib(decoded_size, sent, full_output):
    encoded = b64(decoded_size)
    output = display({"image/png": encoded, "text/plain": "<Figure>"})
    content, structured = render_outputs([output], full_output)
    images = [item for item in content if item["type"] == "image"]
    if sent:
        assert images == [{"type": "image", "data": encoded, "mimeType": "image/png"}]
        assert texts(content) == ["<Figure>"]
    else:
        assert images == []
        assert texts(content) == ["<Figure>", f"[image/png, {decoded_size:,} bytes: {TOO_LARGE}]"]
    assert all(encoded not in text for text in texts(content))
    assert encoded.encode() not in orjson.dumps(structured)


def test_render_outputs_describes_a_large_image_alone_once():
    content, structured = render_outputs([display({"image/png": b64(IMAGE_LIMIT * 2)})])
    note = f"[image/png, 2,097,152 bytes: {TOO_LARGE}]"
    assert content == [{"type": "text", "text": note}]
    shown = {"mime_type": "image/png", "bytes": IMAGE_LIMIT * 2, "attached": False}
    shown["note"] = TOO_LARGE
    assert structured == [{"output_type": "display_data", "text": note, "images": [shown]}]


def test_render_outputs_sends_wrapped_base64_without_line_breaks():
    wrapped = [PNG_1234[:76] + "\n", PNG_1234[76:] + "\n"]
    content, _ = render_outputs([display({"image/png": wrapped})])
    assert content == [{"type": "image", "data": PNG_1234, "mimeType": "image/png"}]


def gif_header(width: int, height: int) -> bytes:
    return b"GIF89a" + width.to_bytes(2, "little") + height.to_bytes(2, "little") + b"\x00\x00"


def encoded(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


# image_dimensions and media_of


@pytest.mark.parametrize(
    ("head", "dimensions"),
    [
        pytest.param(png_bytes(4, 4), (4, 4), id="a PNG"),
        pytest.param(png_bytes(640, 3), (640, 3), id="a wide PNG"),
        pytest.param(png_bytes(70_000, 1)[:24], (70_000, 1), id="a PNG's first 24 bytes suffice"),
        pytest.param(png_bytes(4, 4)[:23], None, id="a PNG cut inside IHDR"),
        pytest.param(
            png_bytes(4, 4)[:12] + b"IDAT" + png_bytes(4, 4)[16:], None, id="a PNG without IHDR"
        ),
        pytest.param(jpeg_bytes(16, 8), (16, 8), id="a JPEG"),
        pytest.param(jpeg_bytes(13, 5), (13, 5), id="a JPEG not a multiple of 8"),
        pytest.param(jpeg_bytes(300, 200, 60_000), (300, 200), id="a JPEG with 60 KB of EXIF"),
        pytest.param(
            jpeg_bytes(3, 2).replace(b"\xff\xc0", b"\xff\xc2"), (3, 2), id="a progressive JPEG"
        ),
        pytest.param(
            jpeg_bytes(3, 2).replace(b"\xff\xdb", b"\xff\xff\xff\xdb"),
            (3, 2),
            id="fill bytes before a JPEG marker are skipped",
        ),
        pytest.param(
            jpeg_bytes(3, 2).replace(b"\xff\xc0", b"\xff\xc4"),
            None,
            id="a JPEG whose scan starts before any frame header",
        ),
        pytest.param(jpeg_bytes(3, 2, 1000)[:500], None, id="a JPEG cut before its frame header"),
        pytest.param(b"\xff\xd8\xff\xe0\x00\x01", None, id="a JPEG segment too short"),
        pytest.param(b"\xff\xd8\x00\x00\x00\x00", None, id="a JPEG without a marker"),
        pytest.param(gif_header(5, 7), (5, 7), id="a GIF"),
        pytest.param(png_bytes(0, 4), None, id="zero width is no dimension"),
        pytest.param(b"", None, id="nothing"),
        pytest.param(b"<svg/>", None, id="not a raster image"),
    ],
)
def test_image_dimensions(head, dimensions):
    assert image_dimensions(head) == dimensions


def test_media_of_a_small_png_reads_its_header_and_sends_it():
    raw = png_bytes(4, 4)
    media = media_of("image/png", encoded(raw))
    assert media == Media("image/png", len(raw), (4, 4), encoded(raw))
    assert media.describe() == f"<image 4{TIMES}4, {len(raw)} bytes: {SENT}>"
    assert media.note() == f"[image/png 4{TIMES}4, {len(raw)} bytes: {SENT}]"
    assert TIMES == "\N{MULTIPLICATION SIGN}"


def test_media_of_a_jpeg_wrapped_in_lines_finds_its_frame_header_past_exif():
    raw = jpeg_bytes(320, 240, 60_000)
    text = encoded(raw)
    lines = [text[i : i + 76] + "\n" for i in range(0, len(text), 76)]
    media = media_of("image/jpeg", lines)
    assert media == Media("image/jpeg", len(raw), (320, 240), text)
    assert media.describe() == f"<image 320{TIMES}240, {len(raw):,} bytes: {SENT}>"


def test_media_of_an_image_over_1_mib_describes_it_and_says_how_to_get_it():
    raw = png_bytes(1500, 1000) + bytes(IMAGE_LIMIT)
    media = media_of("image/png", encoded(raw))
    assert media == Media("image/png", len(raw), (1500, 1000), None)
    assert media.describe() == f"<image 1500{TIMES}1000, {len(raw):,} bytes: {TOO_LARGE}>"
    assert "too large to send" in TOO_LARGE
    assert "write it to a file from the kernel" in TOO_LARGE


@pytest.mark.parametrize(
    ("mime", "value", "media", "description"),
    [
        pytest.param(
            "image/svg+xml",
            svg_text(4, 4),
            Media("image/svg+xml", len(svg_text(4, 4))),
            f"<SVG, {len(svg_text(4, 4))} bytes: {NOT_SENT}>",
            id="an SVG is measured as text and not sent",
        ),
        pytest.param(
            "image/svg+xml",
            ["<svg>", "é</svg>"],
            Media("image/svg+xml", 13),
            f"<SVG, 13 bytes: {NOT_SENT}>",
            id="a list-valued SVG is joined and measured in UTF-8",
        ),
        pytest.param(
            "image/gif",
            encoded(gif_header(5, 7)),
            Media("image/gif", 12, (5, 7)),
            f"<image 5{TIMES}7, 12 bytes: {NOT_SENT}>",
            id="a GIF has dimensions but is not sent",
        ),
        pytest.param(
            "image/png",
            b64(12),
            Media("image/png", 12, None, b64(12)),
            f"<image, 12 bytes: {SENT}>",
            id="an image whose header is no known format has no dimensions",
        ),
        pytest.param(
            "image/png",
            "not base64 at all!",
            Media("image/png", 11, None, "notbase64atall!"),
            f"<image, 11 bytes: {SENT}>",
            id="a value that is not base64 is measured by its length and has no dimensions",
        ),
        pytest.param(
            "image/jpeg",
            "a===",
            Media("image/jpeg", 1, None, "a==="),
            f"<image, 1 byte: {SENT}>",
            id="base64 that does not decode has no dimensions",
        ),
        pytest.param(
            "audio/wav",
            b64(3),
            Media("audio/wav", 3),
            f"<audio, 3 bytes: {NOT_SENT}>",
            id="audio is described, not sent",
        ),
        pytest.param(
            "application/pdf",
            b64(4),
            Media("application/pdf", 4),
            f"<data, 4 bytes: {NOT_SENT}>",
            id="a PDF is binary data, described",
        ),
    ],
)
def test_media_of_what_is_not_sent(mime, value, media, description):
    assert media_of(mime, value) == media
    assert media.describe() == description


@pytest.mark.parametrize(
    "mime", ["text/plain", "text/html", "application/json", "application/vnd.plotly.v1+json"]
)
def test_media_of_text_is_none(mime):
    assert media_of(mime, "x") is None


@pytest.mark.parametrize(
    "output",
    [
        pytest.param(stream("s" * 20_000), id="a long stream"),
        pytest.param(display({"text/plain": "p" * 20_000}, "execute_result"), id="a long result"),
        pytest.param(error("E", "v", ["t" * 20_000]), id="a long traceback"),
        pytest.param(display({"application/json": {"k": "j" * 20_000}}), id="long JSON"),
    ],
)
def test_render_outputs_caps_each_output_unless_full_output(output):
    full_text = output_to_text(output)
    content, structured = render_outputs([output, output])
    assert len(content) == len(structured) == 2
    for item, rendered in zip(content, structured, strict=True):
        assert item["text"] == rendered["text"]
        head, omitted, tool, tail = split_capped(rendered["text"])
        assert tool == "get_results"
        assert full_text.startswith(head)
        assert full_text.endswith(tail)
        assert utf8_size(head) + omitted + utf8_size(tail) == utf8_size(full_text)

    content, structured = render_outputs([output], full_output=True)
    assert texts(content) == [full_text]
    assert structured[0]["text"] == full_text


def test_render_outputs_names_the_tool_in_cap_notes():
    content, _ = render_outputs([stream("q" * 20_000)], full_output_tool="get_cell")
    assert split_capped(content[0]["text"])[2] == "get_cell"


# render_execution


@pytest.mark.parametrize(
    ("view", "header"),
    [
        pytest.param(
            execution("done", [stream("1\n")]),
            "Execution 0123abcd… of cell c1: done [3]",
            id="a done execution names its status and count",
        ),
        pytest.param(
            execution("done", []),
            "Execution 0123abcd… of cell c1: done [3] (no output)",
            id="a done execution without outputs says so",
        ),
        pytest.param(
            execution("error", [error("ValueError", "bad", [])], 4),
            "Execution 0123abcd… of cell c1: error [4]",
            id="an execution that raised says error",
        ),
        pytest.param(
            execution("error", [], 5, error="interrupted by the user"),
            "Execution 0123abcd… of cell c1: error [5] — interrupted by the user",
            id="an execution marked error says why",
        ),
        pytest.param(
            execution("cancelled", [], None, error="an earlier cell failed"),
            "Execution 0123abcd… of cell c1: cancelled — an earlier cell failed",
            id="a cancelled execution has no count and says why",
        ),
        pytest.param(
            execution("cancelled", [], None),
            "Execution 0123abcd… of cell c1: cancelled",
            id="a cancelled execution without a reason says only cancelled",
        ),
        pytest.param(
            execution("running", [stream("partial\n")], 6),
            "Execution 0123abcd… of cell c1: running [6] — still running; "
            f'call get_results(execution_id="{EXECUTION_ID}") for the rest of its output',
            id="a running execution says to call get_results with the full id",
        ),
        pytest.param(
            execution("queued", [], None),
            "Execution 0123abcd… of cell c1: queued — still waiting to run; "
            f'call get_results(execution_id="{EXECUTION_ID}") for its output',
            id="a queued execution says to call get_results with the full id",
        ),
        pytest.param(
            {**execution("done"), "execution_id": "short"},
            "Execution short of cell c1: done [3] (no output)",
            id="a short execution id is shown whole",
        ),
    ],
)
def test_render_execution_header(view, header):
    content, structured = render_execution(view)
    assert content[0] == {"type": "text", "text": header}
    outputs_content, outputs_structured = render_outputs(view["outputs"])
    assert content[1:] == outputs_content
    expected = {
        "execution_id": view["execution_id"],
        "cell_id": "c1",
        "status": view["status"],
        "execution_count": view["execution_count"],
        "outputs": outputs_structured,
    }
    if "error" in view:
        expected["error"] = view["error"]
    if view["status"] in ("running", "queued"):
        expected["next_call"] = f'get_results(execution_id="{view["execution_id"]}")'
    assert structured == expected


def test_render_execution_full_output_lifts_the_cap_and_keeps_data():
    long = "r" * 20_000
    view = execution("done", [display({"text/plain": long, "text/html": "<p/>"})])
    capped_content, capped = render_execution(view)
    assert CAP_NOTE.search(capped_content[1]["text"])
    assert "data" not in capped["outputs"][0]
    full_content, full = render_execution(view, full_output=True)
    assert full_content[1] == {"type": "text", "text": long}
    assert full["outputs"][0] == {
        "output_type": "display_data",
        "text": long,
        "data": {"text/plain": long, "text/html": "<p/>"},
    }


def test_render_execution_sends_images_after_the_header():
    view = execution("done", [stream("plotting\n"), display({"image/png": PNG_1234})])
    content, structured = render_execution(view)
    assert [item["type"] for item in content] == ["text", "text", "image"]
    assert PNG_1234.encode() not in orjson.dumps(structured)


def test_render_execution_leaves_the_daemon_view_unchanged():
    view = execution("done", [display({"text/plain": ["a", "b"], "image/png": PNG_1234})])
    before = orjson.dumps(view)
    render_execution(view, full_output=True)
    assert orjson.dumps(view) == before


# render_cell


def test_render_cell_with_outputs():
    cell = {
        "cell_id": "abc123",
        "cell_type": "code",
        "source": "print('hi')\n1 + 1",
        "execution_count": 2,
        "outputs": [stream("hi\n"), display({"text/plain": "2"}, "execute_result")],
    }
    content, structured = render_cell(cell)
    assert content == [
        {
            "type": "text",
            "text": "Cell abc123 (code) [2], 2 outputs\n```python\nprint('hi')\n1 + 1\n```",
        },
        {"type": "text", "text": "hi\n"},
        {"type": "text", "text": "2"},
    ]
    assert structured == {
        "cell_id": "abc123",
        "cell_type": "code",
        "source": "print('hi')\n1 + 1",
        "execution_count": 2,
        "outputs": [
            {"output_type": "stream", "name": "stdout", "text": "hi\n"},
            {"output_type": "execute_result", "text": "2"},
        ],
    }


@pytest.mark.parametrize(
    ("cell", "text"),
    [
        pytest.param(
            {"cell_id": "m1", "cell_type": "markdown", "source": "# Title\n"},
            "Cell m1 (markdown)\n```markdown\n# Title\n```",
            id="a markdown cell without outputs or count",
        ),
        pytest.param(
            {"cell_id": "r1", "cell_type": "raw", "source": "raw text"},
            "Cell r1 (raw)\n```\nraw text\n```",
            id="a raw cell is fenced without a language",
        ),
        pytest.param(
            {
                "cell_id": "c0",
                "cell_type": "code",
                "source": "",
                "execution_count": None,
                "outputs": [],
            },
            "Cell c0 (code)\n```python\n\n```",
            id="an empty code cell never run",
        ),
        pytest.param(
            {"cell_id": "m2", "cell_type": "markdown", "source": "```py\nx\n```\n````\n"},
            "Cell m2 (markdown)\n`````markdown\n```py\nx\n```\n````\n`````",
            id="the fence is longer than any backtick run in the source",
        ),
        pytest.param(
            {"cell_id": "c2", "cell_type": "code", "source": ["a = 1\n", "b = 2\n"]},
            "Cell c2 (code)\n```python\na = 1\nb = 2\n```",
            id="a list-valued source is joined",
        ),
    ],
)
def test_render_cell_without_outputs(cell, text):
    content, structured = render_cell(cell)
    assert content == [{"type": "text", "text": text}]
    source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
    assert structured == {
        "cell_id": cell["cell_id"],
        "cell_type": cell["cell_type"],
        "source": source,
        "execution_count": None,
        "outputs": [],
    }


def test_render_cell_points_cap_notes_to_get_cell():
    cell = {
        "cell_id": "c3",
        "cell_type": "code",
        "source": "print('x' * 20000)",
        "execution_count": 1,
        "outputs": [stream("x" * 20_000)],
    }
    content, structured = render_cell(cell)
    assert split_capped(content[1]["text"])[2] == "get_cell"
    assert split_capped(structured["outputs"][0]["text"])[2] == "get_cell"
    content, structured = render_cell(cell, full_output=True)
    assert content[1]["text"] == "x" * 20_000


def test_render_cell_fences_code_in_the_language_given():
    cell = {"cell_id": "c4", "cell_type": "code", "source": "x <- 1"}
    content, _ = render_cell(cell, language="r")
    assert content[0]["text"] == "Cell c4 (code)\n```r\nx <- 1\n```"


# render_cells_summary


def summary(index, cell_id, cell_type, preview, count=None, outputs=0) -> dict:
    return {
        "cell_id": cell_id,
        "index": index,
        "cell_type": cell_type,
        "source_preview": preview,
        "execution_count": count,
        "output_count": outputs,
    }


@pytest.mark.parametrize(
    ("summaries", "total", "expected"),
    [
        pytest.param(
            [
                summary(0, "3f2a9c1e", "markdown", "# Analysis"),
                summary(1, "77ab01cd", "code", "import pandas as pd", 1),
                summary(2, "9c0d1e2f", "code", "df.head()", 12, 1),
                summary(3, "aa00bb11", "code", "plot(df)", None, 0),
                summary(4, "cc22dd33", "raw", ""),
                summary(5, "ee44ff55", "code", "print(1); print(2)", 13, 2),
            ],
            6,
            "6 cells:\n"
            "0  3f2a9c1e  markdown        # Analysis\n"
            "1  77ab01cd  code      [1]   import pandas as pd\n"
            "2  9c0d1e2f  code      [12]  df.head()  (1 output)\n"
            "3  aa00bb11  code      [ ]   plot(df)\n"
            "4  cc22dd33  raw             (empty)\n"
            "5  ee44ff55  code      [13]  print(1); print(2)  (2 outputs)",
            id="the whole notebook is one aligned line per cell",
        ),
        pytest.param(
            [summary(9, "a", "code", "x", 1), summary(10, "long-cell-id", "code", "y", 2)],
            40,
            "Cells 9 to 10 of 40 (page with start and count):\n"
            " 9  a             code      [1]  x\n"
            "10  long-cell-id  code      [2]  y",
            id="a page says which cells it shows and aligns indices and ids",
        ),
        pytest.param(
            [summary(0, "m1", "markdown", "# Only prose")],
            1,
            "1 cell:\n0  m1  markdown  # Only prose",
            id="cells without counts have no count column",
        ),
        pytest.param([], 0, "The notebook has no cells.", id="an empty notebook says so"),
        pytest.param(
            [], 7, "No cells in this range; the notebook has 7 cells.", id="an empty page says so"
        ),
    ],
)
def test_render_cells_summary(summaries, total, expected):
    assert render_cells_summary(summaries, total) == expected


def test_render_cells_summary_reads_a_row_without_counts_as_never_run_and_without_outputs():
    row = summary(0, "a1", "code", "x = 1")
    del row["execution_count"], row["output_count"]
    assert render_cells_summary([row], 1) == "1 cell:\n0  a1  code      [ ]  x = 1"


def test_render_cells_summary_of_1000_cells_has_a_line_per_cell():
    summaries = [
        summary(
            i,
            f"{i:08x}",
            "markdown" if i % 5 == 0 else "code",
            f"value_{i} = compute({i})",
            i if i % 3 else None,
            i % 4,
        )
        for i in range(1000)
    ]
    text = render_cells_summary(summaries, 1000)
    header, *lines = text.split("\n")
    assert header == "1,000 cells:"
    assert len(lines) == 1000
    for i in (0, 1, 999):
        assert lines[i].lstrip().startswith(f"{i}  {i:08x}  ")
        assert f"value_{i} = compute({i})" in lines[i]
    assert lines[999].endswith("(3 outputs)")


# render_cells_json


def test_render_cells_json_describes_media_and_sends_small_images_once():
    png, jpeg, big = png_bytes(4, 4), jpeg_bytes(16, 8), png_bytes(1024, 1024, seed=1)
    svg = svg_text(4, 4, png_bytes(40, 40, seed=2))
    attachment = png_bytes(2, 2)
    cells = [
        {
            "id": "c1",
            "cell_type": "code",
            "metadata": {},
            "source": "show()",
            "execution_count": 1,
            "outputs": [
                stream("hi\n"),
                display({"image/png": encoded(png), "text/plain": "<Image>"}),
                display({"image/jpeg": encoded(jpeg)}, "execute_result"),
                display({"image/svg+xml": svg}),
                display({"image/png": encoded(big)}),
                error("E", "v", ["tb"]),
            ],
        },
        {
            "id": "m1",
            "cell_type": "markdown",
            "metadata": {},
            "source": "![a](attachment:a.png)",
            "attachments": {"a.png": {"image/png": encoded(attachment)}},
        },
    ]
    before = orjson.dumps(cells)
    content, structured = render_cells_json(cells, 5)
    assert orjson.dumps(cells) == before
    outputs = structured["cells"][0]["outputs"]
    assert outputs[0] == cells[0]["outputs"][0]
    assert outputs[1]["data"] == {
        "image/png": f"<image 4{TIMES}4, {len(png)} bytes: {SENT}>",
        "text/plain": "<Image>",
    }
    assert outputs[2] == {
        **cells[0]["outputs"][2],
        "data": {"image/jpeg": f"<image 16{TIMES}8, {len(jpeg)} bytes: {SENT}>"},
    }
    assert outputs[3]["data"] == {"image/svg+xml": f"<SVG, {len(svg):,} bytes: {NOT_SENT}>"}
    assert outputs[4]["data"] == {
        "image/png": f"<image 1024{TIMES}1024, {len(big):,} bytes: {TOO_LARGE}>"
    }
    assert outputs[5] == cells[0]["outputs"][5]
    assert structured["cells"][1]["attachments"] == {
        "a.png": {"image/png": f"<image 2{TIMES}2, {len(attachment)} bytes: {SENT}>"}
    }
    assert structured["total"] == 5
    assert content == [
        {"type": "text", "text": orjson.dumps(structured).decode()},
        {"type": "image", "data": encoded(png), "mimeType": "image/png"},
        {"type": "image", "data": encoded(jpeg), "mimeType": "image/jpeg"},
        {"type": "image", "data": encoded(attachment), "mimeType": "image/png"},
    ]
    assert base64_runs([texts(content), structured]) == []


def test_render_cells_json_without_outputs_is_the_cells_as_json():
    cells = [{"id": "c1", "cell_type": "code", "metadata": {}, "source": "1", "execution_count": 2}]
    content, structured = render_cells_json(cells, 1)
    assert structured == {"cells": cells, "total": 1}
    assert content == [{"type": "text", "text": orjson.dumps(structured).decode()}]


def test_base64_runs_finds_payloads_anywhere_in_json():
    payload = encoded(png_bytes(40, 40, seed=3))
    assert base64_runs({"a": [{"b": "fine"}, ("x" * 200,)]}) == []
    assert len(base64_runs({"a": [{"b": f"<img src='data:image/png;base64,{payload}'>"}]})) == 1
    assert len(base64_runs({payload: 1})) == 1


def test_a_capped_output_says_so_and_names_the_call_for_all_of_it():
    view = execution("done", [stream("r" * 20_000)])
    _, structured = render_execution(view)
    (output,) = structured["outputs"]
    assert output["truncated"] is True
    assert CAP_NOTE.search(output["text"])
    whole = f'get_results(execution_id="{view["execution_id"]}", full_output=true)'
    assert structured["next_call"] == whole
    _, full = render_execution(view, full_output=True)
    assert "truncated" not in full["outputs"][0]
    assert "next_call" not in full
    _, cell = render_cell({"cell_id": "c1", "outputs": view["outputs"]})
    assert cell["next_call"] == 'get_cell(cell_id="c1", full_output=true)'


def test_an_attached_image_names_its_figure_file():
    raw = png_bytes(348, 295)
    png = base64.b64encode(raw).decode()
    _, structured = render_outputs([display({"image/png": png})], figures="/s/figures")
    (image,) = structured[0]["images"]
    assert image == {
        "mime_type": "image/png",
        "bytes": len(raw),
        "width": 348,
        "height": 295,
        "attached": True,
        "file": figure_path("/s/figures", png, "image/png"),
    }
    assert image["file"].startswith("/s/figures/")
    assert image["file"].endswith(".png")
    described = f"<image 348{TIMES}295, {len(raw):,} bytes: {SENT}; file {image['file']}>"
    _, full = render_outputs([display({"image/png": png})], True, figures="/s/figures")
    assert full[0]["data"]["image/png"] == described
    cell = {"id": "c1", "cell_type": "code", "outputs": [display({"image/png": png})]}
    _, listed = render_cells_json([cell], 1, figures="/s/figures")
    assert listed["cells"][0]["outputs"][0]["data"]["image/png"] == described


def test_a_cell_shown_without_its_outputs_counts_them_instead_of_an_empty_list():
    content, cell = render_cell(
        {"cell_id": "c1", "cell_type": "code", "source": "1", "output_count": 2}
    )
    assert "outputs" not in cell
    assert cell["output_count"] == 2
    assert content[0]["text"].startswith("Cell c1 (code), 2 outputs (not shown)")
    _, markdown = render_cell({"cell_id": "m1", "cell_type": "markdown", "source": "x"})
    assert markdown["outputs"] == []
