"""A model's arguments for an MCP tool, checked against the server's schema before sending."""

from __future__ import annotations

from openprogram.mcp.arguments import ArgumentChecker

SCHEMA = {
    "type": "object",
    "properties": {
        "region": {"type": "string"},
        "verbose": {"type": "boolean"},
        "note": {"type": ["string", "null"]},
    },
    "required": ["region"],
}


def test_a_null_for_an_optional_parameter_that_takes_no_null_is_left_out() -> None:
    args, problem = ArgumentChecker("t", SCHEMA).check({"region": "eu", "verbose": None})

    assert problem is None
    assert args == {"region": "eu"}


def test_a_null_the_schema_allows_is_sent_as_null() -> None:
    args, problem = ArgumentChecker("t", SCHEMA).check({"region": "eu", "note": None})

    assert problem is None
    assert args == {"region": "eu", "note": None}


def test_a_null_for_a_required_parameter_is_still_refused() -> None:
    _, problem = ArgumentChecker("t", SCHEMA).check({"region": None})

    assert problem is not None
    assert "'region'" in problem and "not of type 'string'" in problem


def test_a_wrong_value_next_to_a_dropped_null_is_still_refused() -> None:
    _, problem = ArgumentChecker("t", SCHEMA).check({"region": 3, "verbose": None})

    assert problem is not None and "'region'" in problem


def test_a_2020_12_schema_is_checked_with_its_own_defs_and_conditionals() -> None:
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {"address": {"$anchor": "addr", "type": "object", "required": ["city"]}},
        "properties": {"kind": {"enum": ["home", "work"]}, "address": {"$ref": "#addr"}},
        "if": {"properties": {"kind": {"const": "work"}}},
        "then": {"required": ["address"]},
        "else": {},
        "additionalProperties": False,
    }
    checker = ArgumentChecker("t", schema)

    assert checker.check({"kind": "home"})[1] is None
    assert "'address' is a required property" in (checker.check({"kind": "work"})[1] or "")
    assert "'city' is a required property" in (
        checker.check({"kind": "work", "address": {}})[1] or ""
    )
    assert "Additional properties" in (checker.check({"kind": "home", "x": 1})[1] or "")
