"""The bound on a cell's kept output, and the preview a reply carries
(actors/common/output_bounds.py)."""

from __future__ import annotations

import re

import pytest

from nbstage.actors.common.output_bounds import (
    NOTICE_STREAM,
    KeptOutputs,
    append_output,
    cut_text,
    output_size,
    preview_outputs,
    previewed,
    shrink_output,
)
from nbstage.protocol.daemon.replies import (
    CellShown,
    CellsShown,
    CellView,
    ExecutionReported,
    ExecutionView,
)
from nbstage.protocol.daemon_actors.kernel_facts import ExecutionStatus, OutputsDropped

LIMIT = 4096
HALF = LIMIT // 2


def out(text: str, name: str = "stdout") -> dict:
    return {"output_type": "stream", "name": name, "text": text}


def display(data: dict) -> dict:
    return {"output_type": "display_data", "data": data, "metadata": {}}


def kept_after(*outputs: dict) -> list[dict]:
    kept = KeptOutputs(LIMIT)
    for output in outputs:
        kept.add(output)
    return kept.outputs()


def total_size(outputs: list[dict]) -> int:
    return sum(output_size(o) for o in outputs if o.get("name") != NOTICE_STREAM)


def notice_numbers(outputs: list[dict]) -> list[int]:
    notice = next(o["text"] for o in outputs if o.get("name") == NOTICE_STREAM)
    notice = notice.partition("of output dropped")[0]
    return [int(n.replace(",", "")) for n in re.findall(r"([\d,]+) (?:byte|line|other)", notice)]


@pytest.mark.parametrize(
    ("chunks", "expected"),
    [
        (["a" * 10, "b" * 10], [out("a" * 10 + "b" * 10)]),
        (["x" * LIMIT], [out("x" * LIMIT)]),
        (
            ["ab" * (LIMIT // 4), "cd" * (LIMIT // 4)],
            [out("ab" * (LIMIT // 4) + "cd" * (LIMIT // 4))],
        ),
    ],
    ids=["small chunks join", "exactly the limit", "two halves"],
)
def test_streams_within_the_limit_are_kept_whole_and_joined(chunks, expected):
    assert kept_after(*map(out, chunks)) == expected


@pytest.mark.parametrize(
    ("chunks", "dropped_bytes", "dropped_lines"),
    [
        (["0123456789\n"] * 1000, 11000 - LIMIT, 1000 - LIMIT // 11 - 1),
        (["y" * 100_000], 100_000 - LIMIT, 0),
        (["h" * 3000, "m" * 5000, "t" * 3000], 11000 - LIMIT, 0),
    ],
    ids=["many small chunks", "one huge chunk", "head, middle, tail"],
)
def test_a_long_stream_keeps_its_head_and_tail_and_counts_the_rest(
    chunks, dropped_bytes, dropped_lines
):
    whole = "".join(chunks)
    kept = kept_after(*map(out, chunks))
    head, notice, tail = kept
    assert head == out(whole[:HALF])
    assert tail == out(whole[-HALF:])
    assert notice["name"] == NOTICE_STREAM
    assert "output_limit_bytes" in notice["text"]
    numbers = notice_numbers(kept)
    assert numbers[0] == dropped_bytes
    assert (numbers[1] if dropped_lines else 0) == dropped_lines


def test_stdout_and_stderr_interleaved_keep_their_order_and_the_bound():
    chunks = [out(f"{i}\n", "stdout" if i % 2 else "stderr") for i in range(5000)]
    kept = kept_after(*chunks)
    assert total_size(kept) <= LIMIT
    assert kept[0] == out("0\n", "stderr")
    assert kept[-1] == out("4999\n", "stdout")


def test_multibyte_text_is_cut_between_characters():
    kept = kept_after(out("é" * 10_000))
    head, _, tail = kept
    assert set(head["text"]) == {"é"} == set(tail["text"])
    assert len(head["text"].encode()) <= HALF


def test_a_huge_display_becomes_a_marked_text_with_its_plain_text_cut():
    huge = display({"text/html": "<p>" * 100_000, "text/plain": "p" * 100_000})
    shrunk = shrink_output(huge, HALF)
    plain = shrunk["data"]["text/plain"]
    assert list(shrunk["data"]) == ["text/plain"]
    assert "text/html, text/plain" in plain
    assert "was dropped" in plain
    assert output_size(shrunk) <= HALF


def test_a_huge_traceback_keeps_its_first_and_last_lines():
    error = {
        "output_type": "error",
        "ename": "RecursionError",
        "evalue": "v" * 50_000,
        "traceback": [f"frame {i}" for i in range(10_000)],
    }
    shrunk = shrink_output(error, HALF)
    assert shrunk["traceback"][0] == "frame 0"
    assert shrunk["traceback"][-1] == "frame 9999"
    assert any("traceback lines cut here" in line for line in shrunk["traceback"])
    assert "cut here" in shrunk["evalue"]
    assert output_size(shrunk) <= HALF


def test_many_small_displays_keep_the_first_and_last_and_count_the_others():
    images = [display({"image/png": "iVBOR" + f"{i:05d}" * 10}) for i in range(500)]
    kept = kept_after(*images)
    assert kept[0] == images[0]
    assert kept[-1] == images[-1]
    assert total_size(kept) <= LIMIT
    numbers = notice_numbers(kept)
    assert numbers[-1] == 500 - (len(kept) - 1)


def test_a_gap_from_the_kernel_batch_is_added_to_the_count_and_closes_the_head():
    kept = KeptOutputs(LIMIT)
    kept.extend([out("start\n")], OutputsDropped(1000, 10, 2), [out("end\n")])
    kept.add(out("more\n"))
    assert kept.outputs()[0] == out("start\n")
    assert kept.outputs()[-1] == out("end\nmore\n")
    assert kept.dropped == OutputsDropped(1000, 10, 2)


def test_parts_hand_on_what_a_batch_kept_and_dropped():
    batch = KeptOutputs(LIMIT)
    batch.add(out("z" * 10_000))
    head, dropped, tail = batch.parts()
    room = KeptOutputs(LIMIT)
    room.extend(head, dropped, tail)
    assert room.outputs() == batch.outputs()
    assert dropped == OutputsDropped(10_000 - LIMIT, 0, 0)


@pytest.mark.parametrize(
    ("text", "budget", "kept"),
    [("short", 100, "short"), ("a" * 50 + "b" * 50, 20, None)],
    ids=["within", "over"],
)
def test_cut_text(text, budget, kept):
    cut = cut_text(text, budget, "why")
    if kept is not None:
        assert cut == kept
    else:
        assert cut.startswith("a" * 10)
        assert cut.endswith("b" * 10)
        assert "80 bytes cut here; why" in cut


def test_a_preview_cuts_texts_and_keeps_images():
    image = "iVBOR" + "A" * 50_000
    outputs = [
        out("s" * 50_000),
        display({"image/png": image, "text/plain": "t" * 50_000}),
        display({"application/json": {"k": "j" * 50_000}}),
    ]
    shown = preview_outputs(outputs, 1000)
    assert len(shown[0]["text"]) < 1200
    assert shown[1]["data"]["image/png"] == image
    assert len(shown[1]["data"]["text/plain"]) < 1200
    assert len(shown[2]["data"]["application/json"]) < 1200
    assert outputs[0]["text"] == "s" * 50_000


def test_a_preview_keeps_a_small_json_array_and_joins_a_text_list():
    """A list under a JSON MIME type is a JSON array (mime_types.is_json_mime); under any
    other it is a multiline string, joined."""
    data = {"application/geo+json": ["a", "b"], "text/plain": ["a\n", "b"]}
    shown = preview_outputs([display(data)], 1000)[0]["data"]
    assert shown == {"application/geo+json": ["a", "b"], "text/plain": "a\nb"}


def test_previewed_cuts_execution_and_cell_replies_only():
    outputs = [out("q" * 20_000)]
    execution = ExecutionView("e", "c", ExecutionStatus.DONE, 1, outputs)
    cell = CellView("c", "code", "print()", 1, outputs)
    assert len(previewed(ExecutionReported(execution), 500).execution.outputs[0]["text"]) < 700
    assert len(previewed(CellShown(cell), 500).cell.outputs[0]["text"]) < 700
    listed = previewed(CellsShown([{"id": "c", "outputs": outputs}, {"id": "m"}], 2), 500)
    assert len(listed.cells[0]["outputs"][0]["text"]) < 700
    assert listed.cells[1] == {"id": "m"}
    assert previewed("other", 500) == "other"


def test_a_huge_display_among_small_ones_is_kept_marked_in_its_place():
    huge = display({"image/png": "iVBOR" + "A" * 100_000})
    kept = kept_after(out("before\n"), huge, out("after\n"))
    before, marked, after = kept
    assert (before, after) == (out("before\n"), out("after\n"))
    assert "image/png" in marked["data"]["text/plain"]
    assert "was dropped" in marked["data"]["text/plain"]


def test_a_preview_cuts_an_error_to_about_its_cap():
    error = {
        "output_type": "error",
        "ename": "E",
        "evalue": "v" * 20_000,
        "traceback": [f"frame {i}" for i in range(5_000)],
    }
    shown = preview_outputs([error], 2000)[0]
    assert output_size(shown) < 2500
    assert shown["traceback"][0] == "frame 0"
    assert shown["traceback"][-1] == "frame 4999"


@pytest.mark.parametrize(
    ("existing", "appended", "expected"),
    [
        pytest.param([out("a")], [out("b")], [out("ab")], id="stdout after stdout is merged"),
        pytest.param(
            [],
            [out("a"), out("b"), out("c")],
            [out("abc")],
            id="streams in one batch are merged",
        ),
        pytest.param(
            [out("a")],
            [out("b", "stderr")],
            [out("a"), out("b", "stderr")],
            id="stderr after stdout stays separate",
        ),
        pytest.param(
            [out("a"), display({"text/plain": "p"})],
            [out("b")],
            [out("a"), display({"text/plain": "p"}), out("b")],
            id="a stream after a display output starts a new output",
        ),
        pytest.param(
            [out(["a\n", "b\n"])],
            [out(["c"])],
            [out("a\nb\nc")],
            id="multiline list text is joined before merging",
        ),
        pytest.param(
            [display({"text/plain": "p"})],
            [display({"text/plain": "q"})],
            [display({"text/plain": "p"}), display({"text/plain": "q"})],
            id="displays never merge",
        ),
    ],
)
def test_appended_streams_merge_like_jupyter(existing, appended, expected):
    outputs = list(existing)
    for output in appended:
        append_output(outputs, output)
    assert outputs == expected


def test_a_merge_does_not_change_a_dict_handed_out_before():
    before = out("a")
    outputs = [before]
    append_output(outputs, out("b"))
    assert (before, outputs) == (out("a"), [out("ab")])
