"""The in-memory notebook document: mutations, reads, ids and nbformat output."""

from __future__ import annotations

import contextlib
import copy
import re

import nbformat
import pytest

from nbstage.actors.daemon.kernel.kernelspecs import PYTHON3
from nbstage.actors.daemon.notebook import document
from nbstage.actors.daemon.notebook.cell_model import Cell, source_preview
from nbstage.actors.daemon.notebook.document import Document
from nbstage.actors.daemon.notebook.pattern_bounds import MAX_PATTERN_WEIGHT, pattern_weight
from nbstage.protocol.common.errors import ErrorCode, NbstageError
from nbstage.protocol.daemon.replies import CellSummary, CellView
from nbstage.protocol.daemon_actors.kernels import KernelspecInfo

HEX8 = re.compile(r"[0-9a-f]{8}")


def doc_with(*cells: Cell) -> Document:
    return Document(list(cells), {})


def code(cell_id: str, source: str = "", outputs: list[dict] | None = None, count=None) -> Cell:
    return Cell(cell_id, "code", source, {}, outputs or [], count)


def markdown(cell_id: str, source: str = "", attachments: dict | None = None) -> Cell:
    return Cell(cell_id, "markdown", source, {}, [], None, attachments)


def stream(text: str, name: str = "stdout") -> dict:
    return {"output_type": "stream", "name": name, "text": text}


def display(text: str) -> dict:
    return {"output_type": "display_data", "data": {"text/plain": text}, "metadata": {}}


def ids(doc: Document) -> list[str]:
    return [c.id for c in doc.cells]


def assert_valid(nb: dict) -> None:
    nbformat.validate(nbformat.from_dict(nb))


@contextlib.contextmanager
def raises(code: ErrorCode, *phrases: str):
    """Expect an NbstageError with ``code`` whose message contains every phrase."""
    with pytest.raises(NbstageError) as info:
        yield info
    assert info.value.code == code, info.value.message
    for phrase in phrases:
        assert phrase in info.value.message


# create_cell


@pytest.mark.parametrize(
    ("index", "expected_index", "expected_order"),
    [
        pytest.param(None, 2, ["a", "b", "NEW"], id="no index appends at the end"),
        pytest.param(0, 0, ["NEW", "a", "b"], id="index 0 puts the cell first"),
        pytest.param(1, 1, ["a", "NEW", "b"], id="a middle index inserts before that cell"),
        pytest.param(2, 2, ["a", "b", "NEW"], id="index equal to the length appends"),
    ],
)
def test_create_cell_inserts_at_the_requested_place(index, expected_index, expected_order):
    doc = doc_with(code("a"), code("b"))
    cell, at = doc.create_cell("x = 1", "code", index)
    assert at == expected_index
    assert [("NEW" if i == cell.id else i) for i in ids(doc)] == expected_order
    assert (cell.source, cell.cell_type, cell.outputs, cell.execution_count) == (
        "x = 1",
        "code",
        [],
        None,
    )
    assert doc.revision == 1


def test_new_cells_get_unique_eight_hex_ids():
    doc = Document.empty()
    made = [doc.create_cell()[0].id for _ in range(200)]
    assert all(HEX8.fullmatch(i) for i in made)
    assert len(set(made)) == 200


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        pytest.param({"index": -1}, ErrorCode.BAD_INDEX, id="a negative index is a bad index"),
        pytest.param({"index": 3}, ErrorCode.BAD_INDEX, id="an index past the end is a bad index"),
        pytest.param(
            {"cell_type": "python"}, ErrorCode.BAD_CELL_TYPE, id="an unknown type is refused"
        ),
    ],
)
def test_create_cell_refuses_bad_arguments_and_changes_nothing(kwargs, error):
    doc = doc_with(code("a"), code("b"))
    with raises(error):
        doc.create_cell(**kwargs)
    assert ids(doc) == ["a", "b"]
    assert doc.revision == 0


def test_a_bad_index_says_which_indexes_are_allowed():
    doc = doc_with(code("a"), code("b"))
    with raises(ErrorCode.BAD_INDEX, "from 0 to 2", "leave index out to append"):
        doc.create_cell(index=5)


# set_cell


@pytest.mark.parametrize(
    ("before", "kwargs", "after"),
    [
        pytest.param(
            code("a", "x", [stream("1\n")], 3),
            {"source": "y"},
            ("code", "y", [stream("1\n")], 3, None),
            id="new source on a code cell keeps its outputs",
        ),
        pytest.param(
            code("a", "x", [stream("1\n")], 3),
            {"cell_type": "markdown"},
            ("markdown", "x", [], None, None),
            id="code to markdown drops outputs and execution count",
        ),
        pytest.param(
            markdown("a", "# t", {"p.png": {"image/png": "AA=="}}),
            {"cell_type": "code", "source": "1"},
            ("code", "1", [], None, None),
            id="markdown to code starts with no outputs and drops attachments",
        ),
        pytest.param(
            markdown("a", "# t", {"p.png": {"image/png": "AA=="}}),
            {"cell_type": "raw"},
            ("raw", "# t", [], None, {"p.png": {"image/png": "AA=="}}),
            id="markdown to raw keeps attachments",
        ),
    ],
)
def test_set_cell_changes_source_and_type(before, kwargs, after):
    doc = doc_with(copy.deepcopy(before))
    cell = doc.set_cell("a", **kwargs)
    assert (cell.cell_type, cell.source, cell.outputs, cell.execution_count, cell.attachments) == (
        after
    )
    assert doc.revision == 1
    assert_valid(doc.to_json())


@pytest.mark.parametrize(
    "kwargs",
    [
        pytest.param({"source": "x"}, id="the same source"),
        pytest.param({"cell_type": "code"}, id="the same type"),
        pytest.param({"source": "x", "cell_type": "code"}, id="the same source and type"),
    ],
)
def test_set_cell_that_changes_nothing_leaves_the_revision(kwargs):
    doc = doc_with(code("a", "x"))
    doc.set_cell("a", **kwargs)
    assert doc.revision == 0


@pytest.mark.parametrize(
    ("cell_id", "kwargs", "error", "phrase"),
    [
        pytest.param("a", {}, ErrorCode.BAD_REQUEST, "pass source", id="nothing to change"),
        pytest.param(
            "a", {"cell_type": "sql"}, ErrorCode.BAD_CELL_TYPE, "'markdown'", id="unknown type"
        ),
        pytest.param(
            "zz", {"source": "y"}, ErrorCode.CELL_NOT_FOUND, "get_all_cells", id="unknown cell"
        ),
    ],
)
def test_set_cell_refuses_and_says_what_to_do(cell_id, kwargs, error, phrase):
    doc = doc_with(code("a", "x"))
    with raises(error, phrase):
        doc.set_cell(cell_id, **kwargs)
    assert doc.cells[0].source == "x"
    assert doc.revision == 0


# delete_cell


def test_delete_cell_removes_only_that_cell():
    doc = doc_with(code("a"), code("b"), code("c"))
    doc.delete_cell("b")
    assert ids(doc) == ["a", "c"]
    assert doc.revision == 1


def test_deleting_an_unknown_cell_is_cell_not_found():
    doc = doc_with(code("a"))
    with raises(ErrorCode.CELL_NOT_FOUND, "'nope'", "Call get_all_cells"):
        doc.delete_cell("nope")
    assert ids(doc) == ["a"]


def test_cell_not_found_clips_a_huge_id():
    doc = doc_with(code("a"))
    with raises(ErrorCode.CELL_NOT_FOUND) as info:
        doc.cell("x" * 10_000)
    assert len(info.value.message) < 200


# move_cell


@pytest.mark.parametrize(
    ("cell_id", "after", "index", "order"),
    [
        pytest.param("d", None, 0, "dabc", id="no after_cell_id moves to the front"),
        pytest.param("a", "c", 2, "bcad", id="moving down lands right after the anchor"),
        pytest.param("a", "d", 3, "bcda", id="after the last cell moves to the end"),
        pytest.param("c", "a", 1, "acbd", id="moving up lands right after the anchor"),
    ],
)
def test_move_cell_places_the_cell_after_the_anchor(cell_id, after, index, order):
    doc = doc_with(*(code(i) for i in "abcd"))
    assert doc.move_cell(cell_id, after) == index
    assert "".join(ids(doc)) == order
    assert doc.revision == 1


@pytest.mark.parametrize(
    ("cell_id", "after"),
    [
        pytest.param("b", "a", id="after the cell already before it"),
        pytest.param("a", None, id="the first cell to the front"),
    ],
)
def test_a_move_to_where_the_cell_already_is_leaves_the_revision(cell_id, after):
    doc = doc_with(*(code(i) for i in "abc"))
    assert doc.move_cell(cell_id, after) == ids(doc).index(cell_id)
    assert "".join(ids(doc)) == "abc"
    assert doc.revision == 0


@pytest.mark.parametrize(
    ("cell_id", "after", "error", "phrase"),
    [
        pytest.param("b", "b", ErrorCode.BAD_INDEX, "after itself", id="after itself"),
        pytest.param("x", "a", ErrorCode.CELL_NOT_FOUND, "'x'", id="the moved cell is unknown"),
        pytest.param("a", "x", ErrorCode.CELL_NOT_FOUND, "'x'", id="the anchor cell is unknown"),
    ],
)
def test_move_cell_refuses_and_leaves_the_order(cell_id, after, error, phrase):
    doc = doc_with(*(code(i, "") for i in "abc"))
    with raises(error, phrase):
        doc.move_cell(cell_id, after)
    assert "".join(ids(doc)) == "abc"
    assert doc.revision == 0


# replace_match


@pytest.mark.parametrize(
    ("source", "args", "result"),
    [
        pytest.param("x = 1\ny = 2", ("1", "10"), "x = 10\ny = 2", id="a single occurrence"),
        pytest.param(
            "a = f(1)\nb = f(1)",
            ("f(1)", "g(2)", "b = ", None),
            "a = f(1)\nb = g(2)",
            id="context_before picks one of two occurrences",
        ),
        pytest.param(
            "f(1) + 1\nf(1) - 1",
            ("f(1)", "g", None, " - "),
            "f(1) + 1\ng - 1",
            id="context_after picks one of two occurrences",
        ),
        pytest.param(
            "aXbaXc",
            ("X", "Y", "a", "c"),
            "aXbaYc",
            id="both contexts must hold",
        ),
        pytest.param("a.b(c)", (".b(", "[b]("), "a[b](c)", id="the match is literal, not a regex"),
        pytest.param("x = 1", ("x", "x"), "x = 1", id="replacing text with itself"),
    ],
)
def test_replace_match_replaces_the_one_qualifying_occurrence(source, args, result):
    doc = doc_with(code("a", source, [stream("kept")]))
    cell = doc.replace_match("a", *args)
    assert cell.source == result
    assert cell.outputs == [stream("kept")]
    assert doc.revision == (0 if source == result else 1)


@pytest.mark.parametrize(
    ("source", "args", "error", "phrases"),
    [
        pytest.param("x = 1", ("2", "3"), ErrorCode.NO_MATCH, ["get_cell"], id="text is absent"),
        pytest.param(
            "f(1); f(1); f(1)",
            ("f(1)", "g"),
            ErrorCode.AMBIGUOUS_MATCH,
            ["3 places", "context_before", "context_after"],
            id="text occurs three times",
        ),
        pytest.param(
            "aaa",
            ("aa", "b"),
            ErrorCode.AMBIGUOUS_MATCH,
            ["2 places"],
            id="overlapping occurrences count as two",
        ),
        pytest.param(
            "a = 1",
            ("1", "2", "b = ", None),
            ErrorCode.NO_MATCH,
            ["with that context"],
            id="text present but not after context_before",
        ),
        pytest.param("x", ("", "y"), ErrorCode.BAD_REQUEST, ["set_cell"], id="empty match"),
    ],
)
def test_replace_match_refuses_unless_exactly_one_place_qualifies(source, args, error, phrases):
    doc = doc_with(code("a", source))
    with raises(error, *phrases):
        doc.replace_match("a", *args)
    assert doc.cells[0].source == source
    assert doc.revision == 0


def test_replace_match_on_an_unknown_cell_is_cell_not_found():
    with raises(ErrorCode.CELL_NOT_FOUND):
        doc_with(code("a", "x")).replace_match("b", "x", "y")


# replace_regex


@pytest.mark.parametrize(
    ("source", "pattern", "content", "result"),
    [
        pytest.param("x = 1\ny = 2", r"^y = \d+$", "y = 3", "x = 1\ny = 3", id="anchors per line"),
        pytest.param("f(a, b)", r"f\((\w), (\w)\)", r"f(\2, \1)", "f(b, a)", id="numbered groups"),
        pytest.param(
            "lr = 0.1", r"(?P<n>lr) = .*", r"\g<n> = 0.01", "lr = 0.01", id="named groups"
        ),
        pytest.param("a\\b", r"\\", r"/", "a/b", id="an escaped backslash in the pattern"),
    ],
)
def test_replace_regex_replaces_the_one_match(source, pattern, content, result):
    doc = doc_with(code("a", source))
    assert doc.replace_regex("a", pattern, content).source == result
    assert doc.revision == 1


@pytest.mark.parametrize(
    ("pattern", "content", "error", "phrase"),
    [
        pytest.param(r"z+", "q", ErrorCode.NO_MATCH, "not found", id="no match"),
        pytest.param(r"^\w", "q", ErrorCode.AMBIGUOUS_MATCH, "2 places", id="two matches"),
        pytest.param(r"(unclosed", "q", ErrorCode.BAD_PATTERN, "regular expression", id="bad re"),
        pytest.param(r"(a)", r"\5", ErrorCode.BAD_PATTERN, "template", id="missing group number"),
        pytest.param(r"(a)", r"\g<nope>", ErrorCode.BAD_PATTERN, "template", id="missing name"),
        pytest.param(r"(a)", "\\", ErrorCode.BAD_PATTERN, "template", id="trailing backslash"),
    ],
)
def test_replace_regex_refuses_and_leaves_the_source(pattern, content, error, phrase):
    doc = doc_with(code("a", "a = 1\nb = 2"))
    with raises(error, phrase):
        doc.replace_regex("a", pattern, content)
    assert doc.cells[0].source == "a = 1\nb = 2"
    assert doc.revision == 0


@pytest.mark.parametrize(
    "pattern",
    [
        pytest.param(r"^(a+)+$", id="nested repeats, which the regex engine cuts short"),
        pytest.param(r"(a|a)+$", id="overlapping alternation, which needs the time limit"),
    ],
)
def test_replace_regex_on_a_pathological_pattern_answers_within_its_limit(pattern):
    doc = doc_with(code("a", "a" * 40 + "b"))
    with pytest.raises(NbstageError) as refused:
        doc.replace_regex("a", pattern, "x")
    assert refused.value.code in (ErrorCode.NO_MATCH, ErrorCode.BAD_PATTERN)
    assert doc.cells[0].source == "a" * 40 + "b"


def test_replace_regex_that_runs_out_of_time_says_so():
    doc = doc_with(code("a", "a" * 40 + "b"))
    with raises(ErrorCode.BAD_PATTERN, "took longer than"):
        doc.replace_regex("a", r"(a|a)+$", "x")


@pytest.mark.parametrize(
    ("pattern", "phrase"),
    [
        pytest.param("a" * 10_001, "10,001 characters long", id="longer than 10,000 characters"),
        pytest.param("a{1000000}", "1,000,000 items", id="a counted repeat of a million"),
        pytest.param("(?:a{200}){200}", "items", id="nested repeats multiplied"),
        pytest.param("a{1000}" * 11, "11,000 items", id="many repeats added up"),
    ],
)
def test_replace_regex_refuses_a_pattern_too_large_to_compile(pattern, phrase):
    """Before the bound, each of these compiled (0.4 s and 274 MB for a million) and the
    answer was no_match; ``a{4294967294}`` ended the process."""
    doc = doc_with(code("a", "a = 1"))
    with raises(ErrorCode.BAD_PATTERN, phrase):
        doc.replace_regex("a", pattern, "x")
    assert doc.cells[0].source == "a = 1"
    assert doc.revision == 0


@pytest.mark.parametrize(
    ("pattern", "weight"),
    [
        ("abc", 3),
        ("a{4294967294}", 4294967294),
        ("(ab){3}c", 7),
        ("(?:(?:a{100}){100}){100}", 1_020_200),
        ("a{0,100000}", 0),
        (r"\{100000}", 8),
        ("[{]{5}", 5),
        ("[]{}]{3}", 3),
        ("(?#{99999})x", 1),
        ("x{}", 3),
    ],
)
def test_pattern_weight_multiplies_counted_repeats_out(pattern, weight):
    assert pattern_weight(pattern) == weight


def test_a_pattern_within_the_limits_is_replaced():
    doc = doc_with(code("a", "b" * 10 + "a" * 9_000))
    pattern = "b{10}" + "a" * 9_000
    assert pattern_weight(pattern) <= MAX_PATTERN_WEIGHT
    assert doc.replace_regex("a", pattern, "x").source == "x"


# outputs


def test_set_outputs_replaces_outputs_and_execution_count():
    doc = doc_with(code("a", "print(1)", [stream("old")], 1))
    given = [stream("1\n")]
    doc.set_outputs("a", given, 2)
    given[0]["text"] = "changed by the caller"
    assert doc.cells[0].outputs == [stream("1\n")]
    assert doc.cells[0].execution_count == 2
    assert doc.revision == 1


def test_set_outputs_that_change_nothing_leave_the_revision():
    doc = doc_with(code("a", "", [stream("x")], 1))
    doc.set_outputs("a", [stream("x")], 1)
    assert doc.revision == 0


@pytest.mark.parametrize(
    ("call", "error"),
    [
        pytest.param(
            lambda d: d.set_outputs("m", [], None), ErrorCode.BAD_CELL_TYPE, id="set on markdown"
        ),
        pytest.param(
            lambda d: d.set_outputs("gone", [], 1),
            ErrorCode.CELL_NOT_FOUND,
            id="set on a gone cell",
        ),
        pytest.param(
            lambda d: d.set_outputs("c", [{"text": "x"}], None),
            ErrorCode.BAD_REQUEST,
            id="an output without output_type",
        ),
    ],
)
def test_output_updates_refuse_cells_that_cannot_hold_them(call, error):
    doc = doc_with(markdown("m"), code("c"))
    with raises(error):
        call(doc)
    assert doc.revision == 0


# reads


def summary(*values: object) -> CellSummary:
    """A row from its values in declared order; the counts not given are left out."""
    return CellSummary(zip(CellSummary.__annotations__, values, strict=False))


def test_summaries_describe_each_cell():
    doc = doc_with(code("a", "import os\nos.getcwd()", [display("'/'")], 7), markdown("m", "# T"))
    assert doc.summaries() == [
        summary("a", 0, "code", "import os", 7, 1),
        summary("m", 1, "markdown", "# T"),
    ]


def test_a_summary_leaves_out_the_counts_a_cell_does_not_have():
    doc = doc_with(code("n", "x = 1"), code("q", "x = 1", count=3), code("o", "", [stream("1")]))
    assert [sorted(row.keys() - summary("", 0, "", "").keys()) for row in doc.summaries()] == [
        [],
        ["execution_count"],
        ["output_count"],
    ]


def test_summaries_follow_every_change_also_after_a_window_was_read():
    doc = doc_with(code("a", "x = 1"), code("b", "y = 2"))
    assert [row["source_preview"] for row in doc.summaries()] == ["x = 1", "y = 2"]
    doc.set_cell("a", "x = 10")
    assert [row["source_preview"] for row in doc.summaries(1)] == ["y = 2"]
    doc.set_outputs("b", [stream("2")], 1)
    assert doc.summaries() == [
        summary("a", 0, "code", "x = 10"),
        summary("b", 1, "code", "y = 2", 1, 1),
    ]


@pytest.mark.parametrize(
    ("source", "preview"),
    [
        pytest.param("", "", id="an empty source"),
        pytest.param("\n\n  x = 1\ny", "x = 1", id="leading blank lines are skipped"),
        pytest.param("a\r\nb", "a", id="a CRLF line end is dropped"),
        pytest.param("x" * 120, "x" * 120, id="a 120 character line is whole"),
        pytest.param("x" * 500, "x" * 119 + "…", id="a longer line is cut to 120 characters"),
    ],
)
def test_the_source_preview_is_the_first_line_capped(source, preview):
    assert source_preview(source) == preview


@pytest.mark.parametrize(
    ("start", "count", "expected"),
    [
        pytest.param(0, None, ["a", "b", "c", "d"], id="everything by default"),
        pytest.param(1, 2, ["b", "c"], id="a window in the middle"),
        pytest.param(3, 10, ["d"], id="a count past the end stops at the end"),
        pytest.param(9, None, [], id="a start past the end is empty"),
        pytest.param(0, 0, [], id="a zero count is empty"),
    ],
)
def test_reads_take_a_window_of_cells(start, count, expected):
    doc = doc_with(*(code(i) for i in "abcd"))
    assert [s["cell_id"] for s in doc.summaries(start, count)] == expected
    indexes = [ids(doc).index(i) for i in expected]
    assert [s["index"] for s in doc.summaries(start, count)] == indexes
    assert [c["id"] for c in doc.cells_json(start, count)] == expected


@pytest.mark.parametrize(
    ("start", "count"),
    [pytest.param(-1, None, id="a negative start"), pytest.param(0, -1, id="a negative count")],
)
def test_reads_refuse_negative_windows(start, count):
    doc = doc_with(code("a"))
    with raises(ErrorCode.BAD_REQUEST, "start=0"):
        doc.summaries(start, count)
    with raises(ErrorCode.BAD_REQUEST):
        doc.cells_json(start, count)


def test_cells_json_without_outputs_leaves_out_the_outputs_key():
    doc = doc_with(code("a", "1", [display("1")], 1), markdown("m"))
    cells = doc.cells_json(include_outputs=False)
    assert "outputs" not in cells[0]
    assert cells[0]["execution_count"] == 1
    assert doc.cells_json()[0]["outputs"] == [display("1")]


def test_the_view_has_the_get_cell_shape():
    cell = code("a", "1", [display("1")], 2)
    assert cell.view() == CellView("a", "code", "1", 2, [display("1")])


def test_index_of_finds_the_position():
    doc = doc_with(*(code(i) for i in "abc"))
    assert [doc.index_of(i) for i in "cab"] == [2, 0, 1]
    assert len(doc) == 3


# nbformat output


@pytest.mark.parametrize(
    ("kernelspec", "metadata"),
    [
        pytest.param(
            PYTHON3,
            {
                "kernelspec": {
                    "name": "python3",
                    "display_name": "Python 3 (ipykernel)",
                    "language": "python",
                },
                "language_info": {"name": "python"},
            },
            id="a python3 notebook",
        ),
        pytest.param(
            KernelspecInfo("ir", "R", "R"),
            {
                "kernelspec": {"name": "ir", "display_name": "R", "language": "R"},
                "language_info": {"name": "R"},
            },
            id="a notebook for another kernel",
        ),
        pytest.param(None, {}, id="a notebook without a kernel"),
    ],
)
def test_an_empty_document_is_a_valid_notebook(kernelspec, metadata):
    nb = Document.empty(kernelspec).to_json()
    assert_valid(nb)
    assert (nb["nbformat"], nb["nbformat_minor"], nb["cells"]) == (4, 5, [])
    assert nb["metadata"] == metadata


def test_a_document_with_every_kind_of_cell_is_a_valid_notebook():
    doc = Document.empty()
    a, _ = doc.create_cell("print(1)")
    doc.set_outputs(a.id, [stream("1\n"), display("x")], 1)
    doc.create_cell("# Title", "markdown")
    doc.create_cell("raw text", "raw")
    doc.cells.append(markdown("img", "![p](attachment:p.png)", {"p.png": {"image/png": "AA=="}}))
    error = {"output_type": "error", "ename": "E", "evalue": "v", "traceback": ["t"]}
    doc.set_outputs(doc.create_cell("1/0")[0].id, [error], None)
    nb = doc.to_json()
    assert_valid(nb)
    assert "outputs" not in nb["cells"][1]
    assert "execution_count" not in nb["cells"][2]
    assert nb["cells"][3]["attachments"] == {"p.png": {"image/png": "AA=="}}


def test_the_python3_metadata_is_not_shared_between_documents():
    first = Document.empty()
    first.metadata["kernelspec"]["display_name"] = "changed"
    assert Document.empty().metadata["kernelspec"]["display_name"] != "changed"


# from_json


def nb_of(*cells: dict) -> dict:
    return {"cells": list(cells), "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


def raw_code(source="", **extra) -> dict:
    return {"cell_type": "code", "metadata": {}, "source": source, "outputs": [], **extra}


def test_from_json_keeps_valid_unique_ids_and_content():
    nb = nb_of(
        raw_code(["a = 1\n", "b = 2"], id="keep-me", execution_count=3, outputs=[stream("x")]),
        {"cell_type": "markdown", "metadata": {"tags": ["t"]}, "source": "# T", "id": "m_1"},
    )
    doc = Document.from_json(nb)
    assert ids(doc) == ["keep-me", "m_1"]
    assert doc.cells[0].source == "a = 1\nb = 2"
    assert (doc.cells[0].execution_count, doc.cells[0].outputs) == (3, [stream("x")])
    assert doc.cells[1].metadata == {"tags": ["t"]}
    assert doc.revision == 0
    assert_valid(doc.to_json())


@pytest.mark.parametrize(
    ("given", "kept"),
    [
        pytest.param([None, None, None], [False, False, False], id="missing ids are assigned"),
        pytest.param(["x", "x", "y"], [True, False, True], id="a repeated id is replaced"),
        pytest.param(["bad id!", "", "z" * 65], [False] * 3, id="ids nbformat forbids go"),
    ],
)
def test_from_json_gives_fresh_ids_where_needed(given, kept):
    cells = [raw_code(str(i), **({} if c is None else {"id": c})) for i, c in enumerate(given)]
    doc = Document.from_json(nb_of(*cells))
    got = ids(doc)
    assert len(set(got)) == len(got)
    for cid, old, keep in zip(got, given, kept, strict=True):
        assert (cid == old) if keep else HEX8.fullmatch(cid)
    assert [c.source for c in doc.cells] == ["0", "1", "2"]
    assert_valid(doc.to_json())


def test_from_json_joins_multiline_output_text_but_not_json_data():
    out = {
        "output_type": "execute_result",
        "execution_count": 1,
        "metadata": {},
        "data": {"text/plain": ["a\n", "b"], "application/json": ["x", "y"]},
    }
    doc = Document.from_json(nb_of(raw_code(outputs=[out, stream(["p", "q"])], id="c")))
    first, second = doc.cells[0].outputs
    assert first["data"] == {"text/plain": "a\nb", "application/json": ["x", "y"]}
    assert second["text"] == "pq"


def test_from_json_takes_its_own_copy():
    nb = nb_of(raw_code("x", id="c", outputs=[stream("o")]))
    doc = Document.from_json(nb)
    nb["cells"][0]["outputs"][0]["text"] = "changed"
    nb["cells"][0]["metadata"]["k"] = 1
    assert doc.cells[0].outputs == [stream("o")]
    assert doc.cells[0].metadata == {}


@pytest.mark.parametrize(
    "bad",
    [
        pytest.param({"cell_type": "heading", "source": "x"}, id="a cell type v4 does not have"),
        pytest.param("not a cell", id="a cell that is not an object"),
    ],
)
def test_from_json_refuses_cells_it_cannot_hold(bad):
    with raises(ErrorCode.BAD_REQUEST, "Cell 1"):
        Document.from_json(nb_of(raw_code(), bad))


# --- which cells a revision changed (changed_since) ---------------------------------------


def _three() -> Document:
    doc = Document.empty()
    for source in ("a", "b", "c"):
        doc.create_cell(source, "code", None)
    return doc


@pytest.mark.parametrize(
    ("change", "named"),
    [
        (lambda d: d.create_cell("new", "code", 0), {"made"}),
        (lambda d: d.set_cell(d.cells[1].id, source="b2"), {1}),
        (lambda d: d.set_cell(d.cells[1].id, cell_type="markdown"), {1}),
        (lambda d: d.set_cell(d.cells[1].id, source="b"), set()),
        (lambda d: d.replace_match(d.cells[2].id, "c", "see"), {2}),
        (lambda d: d.set_outputs(d.cells[0].id, [], 3), {0}),
        (lambda d: d.clear_outputs(None), {0, 2}),
        (lambda d: d.change_tags(d.cells[1].id, ["t"], []), {1}),
        (lambda d: d.delete_cell(d.cells[1].id), set()),
        (lambda d: d.move_cell(d.cells[0].id, d.cells[2].id), set()),
        (lambda d: d.set_dependencies(["numpy"]), set()),
    ],
    ids=[
        "create",
        "source",
        "retype",
        "same-source",
        "replace",
        "outputs",
        "clear-all",
        "tags",
        "delete",
        "move",
        "metadata",
    ],
)
def test_a_revision_names_the_cells_whose_content_it_changed(change, named) -> None:
    doc = _three()
    doc.set_outputs(doc.cells[0].id, [{"output_type": "stream", "name": "stdout", "text": "0"}], 1)
    doc.set_outputs(doc.cells[2].id, [], 2)
    before, ids = doc.revision, [c.id for c in doc.cells]
    made = change(doc)
    made_id = made[0].id if isinstance(made, tuple) else None
    expected = {made_id if n == "made" else ids[n] for n in named}
    assert doc.changed_since(before) == expected
    assert doc.changed_since(doc.revision) == set()


def test_changes_are_told_since_any_revision_still_remembered() -> None:
    doc = _three()
    first, second, third = (c.id for c in doc.cells)
    start = doc.revision
    doc.set_cell(first, source="1")
    middle = doc.revision
    doc.set_cell(second, source="2")
    doc.set_cell(first, source="11")
    assert doc.changed_since(start) == {first, second}
    assert doc.changed_since(middle) == {first, second}
    assert doc.changed_since(doc.revision - 1) == {first}
    assert doc.changed_since(doc.revision + 1) is None
    assert doc.changed_since(0) == {first, second, third}  # each was created after 0


def test_after_a_whole_replacement_only_later_changes_are_known() -> None:
    doc = _three()
    before = doc.revision
    doc.replace(Document.from_json(doc.to_json()))
    assert doc.revision == before + 1
    assert doc.changed_since(before) is None
    doc.set_cell(doc.cells[0].id, source="z")
    assert doc.changed_since(before + 1) == {doc.cells[0].id}


def test_a_reader_further_behind_than_the_record_reads_every_cell() -> None:
    doc = _three()
    start = doc.revision
    for i in range(document.CHANGES_KEPT + 1):
        doc.set_cell(doc.cells[i % 3].id, source=f"s{i}")
    assert doc.changed_since(start) is None
    kept = document.CHANGES_KEPT
    last_two = {doc.cells[(kept - 1) % 3].id, doc.cells[kept % 3].id}
    assert doc.changed_since(doc.revision - 2) == last_two
