"""The one argument step every kind of tool shares: a null that means "not given" is dropped,
every other null is kept (and judged by validation), then the arguments are checked."""

from __future__ import annotations

import logging

import pytest

from openprogram.agent.types import AgentTool
from openprogram.programs.arguments import (
    InvalidArguments,
    drop_unset_nulls,
    prepare_arguments,
    validate_arguments,
)

SCHEMA = {
    "type": "object",
    "properties": {
        "region": {"type": "string"},
        "times": {"type": "integer", "default": 1},
        "note": {"type": ["string", "null"]},
        "label": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
        "limit": {"oneOf": [{"type": "integer"}, {"type": "null"}]},
        "legacy": {"type": "integer", "nullable": True},
        "choice": {"enum": ["a", "b", None]},
        "anything": {},
        "ref_nullable": {"$ref": "#/$defs/maybe_text"},
        "ref_strict": {"$ref": "#/$defs/text"},
        "options": {
            "type": "object",
            "properties": {"depth": {"type": "integer"}},
        },
    },
    "$defs": {
        "maybe_text": {"type": ["string", "null"]},
        "text": {"type": "string"},
    },
    "required": ["region"],
    "additionalProperties": False,
}


def _tool(schema: dict = SCHEMA) -> AgentTool:
    return AgentTool(name="t", description="A tool.", parameters=schema)


@pytest.mark.parametrize("name", ["times", "ref_strict", "options"])
def test_a_null_for_an_optional_parameter_that_takes_no_null_is_left_out(name):
    assert drop_unset_nulls(SCHEMA, {"region": "eu", name: None}) == {"region": "eu"}


@pytest.mark.parametrize(
    "name", ["note", "label", "limit", "legacy", "choice", "anything", "ref_nullable"]
)
def test_a_null_the_schema_allows_is_kept_and_passes_validation(name):
    args = prepare_arguments(_tool(), {"region": "eu", name: None})
    assert args == {"region": "eu", name: None}


def test_a_null_for_a_required_parameter_is_refused_saying_it_is_required():
    assert drop_unset_nulls(SCHEMA, {"region": None}) == {"region": None}
    with pytest.raises(InvalidArguments) as refused:
        prepare_arguments(_tool(), {"region": None})
    message = str(refused.value)
    assert message.startswith("invalid arguments for 't' at 'region':")
    assert "not of type 'string'" in message and "'region' is required" in message


def test_a_required_parameter_whose_schema_allows_null_takes_null():
    schema = {
        "type": "object",
        "properties": {"parent": {"type": ["integer", "null"]}},
        "required": ["parent"],
    }
    assert prepare_arguments(_tool(schema), {"parent": None}) == {"parent": None}


def test_a_null_inside_a_nested_object_is_not_dropped_but_refused_with_its_path():
    args = {"region": "eu", "options": {"depth": None}}
    assert drop_unset_nulls(SCHEMA, args) is args
    with pytest.raises(InvalidArguments, match="at 'options/depth': None is not of type"):
        prepare_arguments(_tool(), args)


def test_a_null_for_an_unknown_parameter_is_still_an_error():
    with pytest.raises(InvalidArguments, match="Additional properties are not allowed"):
        prepare_arguments(_tool(), {"region": "eu", "colour": None})


def test_a_wrong_value_next_to_a_dropped_null_is_still_refused():
    with pytest.raises(InvalidArguments, match="at 'region':"):
        prepare_arguments(_tool(), {"region": 3, "times": None})


def test_normalising_twice_changes_nothing_and_nulls_free_arguments_are_not_copied():
    once = drop_unset_nulls(SCHEMA, {"region": "eu", "times": None, "note": None})
    assert once == {"region": "eu", "note": None}
    assert drop_unset_nulls(SCHEMA, once) is once
    plain = {"region": "eu", "times": 3}
    assert drop_unset_nulls(SCHEMA, plain) is plain


def test_json_text_is_parsed_and_normalised_like_a_dict():
    assert prepare_arguments(_tool(), '{"region": "eu", "times": null}') == {"region": "eu"}


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ('{"region": ', "arguments for 't' are not valid JSON"),
        ("[1, 2]", "arguments for 't' must be a JSON object"),
    ],
)
def test_arguments_that_are_not_a_json_object_are_refused(raw, message):
    with pytest.raises(InvalidArguments, match=message):
        prepare_arguments(_tool(), raw)


def test_a_2020_12_schema_is_checked_with_its_own_anchors_and_conditionals():
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {"address": {"$anchor": "addr", "type": "object", "required": ["city"]}},
        "properties": {"kind": {"enum": ["home", "work"]}, "address": {"$ref": "#addr"}},
        "if": {"properties": {"kind": {"const": "work"}}},
        "then": {"required": ["address"]},
        "additionalProperties": False,
    }
    validate_arguments("t", schema, {"kind": "home"})
    with pytest.raises(InvalidArguments, match="'address' is a required property"):
        validate_arguments("t", schema, {"kind": "work"})
    with pytest.raises(InvalidArguments, match="'city' is a required property"):
        validate_arguments("t", schema, {"kind": "work", "address": {}})
    # An optional parameter behind an $anchor: its null means "not given".
    assert drop_unset_nulls(schema, {"kind": "home", "address": None}) == {"kind": "home"}


def test_an_invalid_schema_checks_nothing_and_is_logged(caplog):
    schema = {"type": "object", "properties": {"n": {"type": "integer", "minimum": "zero"}}}
    with caplog.at_level(logging.WARNING, logger="openprogram.programs.arguments"):
        assert prepare_arguments(_tool(schema), {"n": None}) == {"n": None}
    assert "schema is invalid" in caplog.text


async def test_a_function_tool_called_directly_gets_the_same_rule():
    from openprogram.programs.decorator import build_function_tool

    def repeat(text: str, times: int = 1, suffix: str | None = "!") -> str:
        """Repeat."""
        return f"{text * times} suffix={suffix!r}"

    tool = build_function_tool(repeat)
    dropped = await tool.execute("c1", '{"text": "ab", "times": null}')
    kept = await tool.execute("c2", {"text": "ab", "suffix": None})
    refused = await tool.execute("c3", {"text": None})
    assert (dropped.content, kept.content) == ("ab suffix='!'", "ab suffix=None")
    assert refused.is_error and "field 'text'" in refused.content


async def test_a_kwargs_function_tool_honours_nullable_in_its_own_schema():
    from openprogram.programs.decorator import build_function_tool

    def tag(**kwargs) -> str:
        """Tag."""
        return repr(sorted(kwargs.items()))

    schema = {
        "type": "object",
        "properties": {"name": {"type": "string"}, "colour": {"type": "string", "nullable": True}},
        "required": ["name"],
    }
    tool = build_function_tool(tag, parameters=schema)
    result = await tool.execute("c1", {"name": None, "colour": None})
    assert result.is_error and "field 'name'" in result.content
    result = await tool.execute("c2", {"name": "x", "colour": None})
    assert result.content == "[('colour', None), ('name', 'x')]"
