"""Harness scripts (SPEC §9) as pure data: parsing, validation, substitution, expectations.

Each table row is one script fragment or one value and what must come of it. Nothing here
starts a process; ``tests/e2e/test_harness.py`` runs the scripts for real.
"""

from __future__ import annotations

import textwrap
from typing import Any

import pytest

from nbstage.entrypoints.harness.faults import FAULTS
from nbstage.entrypoints.harness.match import (
    Outcome,
    SubstitutionError,
    check,
    execution_status,
    references,
    shorten,
    subset_mismatch,
    substitute,
)
from nbstage.entrypoints.harness.model import Expect, ScriptError, Step, batches
from nbstage.entrypoints.harness.run import StepResult, describe
from nbstage.entrypoints.harness.script import parse_script
from nbstage.entrypoints.harness.steps import FAULT_PARAMS, parse_expect

HEAD = """
[run]
name = "t"
timeout_secs = 30

[clients.alice]
[clients.bob]
label = "Bob B"
mode = "2026-07-28"
"""

CREATE = """
[[step]]
client = "alice"
call = "create_notebook"
save = "nb"
"""


def script(body: str, head: str = HEAD) -> Any:
    return parse_script(textwrap.dedent(head) + textwrap.dedent(body))


def error_of(body: str, head: str = HEAD) -> str:
    with pytest.raises(ScriptError) as caught:
        script(body, head)
    return str(caught.value)


# --- a valid script -------------------------------------------------------------------------


def test_a_full_script_parses_into_run_clients_and_steps() -> None:
    parsed = script(
        CREATE
        + """
        [[step]]
        group = "g"
        client = "bob"
        call = "connect_notebook"
        args = { notebook_id = "${nb.notebook_id}" }
        expect = { is_error = false, status = "done", text_contains = "x", within_secs = 5 }

        [[step]]
        group = "g"
        fault = "kill_kernel"
        notebook = "${nb.notebook_id}"

        [[step]]
        fault = "upgrade_daemon"
        version = "9.9.9"
        """,
        head=HEAD.replace(
            "timeout_secs = 30",
            "timeout_secs = 30\nsettings = { keep_alive_secs = 2, reaper_soft_cap = 4 }",
        ),
    )
    assert parsed.run.name == "t"
    assert parsed.run.timeout_secs == 30.0
    assert parsed.run.settings == {
        "NBSTAGE_KEEP_ALIVE_SECS": "2",
        "NBSTAGE_REAPER_SOFT_CAP": "4",
    }
    assert parsed.clients["alice"].label == "alice"
    assert parsed.clients["alice"].mode == "legacy"
    assert (parsed.clients["bob"].label, parsed.clients["bob"].mode) == ("Bob B", "2026-07-28")
    create, connect, kill, upgrade = parsed.steps
    assert (create.number, create.save, create.expect) == (1, "nb", Expect())
    assert connect.expect == Expect(status="done", text_contains=("x",), within_secs=5.0)
    assert connect.group == kill.group == "g"
    assert kill.params == {"notebook": "${nb.notebook_id}"}
    assert (upgrade.fault, upgrade.params) == ("upgrade_daemon", {"version": "9.9.9"})
    assert [s.number for s in batches(parsed.steps)[1]] == [2, 3]


def test_step_errors_name_the_line_of_the_step_header() -> None:
    message = error_of(CREATE + '\n[[step]]\nclient = "alice"\ncall = "get_all_cells"\nnope = 1\n')
    header_line = (textwrap.dedent(HEAD) + textwrap.dedent(CREATE)).count("\n") + 2
    assert message.startswith(f"step 2 (line {header_line}): unknown key 'nope'")


# --- scripts that must not run ---------------------------------------------------------------

BAD_TABLES = [
    ("[run]\ntimeout = 3\n", "[run]: unknown key 'timeout'"),
    ("[run]\ntimeout_secs = 0\n", "[run]: timeout_secs must be a positive number"),
    ("[run]\nsettings = { keep_alive = 1 }\n", "[run]: unknown setting 'keep_alive'"),
    ("[run]\nsettings = { keep_alive_secs = 'soon' }\n", "setting 'keep_alive_secs' must be a"),
    ("[clients.alice]\nlabl = 'a'\n", "[clients.alice] (line 1): unknown key 'labl'"),
    ("[clients.alice]\nmode = 'auto'\n", "mode must be one of legacy, 2026-07-28"),
    ("[other]\n", "unknown key 'other' at the top level"),
    ("[clients.alice]\n", "no [[step]] entries"),
    ("[[step\n", "not valid TOML"),
]

ONE_CLIENT = "[clients.alice]\n"
BAD_STEPS = [
    ("[[step]]\ncall = 'x'\n", "step 1 (line 2): client must be a non-empty string"),
    ("[[step]]\nclient = 'carol'\ncall = 'get_all_cells'\n", "client 'carol' is not defined"),
    ("[[step]]\nclient = 'alice'\n", "step 1 (line 2): has neither call nor fault"),
    (
        "[[step]]\nclient = 'alice'\ncall = 'get_all_cells'\nfault = 'kill_daemon'\n",
        "has both call and fault",
    ),
    ("[[step]]\nclient = 'alice'\ncall = 'run_everything'\n", "unknown tool 'run_everything'"),
    ("[[step]]\nfault = 'explode'\n", "step 1 (line 2): unknown fault 'explode'"),
    ("[[step]]\nfault = 'kill_daemon'\nclient = 'alice'\n", "unknown key 'client' for fault"),
    ("[[step]]\nfault = 'upgrade_daemon'\n", "fault upgrade_daemon needs 'version'"),
    ("[[step]]\nfault = 'kill_child'\nclient = 'nobody'\n", "client 'nobody' is not defined"),
    ("[[step]]\nfault = 'sleep'\nsecs = -1\n", "secs must be a non-negative number"),
    ("[[step]]\nfault = 'sleep'\nsecs = 1\ngroup = true\n", "group must be a string or"),
    (
        "[[step]]\nclient = 'alice'\ncall = 'get_all_cells'\nexpect = { is_eror = true }\n",
        "unknown key 'is_eror' in expect",
    ),
    (
        "[[step]]\nclient = 'alice'\ncall = 'get_all_cells'\nexpect = { status = 'ok' }\n",
        "expect.status must be one of",
    ),
    (
        "[[step]]\nclient = 'alice'\ncall = 'get_all_cells'\nexpect = { within_secs = 0 }\n",
        "expect.within_secs must be a positive number",
    ),
    (
        "[[step]]\nclient = 'alice'\ncall = 'get_all_cells'\nexpect = { text_contains = 3 }\n",
        "expect.text_contains must be a non-empty string or a list",
    ),
    ("[[step]]\nclient = 'alice'\ncall = 'get_all_cells'\nsave = 'a-b'\n", "save must be a name"),
    ("[[step]]\nclient = 'alice'\ncall = 'get_all_cells'\nsave = 'run'\n", "is reserved"),
    (
        "[[step]]\nclient = 'alice'\ncall = 'connect_notebook'\n"
        "args = { notebook_id = '${nb.notebook_id}' }\n",
        "step 1 (line 2): substitution ${nb...} refers to 'nb', which no earlier step saves",
    ),
    (
        "[[step]]\nclient = 'alice'\ncall = 'get_all_cells'\nargs = { x = '${1nb}' }\n",
        "bad substitution ${1nb}",
    ),
    (
        "[[step]]\nclient = 'alice'\ncall = 'get_all_cells'\nargs = { x = '${run.home}' }\n",
        "unknown built-in substitution",
    ),
]


@pytest.mark.parametrize(("body", "fragment"), BAD_TABLES)
def test_a_bad_table_is_refused_with_one_line_naming_it(body: str, fragment: str) -> None:
    message = error_of(body, head="")
    assert fragment in message
    assert "\n" not in message


@pytest.mark.parametrize(("body", "fragment"), BAD_STEPS)
def test_a_bad_step_is_refused_with_one_line_naming_it(body: str, fragment: str) -> None:
    message = error_of(body, head=ONE_CLIENT)
    assert fragment in message
    assert message.startswith("step 1 (line 2): ")
    assert "\n" not in message


def test_a_substitution_from_a_later_step_or_the_same_group_is_refused() -> None:
    later = '[[step]]\nclient = "bob"\ncall = "get_cell"\nargs = { cell_id = "${nb.x}" }\n'
    assert "step 1" in error_of(later + CREATE)
    same_group = CREATE.replace('save = "nb"', 'save = "nb"\ngroup = 1') + later.replace(
        "[[step]]", "[[step]]\ngroup = 1"
    )
    assert "step 2" in error_of(same_group)
    after_group = CREATE.replace('save = "nb"', 'save = "nb"\ngroup = 1') + later
    assert len(script(after_group).steps) == 2


def test_substitutions_are_checked_in_expectations_and_fault_parameters_too() -> None:
    in_expect = (
        '[[step]]\nclient = "bob"\ncall = "get_all_cells"\nexpect = { json = { a = "${q}" } }'
    )
    assert "refers to 'q'" in error_of(in_expect)
    in_fault = '[[step]]\nfault = "kill_kernel"\nnotebook = "${q.notebook_id}"\n'
    assert "refers to 'q'" in error_of(in_fault)


def test_every_fault_the_script_accepts_is_one_the_harness_carries_out() -> None:
    assert set(FAULT_PARAMS) == set(FAULTS)


# --- groups -----------------------------------------------------------------------------------


def _steps(*groups: str | None) -> list[Step]:
    return [Step(number, None, group=g, fault="sleep") for number, g in enumerate(groups, 1)]


@pytest.mark.parametrize(
    ("groups", "expected"),
    [
        ((None, None), [[1], [2]]),
        (("a", "a", None, "a"), [[1, 2], [3], [4]]),
        (("a", "b", "b"), [[1], [2, 3]]),
        ((None, "a", "a", "a"), [[1], [2, 3, 4]]),
    ],
)
def test_only_consecutive_steps_of_one_group_run_together(groups, expected) -> None:
    assert [[step.number for step in batch] for batch in batches(_steps(*groups))] == expected


# --- substitution -----------------------------------------------------------------------------

SAVED = {
    "nb": {"notebook_id": "N1", "path": None, "count": 3},
    "r": {"execution": {"execution_id": "E1", "status": "done"}, "executions": [{"a": 1}]},
}


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("${nb.notebook_id}", "N1"),
        ("${nb.count}", 3),
        ("${nb.path}", None),
        ("${r.execution}", {"execution_id": "E1", "status": "done"}),
        ("id=${nb.notebook_id}, n=${nb.count}", "id=N1, n=3"),
        ("${r.execution.execution_id}", "E1"),
        ("${r.executions.0.a}", 1),
        ({"a": ["${nb.notebook_id}", 2], "b": True}, {"a": ["N1", 2], "b": True}),
        ("no {braces} here", "no {braces} here"),
        (("x ${nb.notebook_id}",), ("x N1",)),
    ],
)
def test_substitution_reads_saved_values_and_keeps_the_type_of_a_whole_string(value, expected):
    assert substitute(value, SAVED) == expected


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        ("${zz.notebook_id}", "nothing was saved as 'zz'"),
        ("${nb.missing}", "nb has no 'missing'"),
        ("${r.executions.5}", "r.executions has no '5'"),
        ("${nb.count.x}", "nb.count has no 'x'"),
    ],
)
def test_substitution_of_something_not_saved_says_what_is_missing(value, fragment) -> None:
    with pytest.raises(SubstitutionError, match=fragment.replace(".", r"\.")):
        substitute(value, SAVED)


def test_references_are_found_at_any_depth() -> None:
    found = list(references({"a": ["${x.y.z}", {"b": "${w} and ${v.k}"}], "n": 1}))
    assert found == [("x", ("y", "z")), ("w", ()), ("v", ("k",))]


# --- expectations -----------------------------------------------------------------------------

DONE = Outcome(
    False,
    "Created code cell c1.\n42",
    {"cell_id": "c1", "execution": {"status": "done", "outputs": [{"text": "42"}]}},
)
RUN_ALL = Outcome(False, "", {"executions": [{"status": "done"}, {"status": "error"}]})
ERROR = Outcome(True, "No active notebook session.", None)


def expect(**fields: Any) -> Expect:
    return parse_expect(fields)


@pytest.mark.parametrize(
    ("expectation", "outcome", "problems"),
    [
        (expect(), DONE, []),
        (expect(), ERROR, ["is_error false"]),
        (expect(is_error=True), ERROR, []),
        (expect(is_error=True, text_contains="No active"), ERROR, []),
        (expect(status="done"), DONE, []),
        (expect(status="error"), DONE, ["status 'error' (got 'done')"]),
        (expect(status="error"), RUN_ALL, []),
        (expect(status="done"), RUN_ALL, ["status 'done' (got 'error')"]),
        (expect(status="done", is_error=True), ERROR, ["status 'done' (got None)"]),
        (expect(text_contains=["42", "c1"]), DONE, []),
        (expect(text_contains=["43", "c1"]), DONE, ["text containing '43'"]),
        (expect(text_not_contains="[nbstage]"), DONE, []),
        (expect(text_not_contains="42"), DONE, ["text without '42'"]),
        (expect(json={"cell_id": "c1"}), DONE, []),
        (expect(json={"execution": {"status": "done"}}), DONE, []),
        (
            expect(json={"execution": {"status": "error"}}),
            DONE,
            ['json subset (execution.status is "done", expected "error")'],
        ),
        (expect(json={"x": 1}), ERROR, ["is_error false", "json subset (x is missing)"]),
        (expect(within_secs=3), DONE, []),
    ],
)
def test_expectations_list_exactly_what_an_outcome_misses(expectation, outcome, problems):
    assert check(expectation, outcome) == problems


@pytest.mark.parametrize(
    ("expected", "actual", "problem"),
    [
        ({}, {"a": 1}, None),
        ({"a": 1}, {"a": 1, "b": 2}, None),
        ({"a": 2}, {"a": 2.0}, None),
        ({"a": True}, {"a": 1}, "a is 1, expected true"),
        ({"a": 1}, {"a": True}, "a is true, expected 1"),
        ({"a": [1, 2]}, {"a": [1, 2]}, None),
        ({"a": [1]}, {"a": [1, 2]}, "a is [1,2], expected [1]"),
        ({"a": {"b": {"c": "x"}}}, {"a": {"b": {"c": "x", "d": 0}}}, None),
        ({"a": {"b": 1}}, {"a": "s"}, 'a is "s", not an object'),
        ({"a": "1"}, {"a": 1}, 'a is 1, expected "1"'),
    ],
)
def test_json_expectations_are_subsets_for_objects_and_exact_otherwise(expected, actual, problem):
    assert subset_mismatch(expected, actual) == problem


@pytest.mark.parametrize(
    ("structured", "status"),
    [
        (None, None),
        ({}, None),
        ({"execution": {"status": "running"}}, "running"),
        ({"executions": []}, None),
        ({"executions": [{"status": "done"}, {"status": "cancelled"}]}, "cancelled"),
    ],
)
def test_status_is_the_execution_or_the_last_of_run_all(structured, status) -> None:
    assert execution_status(structured) == status


# --- what a step's line says ----------------------------------------------------------------


def test_a_failed_call_line_says_what_was_expected_and_what_came_back() -> None:
    step = script(CREATE).steps[0]
    result = StepResult(step, describe(step), False, 1.234, 0.0)
    result.expected, result.got = "text containing '43'", DONE
    line = result.line()
    assert line.startswith("FAIL   1  alice create_notebook  1.23s  expected text containing '43'")
    assert "got is_error=false, text='Created code cell c1.\\n42'" in line


def test_a_passing_fault_line_names_the_fault_and_what_it_hit() -> None:
    step = Step(4, None, fault="kill_child", params={"client": "bob"})
    result = StepResult(step, describe(step), True, 0.05, 0.0, detail="session manager pid 7")
    assert result.line() == "PASS   4  fault kill_child bob (session manager pid 7)  0.05s"


def test_long_text_is_shortened_keeping_head_and_tail() -> None:
    text = "a" * 500 + "z" * 500
    short = shorten(text, 300)
    assert short.startswith("a" * 200)
    assert short.endswith("z" * 100)
    assert "[700 chars]" in short
