"""The MCP tool catalogue (protocol/mcp/tools.py) against SPEC §4 and the MCP Tool schema."""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Iterator
from typing import Any

import jsonschema
import mcp_types
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nbstage.protocol.common.errors import ErrorCode, NbstageError
from nbstage.protocol.mcp.argument_decoding import nested_deeper_than
from nbstage.protocol.mcp.tools import (
    RECONNECT,
    TOOLS,
    TOOLS_BY_NAME,
    ToolSpec,
    builtin_tool_list,
)

SPEC_TOOLS = {
    "list_active_notebooks": set(),
    "connect_notebook": {"path", "notebook_id"},
    "create_notebook": {"runtime", "working_dir", "ephemeral", "kernel_host"},  # + issue 26
    "save_notebook": {"path", "overwrite"},
    "disconnect_notebook": {"notebook_id"},
    "get_cell": {"cell_id", "full_output"},
    "get_all_cells": {"format", "start", "count", "include_outputs"},
    "create_cell": {"source", "cell_type", "index", "and_run", "timeout_secs"},
    "set_cell": {"cell_id", "source", "cell_type", "and_run", "timeout_secs"},
    "delete_cell": {"cell_id"},
    "move_cell": {"cell_id", "after_cell_id"},
    "execute_cell": {"cell_id", "timeout_secs"},
    "run_all_cells": {"timeout_secs", "wait"},
    "get_results": {"execution_id", "full_output"},
    "interrupt_kernel": set(),
    "restart_kernel": set(),
    "replace_match": {
        "cell_id",
        "match",
        "content",
        "context_before",
        "context_after",
        "and_run",
        "timeout_secs",
    },
    "replace_regex": {"cell_id", "pattern", "content", "and_run", "timeout_secs"},
    "manage_dependencies": {"add", "remove", "trust", "dependency_fingerprint", "apply"},
    "show_notebook": {"notebook_id"},
    "reconnect": set(),
    "clear_outputs": {"cell_id"},
    "add_cell_tags": {"cell_id", "tags"},
    "remove_cell_tags": {"cell_id", "tags"},
    "view_outputs": {"execution_id"},
}
"""SPEC §4's table: every tool and the arguments it takes, with the four that issue 25
adds (clear_outputs and the cell tags; view_outputs, for the MCP App's page alone)."""

ALL_SPECS = (*TOOLS, RECONNECT)

# A value of the wrong JSON type for each schema type.
WRONG_VALUE = {
    "string": 12,
    "integer": "12",
    "number": "1.5",
    "boolean": "true",
    "array": "not a list",
}


def spec_ids(spec: ToolSpec) -> str:
    return spec.name


def schema_type(prop: dict[str, Any]) -> str:
    """The non-null JSON type of a property."""
    if "anyOf" in prop:
        (arm,) = [arm for arm in prop["anyOf"] if arm != {"type": "null"}]
        return arm["type"]
    return prop["type"]


def _default(f: dataclasses.Field) -> Any:
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return f.default


def is_nullable(hint: Any) -> bool:
    return typing.get_origin(hint) in (typing.Union, types.UnionType) and type(None) in (
        typing.get_args(hint)
    )


def subschemas(schema: Any, where: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every JSON object inside a schema, itself included, with a path to it."""
    if isinstance(schema, dict):
        yield where, schema
        for key, value in schema.items():
            yield from subschemas(value, f"{where}.{key}")
    elif isinstance(schema, list):
        for index, value in enumerate(schema):
            yield from subschemas(value, f"{where}[{index}]")


def a_valid_value(prop: dict[str, Any]) -> Any:
    return {"string": "x", "integer": 1, "number": 1.5, "boolean": True}[schema_type(prop)]


def required_arguments(spec: ToolSpec) -> dict[str, Any]:
    schema = spec.to_mcp()["inputSchema"]
    return {name: a_valid_value(schema["properties"][name]) for name in schema.get("required", [])}


# --- the catalogue ------------------------------------------------------------------------


def test_the_catalogue_is_the_spec_table() -> None:
    names = [spec.name for spec in ALL_SPECS]
    assert len(names) == len(set(names)), "tool names are unique"
    assert set(names) == set(SPEC_TOOLS)
    assert set(TOOLS_BY_NAME) == set(SPEC_TOOLS)
    for spec in ALL_SPECS:
        assert TOOLS_BY_NAME[spec.name] is spec
        properties = spec.to_mcp()["inputSchema"]["properties"]
        assert set(properties) == SPEC_TOOLS[spec.name], spec.name


@pytest.mark.parametrize("spec", ALL_SPECS, ids=spec_ids)
def test_every_tool_is_described_for_people_and_for_programs(spec: ToolSpec) -> None:
    tool = spec.to_mcp()
    assert tool["name"] == spec.name
    assert tool["title"].strip()
    assert tool["description"].strip()

    schema = tool["inputSchema"]
    assert schema["type"] == "object"
    assert schema["additionalProperties"] is False
    fields = {f.name: f for f in dataclasses.fields(spec.args)}
    assert set(schema["properties"]) == set(fields)
    for name, prop in schema["properties"].items():
        assert prop["description"].strip(), f"{spec.name}.{name} has no description"
        assert schema_type(prop) in WRONG_VALUE
        if fields[name].default not in (dataclasses.MISSING, None):
            assert prop["default"] == fields[name].default
        if fields[name].default_factory is not dataclasses.MISSING:
            assert prop["default"] == fields[name].default_factory()
    required = {name for name, f in fields.items() if _default(f) is dataclasses.MISSING}
    assert set(schema.get("required", [])) == required

    annotations = tool["annotations"]
    assert annotations["title"] == tool["title"]
    for hint in ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"):
        assert isinstance(annotations[hint], bool), hint
    assert not (annotations["readOnlyHint"] and annotations["destructiveHint"])


def test_no_schema_in_the_catalogue_has_a_type_array() -> None:
    """Single-type schema dialects (Gemini function declarations, the Inspector's strict
    check) refuse ``"type": [...]``; nullable arguments say so with ``anyOf`` instead."""
    for tool in builtin_tool_list():
        for kind in ("inputSchema", "outputSchema"):
            for where, schema in subschemas(tool[kind], f"{tool['name']} {kind}"):
                assert not isinstance(schema.get("type"), list), f"{where}: a type array {schema}"


@pytest.mark.parametrize("spec", ALL_SPECS, ids=spec_ids)
def test_every_tool_declares_an_output_schema_that_takes_its_failures_too(spec: ToolSpec) -> None:
    schema = spec.to_mcp()["outputSchema"]
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["type"] == "object"
    check = jsonschema.Draft202012Validator(schema)
    assert check.is_valid({"error": "It failed.", "code": "bad_request", "next_call": "x()"})
    assert not check.is_valid({}), "a result has the tool's fields, or an error"
    notice = {"kind": "changed_on_disk", "message": "m", "next_call": "get_all_cells()"}
    assert check.is_valid({"error": "It failed.", "notices": [notice]})
    assert not check.is_valid({"error": "It failed.", "notices": [{"kind": "gossip"}]})


@pytest.mark.parametrize("spec", ALL_SPECS, ids=spec_ids)
def test_every_nullable_argument_is_an_any_of_with_null(spec: ToolSpec) -> None:
    properties = spec.to_mcp()["inputSchema"]["properties"]
    hints = typing.get_type_hints(spec.args)
    for f in dataclasses.fields(spec.args):
        prop = properties[f.name]
        if not is_nullable(hints[f.name]):
            assert "anyOf" not in prop, f"{spec.name}.{f.name} is not nullable: {prop}"
            continue
        assert "type" not in prop, f"{spec.name}.{f.name}: the type goes in anyOf: {prop}"
        arms = prop["anyOf"]
        assert arms.count({"type": "null"}) == 1, f"{spec.name}.{f.name}: {prop}"
        (other,) = [arm for arm in arms if arm != {"type": "null"}]
        assert isinstance(other["type"], str), f"{spec.name}.{f.name}: {prop}"
        assert other["type"] in WRONG_VALUE


def test_nullable_arguments_exist_in_the_catalogue() -> None:
    """The two tests above would pass vacuously without any."""
    nullable = {
        (spec.name, f.name)
        for spec in ALL_SPECS
        for f in dataclasses.fields(spec.args)
        if is_nullable(typing.get_type_hints(spec.args)[f.name])
    }
    assert ("connect_notebook", "path") in nullable
    assert ("get_all_cells", "count") in nullable
    prop = TOOLS_BY_NAME["get_all_cells"].to_mcp()["inputSchema"]["properties"]["count"]
    assert prop["anyOf"] == [{"type": "integer"}, {"type": "null"}]


def test_read_only_and_destructive_hints_fit_what_the_tools_do() -> None:
    read_only = {spec.name for spec in ALL_SPECS if spec.read_only}
    assert read_only == {
        "list_active_notebooks",
        "get_cell",
        "get_all_cells",
        "get_results",
        "view_outputs",
    }
    destructive = {spec.name for spec in ALL_SPECS if spec.destructive}
    assert {"delete_cell", "restart_kernel"} <= destructive


def test_builtin_tool_list_validates_as_mcp_tools() -> None:
    listed = builtin_tool_list()
    assert [tool["name"] for tool in listed] == [spec.name for spec in ALL_SPECS]
    for raw in listed:
        tool = mcp_types.Tool.model_validate(raw)
        assert tool.name == raw["name"]
        assert tool.title == raw["title"]
        assert tool.input_schema == raw["inputSchema"]
        assert tool.annotations is not None
        assert tool.annotations.read_only_hint == raw["annotations"]["readOnlyHint"]
        assert tool.model_dump(by_alias=True, exclude_none=True) == raw
    result = mcp_types.ListToolsResult.model_validate({"tools": listed})
    assert len(result.tools) == len(ALL_SPECS)


# --- parsing arguments --------------------------------------------------------------------


@pytest.mark.parametrize("spec", ALL_SPECS, ids=spec_ids)
def test_parse_takes_the_required_arguments_and_fills_in_defaults(spec: ToolSpec) -> None:
    given_arguments = required_arguments(spec)
    parsed = spec.parse(given_arguments)
    assert isinstance(parsed, spec.args)
    for f in dataclasses.fields(spec.args):
        expected = given_arguments.get(f.name, _default(f))
        assert getattr(parsed, f.name) == expected, f.name


@pytest.mark.parametrize("spec", ALL_SPECS, ids=spec_ids)
def test_parse_rejects_an_unknown_argument_and_names_it(spec: ToolSpec) -> None:
    with pytest.raises(NbstageError) as caught:
        spec.parse({**required_arguments(spec), "colour": "red"})
    assert caught.value.code is ErrorCode.BAD_REQUEST
    assert "'colour'" in caught.value.message
    assert spec.name in caught.value.message


@pytest.mark.parametrize(
    ("spec", "argument"),
    [
        pytest.param(spec, name, id=f"{spec.name}.{name}")
        for spec in ALL_SPECS
        for name in spec.to_mcp()["inputSchema"]["properties"]
    ],
)
def test_parse_rejects_a_wrong_type_and_names_the_argument(spec: ToolSpec, argument: str) -> None:
    prop = spec.to_mcp()["inputSchema"]["properties"][argument]
    arguments = {**required_arguments(spec), argument: WRONG_VALUE[schema_type(prop)]}
    with pytest.raises(NbstageError) as caught:
        spec.parse(arguments)
    assert caught.value.code is ErrorCode.BAD_REQUEST
    assert f"'{argument}'" in caught.value.message


@pytest.mark.parametrize(
    ("spec", "argument"),
    [
        pytest.param(spec, name, id=f"{spec.name}.{name}")
        for spec in ALL_SPECS
        for name in spec.to_mcp()["inputSchema"].get("required", [])
    ],
)
def test_parse_names_a_missing_required_argument(spec: ToolSpec, argument: str) -> None:
    arguments = required_arguments(spec)
    del arguments[argument]
    with pytest.raises(NbstageError) as caught:
        spec.parse(arguments)
    assert f"'{argument}'" in caught.value.message


def test_parse_checks_json_types_strictly() -> None:
    create = TOOLS_BY_NAME["create_cell"]
    assert create.parse({"timeout_secs": 2}).timeout_secs == 2.0
    assert isinstance(create.parse({"timeout_secs": 2}).timeout_secs, float)
    for bad in ({"index": True}, {"index": 1.0}, {"timeout_secs": False}, {"and_run": 1}):
        with pytest.raises(NbstageError):
            create.parse(bad)
    assert create.parse({"index": None}).index is None
    with pytest.raises(NbstageError):
        create.parse({"source": None})


@pytest.mark.parametrize("arguments", [[], "x", 3, True], ids=repr)
def test_parse_wants_an_object(arguments: Any) -> None:
    with pytest.raises(NbstageError) as caught:
        TOOLS_BY_NAME["get_cell"].parse(arguments)
    assert caught.value.code is ErrorCode.BAD_REQUEST


def test_missing_arguments_mean_all_defaults() -> None:
    assert TOOLS_BY_NAME["run_all_cells"].parse(None) == TOOLS_BY_NAME["run_all_cells"].args()
    assert (
        TOOLS_BY_NAME["list_active_notebooks"].parse({})
        == TOOLS_BY_NAME["list_active_notebooks"].args()
    )


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner),
    max_leaves=8,
)


@settings(max_examples=300, deadline=None, database=None)
@given(
    spec=st.sampled_from(ALL_SPECS),
    arguments=st.dictionaries(
        st.sampled_from(["cell_id", "path", "index", "timeout_secs", "and_run", "format", "x"]),
        JSON_VALUES,
        max_size=4,
    )
    | JSON_VALUES,
)
def test_parse_answers_any_json_with_a_value_or_a_bad_request(
    spec: ToolSpec, arguments: Any
) -> None:
    outcome: Any
    try:
        outcome = spec.parse(arguments)
    except NbstageError as exc:
        outcome = exc
    if isinstance(outcome, NbstageError):
        assert outcome.code is ErrorCode.BAD_REQUEST
        assert outcome.message
    else:
        assert isinstance(outcome, spec.args)


def _nested(depth: int) -> object:
    value: object = 0
    for level in range(depth):
        value = [value] if level % 2 else {"k": value}
    return value


@pytest.mark.parametrize(
    ("value", "limit", "deeper"),
    [
        pytest.param(None, 0, False, id="a scalar has no depth"),
        pytest.param({}, 0, False, id="an empty object has nothing inside"),
        pytest.param({"a": 1}, 0, True, id="one level is deeper than none"),
        pytest.param({"a": 1}, 1, False, id="one level is within one"),
        pytest.param(_nested(64), 64, False, id="64 levels are within the limit"),
        pytest.param(_nested(65), 64, True, id="65 levels are past it"),
        pytest.param([1, [2, [3]]], 2, True, id="lists count as levels too"),
    ],
)
def test_nested_deeper_than(value: object, limit: int, deeper: bool) -> None:
    assert nested_deeper_than(value, limit) is deeper
