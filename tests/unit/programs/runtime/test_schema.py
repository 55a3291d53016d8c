"""Docstring + signature → the JSON Schema the model sees."""

from __future__ import annotations

import enum
from typing import Annotated, Literal

import jsonschema
import pytest
from pydantic import BaseModel, Field
from typing_extensions import TypedDict

from openprogram.programs.schema import (
    SchemaError,
    analyse_signature,
    clean_json_schema,
    describe_function,
)


def _schema(fn, **kwargs):
    _description, params = describe_function(fn)
    return analyse_signature(fn, model_name="t", param_descriptions=params, **kwargs).parameters


def test_it_reads_a_google_docstring():
    def search(query: str, limit: int = 5) -> str:
        """Search the notes for a
        query, newest first.

        Long detail the model does not need.

        Args:
            query: What to look
                for.
            limit: How many hits.
        """

    description, params = describe_function(search)
    assert description == "Search the notes for a query, newest first."
    assert params == {"query": "What to look for.", "limit": "How many hits."}


def test_it_reads_rest_and_numpy_docstrings():
    def rest(path: str) -> str:
        """Read a file.

        :param path: the file to read
        """

    def numpy(path: str) -> str:
        """Read a file.

        Parameters
        ----------
        path : str
            the file to read
        """

    for fn in (rest, numpy):
        assert describe_function(fn) == ("Read a file.", {"path": "the file to read"})


def test_it_keeps_the_first_paragraph_after_a_one_line_summary():
    def tool() -> None:
        """Summary line.

        First paragraph
        of detail.

        Second paragraph.
        """

    assert describe_function(tool)[0] == "Summary line.\n\nFirst paragraph of detail."


def test_it_derives_types_required_and_descriptions_from_the_signature():
    def tool(name: str, count: int, ratio: float = 0.5, flag: bool = False) -> None:
        """Do it.

        Args:
            name: who
        """

    schema = _schema(tool)
    assert schema["type"] == "object"
    assert schema["additionalProperties"] is False
    assert schema["required"] == ["name", "count"]
    assert schema["properties"]["name"] == {"type": "string", "description": "who"}
    assert schema["properties"]["count"] == {"type": "integer"}
    assert schema["properties"]["ratio"] == {"type": "number", "default": 0.5}
    assert schema["properties"]["flag"] == {"type": "boolean", "default": False}


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Point(TypedDict):
    x: int
    y: int


class Filter(BaseModel):
    title: str
    tags: list[str] = []


def test_it_supports_literal_enum_generics_optional_typeddict_models_and_field():
    def tool(
        mode: Literal["fast", "slow"],
        colour: Colour,
        tags: list[str],
        weights: dict[str, float],
        where: Point,
        filt: Filter,
        note: str | None = None,
        size: Annotated[int, Field(ge=1, le=10, description="From Field")] = 3,
    ) -> None:
        """Do it.

        Args:
            size: From the docstring
        """

    props = _schema(tool)["properties"]
    assert props["mode"] == {"type": "string", "enum": ["fast", "slow"]}
    assert props["colour"] == {"type": "string", "enum": ["red", "blue"]}
    assert props["tags"] == {"type": "array", "items": {"type": "string"}}
    assert props["weights"] == {"type": "object", "additionalProperties": {"type": "number"}}
    assert props["where"]["properties"] == {"x": {"type": "integer"}, "y": {"type": "integer"}}
    # A property literally named "title" survives title stripping; $defs are inlined.
    assert set(props["filt"]["properties"]) == {"title", "tags"}
    assert props["note"]["anyOf"] == [{"type": "string"}, {"type": "null"}]
    assert props["size"] == {
        "type": "integer",
        "minimum": 1,
        "maximum": 10,
        "default": 3,
        "description": "From Field",
    }
    assert "$defs" not in _schema(tool)


class Node(BaseModel):
    value: int
    children: list[Node] = []


def test_it_keeps_defs_for_recursive_models_and_stays_valid_json_schema():
    def tool(tree: Node) -> None:
        """Walk a tree."""

    schema = _schema(tool)
    assert "$defs" in schema
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.validate({"tree": {"value": 1, "children": [{"value": 2}]}}, schema)


def test_injected_parameters_never_appear():
    def tool(path: str, cancel=None, on_update=None, timeout: float = 3) -> None:
        """Do it."""

    _description, params = describe_function(tool)
    signature = analyse_signature(tool, model_name="t", param_descriptions=params)
    assert list(signature.parameters["properties"]) == ["path"]
    assert signature.injected == {"cancel", "on_update", "timeout"}


def test_an_llm_controllable_timeout_appears_with_its_bounds():
    def tool(path: str, timeout: float = 3) -> None:
        """Do it.

        Args:
            timeout: Seconds to wait.
        """

    schema = _schema(tool, llm_timeout=True, timeout_min=1, timeout_max=30)
    assert schema["properties"]["timeout"]["type"] == "number"
    assert "at least 1" in schema["properties"]["timeout"]["description"]
    assert "at most 30" in schema["properties"]["timeout"]["description"]
    assert schema["required"] == ["path"]


def test_it_refuses_var_positional_parameters():
    def tool(*paths: str) -> None:
        """Do it."""

    with pytest.raises(SchemaError, match=r"\*paths"):
        _schema(tool)


def test_clean_schema_strips_titles_but_not_a_property_named_title():
    raw = {
        "title": "Args",
        "type": "object",
        "properties": {"title": {"title": "Title", "type": "string"}},
        "required": [],
    }
    assert clean_json_schema(raw) == {
        "type": "object",
        "properties": {"title": {"type": "string"}},
        "additionalProperties": False,
    }


def test_an_unparseable_docstring_still_gives_its_first_paragraph(monkeypatch):
    import docstring_parser

    def refuse(text, *args, **kwargs):
        raise docstring_parser.ParseError("no style fits")

    monkeypatch.setattr(docstring_parser, "parse", refuse)

    def tool(x: int) -> None:
        """Odd docstring
        over two lines.

        Args: x -- weird
        """

    assert describe_function(tool) == ("Odd docstring over two lines.", {})
