"""The inline dependency rules (actors/daemon/environment/dependencies.py), as tables of cases."""

from __future__ import annotations

import pytest

from nbstage.actors.daemon.environment import dependencies as deps
from nbstage.actors.daemon.notebook.journal import apply_records
from nbstage.actors.daemon.notebook.journal import dependencies as dependencies_record
from nbstage.protocol.common.errors import ErrorCode, NbstageError
from nbstage.protocol.daemon_actors.kernels import EnvironmentWanted


@pytest.mark.parametrize(
    ("metadata", "expected"),
    [
        pytest.param({}, (), id="no runt key"),
        pytest.param(
            {"runt": {"uv": {"dependencies": ["six", "a>=1"]}}}, ("six", "a>=1"), id="set"
        ),
        pytest.param({"runt": {"uv": {"dependencies": "six"}}}, (), id="not a list"),
        pytest.param({"runt": {"uv": {"dependencies": ["six", 3]}}}, ("six",), id="non-strings"),
        pytest.param({"runt": "odd"}, (), id="runt not an object"),
        pytest.param([], (), id="metadata not an object"),
    ],
)
def test_reading_upstreams_key(metadata: object, expected: tuple[str, ...]) -> None:
    assert deps.read_dependencies(metadata) == expected


def test_writing_keeps_every_other_key() -> None:
    metadata = {"kernelspec": {"name": "python3"}, "runt": {"uv": {"python": "3.11"}, "x": 1}}
    written = deps.with_dependencies(metadata, ["six"])
    assert written == {
        "kernelspec": {"name": "python3"},
        "runt": {"uv": {"python": "3.11", "dependencies": ["six"]}, "x": 1},
    }
    assert metadata["runt"]["uv"] == {"python": "3.11"}, "the original is left alone"
    assert deps.read_dependencies(written) == ("six",)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        pytest.param("six", None, id="a name"),
        pytest.param("pandas[excel]>=2,<3; python_version>='3.9'", None, id="full PEP 508"),
        pytest.param("six @ https://example.org/six.whl", None, id="a URL"),
        pytest.param("six>=", "not a PEP 508", id="a dangling operator"),
        pytest.param("", "not a PEP 508", id="empty"),
        pytest.param("rm -rf /", "not a PEP 508", id="a command"),
        pytest.param("packaging\nsix", "not a PEP 508", id="two lines"),
        pytest.param("six\n", "not a PEP 508", id="a trailing newline"),
        pytest.param(5, "not a string", id="not a string"),
        pytest.param("a" * 1001, "over 1000", id="too long"),
    ],
)
def test_requirement_problems(text: object, problem: str | None) -> None:
    found = deps.requirement_problem(text)
    if problem is None:
        assert found is None
    else:
        assert found is not None
        assert problem in found


@pytest.mark.parametrize(
    ("one", "other", "same"),
    [
        pytest.param(["six", "numpy"], ["numpy", "six"], True, id="order"),
        pytest.param(["Six"], ["six"], True, id="case"),
        pytest.param(["six", "six"], ["six"], True, id="repeats"),
        pytest.param(["a>=1,<2"], ["a<2,>=1"], True, id="specifier order"),
        pytest.param(["Foo_Bar"], ["foo-bar"], True, id="name spelling"),
        pytest.param(["six"], ["six>=1"], False, id="a specifier"),
        pytest.param(["six"], [], False, id="empty"),
    ],
)
def test_fingerprints_name_the_set_not_its_spelling(
    one: list[str], other: list[str], same: bool
) -> None:
    assert (deps.fingerprint(one) == deps.fingerprint(other)) is same


def test_the_python_version_is_part_of_the_fingerprint() -> None:
    assert deps.fingerprint(["six"], (3, 11)) != deps.fingerprint(["six"], (3, 12))


def test_no_joining_of_strings_makes_two_sets_collide() -> None:
    """A hand-edited file may hold a string with a newline (it is no requirement, so it is
    kept as it is): it must not name the same environment as the set it spells out."""
    assert deps.fingerprint(["six", "packaging"]) != deps.fingerprint(["packaging\nsix"])
    assert deps.fingerprint(["a", "b"]) != deps.fingerprint(["a\nb"])
    assert len(deps.fingerprint(["six"])) == 64, "the full sha256, as trust is keyed by it"


@pytest.mark.parametrize(
    ("current", "add", "remove", "after", "added", "removed", "not_found"),
    [
        pytest.param([], ["six"], [], ["six"], ["six"], [], [], id="add to none"),
        pytest.param(["six"], ["six"], [], ["six"], [], [], [], id="add what is there"),
        pytest.param(["six"], ["Six>=1"], [], ["Six>=1"], ["Six>=1"], [], [], id="replace"),
        pytest.param(["a", "six", "b"], [], ["six"], ["a", "b"], [], ["six"], [], id="remove"),
        pytest.param(["six>=1"], [], ["six"], [], [], ["six>=1"], [], id="remove by name"),
        pytest.param(["a"], [], ["six"], ["a"], [], [], ["six"], id="remove a stranger"),
        pytest.param(["a"], ["b"], ["a"], ["b"], ["b"], ["a"], [], id="both"),
    ],
)
def test_edits(
    current: list[str],
    add: list[str],
    remove: list[str],
    after: list[str],
    added: list[str],
    removed: list[str],
    not_found: list[str],
) -> None:
    edit = deps.edit_dependencies(current, add, remove)
    assert edit.before == tuple(current)
    assert edit.after == tuple(after)
    assert edit.added == tuple(added)
    assert edit.removed == deps.Removal(tuple(remove), tuple(removed), tuple(not_found))


SIX = deps.fingerprint(["six"])


@pytest.mark.parametrize(
    ("current", "trusted", "add", "trust", "trusted_after"),
    [
        pytest.param([], set(), ["six"], False, True, id="the agent's own additions"),
        pytest.param(["six"], set(), [], False, False, id="a file's set is not trusted"),
        pytest.param(["six"], set(), [], True, True, id="until approved"),
        pytest.param(["six"], {SIX}, [], False, True, id="or approved before"),
        pytest.param(["six"], set(), ["a"], False, False, id="an edit does not launder it"),
        pytest.param(["six"], {SIX}, ["a"], False, True, id="an edit of a trusted set"),
    ],
)
def test_what_a_call_trusts(
    current: list[str], trusted: set[str], add: list[str], trust: bool, trusted_after: bool
) -> None:
    plan = deps.plan_change(current, trusted, add, [], trust, None)
    assert plan.trusted_after is trusted_after
    assert plan.before_fingerprint == deps.fingerprint(current)
    assert plan.after_fingerprint == deps.fingerprint(plan.edit.after)


@pytest.mark.parametrize(
    ("add", "remove", "expected", "code"),
    [
        pytest.param(["six", "bad>="], [], None, ErrorCode.BAD_REQUIREMENT, id="one bad string"),
        pytest.param([], ["x y"], None, ErrorCode.BAD_REQUIREMENT, id="a bad removal"),
        pytest.param(["a"], [], "0" * 16, ErrorCode.DEPENDENCIES_CHANGED, id="stale"),
    ],
)
def test_refusals_change_nothing_here(
    add: list[str], remove: list[str], expected: str | None, code: ErrorCode
) -> None:
    with pytest.raises(NbstageError) as refused:
        deps.plan_change(["six"], set(), add, remove, False, expected)
    assert refused.value.code is code
    if code is ErrorCode.DEPENDENCIES_CHANGED:
        assert "Dependencies changed since review" in refused.value.message


def test_approving_a_file_checks_every_string_it_holds() -> None:
    """A hand-edited set may hold anything; approving it must not hand uv an option."""
    with pytest.raises(NbstageError) as refused:
        deps.plan_change(["six", "--index-url=https://elsewhere"], set(), [], [], True, None)
    assert refused.value.code is ErrorCode.BAD_REQUIREMENT
    assert "--index-url" in refused.value.message
    plan = deps.plan_change(["six", "--index-url=x"], set(), [], [], False, None)
    assert plan.trusted_after is False, "reading it is fine; it stays unapproved"


def test_a_fingerprint_that_still_matches_is_accepted() -> None:
    plan = deps.plan_change(["six"], set(), ["a"], [], False, SIX)
    assert plan.edit.after == ("six", "a")


@pytest.mark.parametrize(
    ("current", "trusted", "search_from", "wanted"),
    [
        pytest.param(["six"], {SIX}, "/nb", EnvironmentWanted(("six",), SIX), id="inline"),
        pytest.param(["six"], set(), "/nb", EnvironmentWanted(), id="untrusted: the pool"),
        pytest.param([], set(), "/nb", EnvironmentWanted(search_from="/nb"), id="project?"),
        pytest.param(
            [],
            {"p1"},
            "/nb",
            EnvironmentWanted(search_from="/nb", trusted_projects=("p1",)),
            id="approved projects go along",
        ),
        pytest.param([], set(), None, EnvironmentWanted(), id="nowhere to look"),
    ],
)
def test_where_a_kernel_runs(
    current: list[str], trusted: set[str], search_from: str | None, wanted: EnvironmentWanted
) -> None:
    assert deps.wanted_environment(current, trusted, search_from) == wanted


def test_the_approval_line() -> None:
    line = deps.approval_line(["six", "numpy>=2"])
    assert line.line() == (
        "[nbstage] this notebook asks for 2 packages (six, numpy>=2); "
        "approve with manage_dependencies(trust=true)"
    )
    assert line.next_call == "manage_dependencies(trust=true)"
    assert "1 package (six)" in deps.approval_line(["six"]).message


def test_a_journal_record_brings_the_dependencies_back() -> None:
    notebook = {"cells": [], "metadata": {"kernelspec": {"name": "python3"}}}
    replay = apply_records(notebook, [dependencies_record(["six"])])
    assert replay.applied == 1
    assert deps.read_dependencies(replay.notebook["metadata"]) == ("six",)
    assert replay.notebook["metadata"]["kernelspec"] == {"name": "python3"}
    again = apply_records(replay.notebook, [dependencies_record(["six"])])
    assert again.applied == 0, "a record the notebook already holds changes nothing"
    broken = apply_records(notebook, [{"op": "dependencies", "dependencies": "six"}])
    assert broken.skipped == 1
