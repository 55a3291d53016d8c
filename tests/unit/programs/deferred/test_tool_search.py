"""tool_search: keyword ranking, select:, unknown names, and the turn's veto-respecting pool."""

from __future__ import annotations

import json

import pytest

from openprogram.programs.deferred import (
    install_loaded_deferred,
    loaded_deferred,
    reset_loaded_deferred,
    split_tools_for_dispatch,
    tool_search,
)
from openprogram.programs.policy import resolve_tools


def _params(*names: str) -> dict:
    return {
        "type": "object",
        "properties": {name: {"type": "string", "description": f"The {name}."} for name in names},
        "required": list(names[:1]),
    }


@pytest.fixture
def github(add_tool):
    specs = [
        ("mcp__gh__create_issue", "Create a new issue in a repository.", ("repo", "title", "body")),
        ("mcp__gh__list_issues", "List issues of a repository.", ("repo", "state")),
        ("mcp__gh__merge_pull_request", "Merge an open pull request.", ("repo", "number")),
        ("mcp__db__run_query", "Run a read-only SQL query.", ("sql",)),
        ("mcp__cal__add_event", "Add an event to the calendar.", ("when", "title")),
    ]
    for name, description, params in specs:
        add_tool(name, description, parameters=_params(*params), defer=True, source="mcp")
    add_tool("read", "Read a file.")


@pytest.fixture
def turn(github):
    """A turn whose pool is the resolution of a deny list, as the dispatcher seeds it."""
    resolution = resolve_tools(deny=["mcp__gh__merge_pull_request"])
    token = install_loaded_deferred(resolution.tools)
    yield resolution
    reset_loaded_deferred(token)


async def test_keywords_rank_and_load_the_best_matching_tools(turn):
    result = await tool_search.execute("c1", {"query": "create github issue", "max_results": 2})
    assert not result.is_error
    assert result.details["loaded"][0] == "mcp__gh__create_issue"
    assert len(result.details["loaded"]) == 2
    assert loaded_deferred() == set(result.details["loaded"])


async def test_parameter_names_are_searched_too(turn):
    result = await tool_search.execute("c1", {"query": "sql", "max_results": 1})
    assert result.details["loaded"] == ["mcp__db__run_query"]


async def test_a_loaded_schema_is_in_the_very_next_provider_request(turn):
    before, _ = split_tools_for_dispatch(turn.tools)
    assert "mcp__cal__add_event" not in [tool.name for tool in before]
    result = await tool_search.execute("c1", {"query": "select:mcp__cal__add_event"})
    after, _ = split_tools_for_dispatch(turn.tools)
    assert [tool.name for tool in after] == ["tool_search", "mcp__cal__add_event", "read"]
    schema = result.content.split("Parameters (JSON Schema):\n", 1)[1]
    assert json.loads(schema) == _params("when", "title")
    assert "## mcp__cal__add_event\nAdd an event to the calendar." in result.content


async def test_select_loads_several_exact_names(turn):
    result = await tool_search.execute(
        "c1", '{"query": "select:mcp__db__run_query, mcp__gh__list_issues"}'
    )
    assert not result.is_error
    assert loaded_deferred() == {"mcp__db__run_query", "mcp__gh__list_issues"}


async def test_an_unknown_name_is_an_error_with_the_closest_matches(turn):
    result = await tool_search.execute("c1", {"query": "select:mcp__gh__create_isue"})
    assert result.is_error
    assert "Unknown tool 'mcp__gh__create_isue'" in result.content
    assert "Closest matches: mcp__gh__create_issue" in result.content
    assert loaded_deferred() == frozenset()


async def test_known_names_still_load_when_another_is_unknown(turn):
    result = await tool_search.execute("c1", {"query": "select:mcp__db__run_query,nope"})
    assert result.is_error and result.details == {
        "loaded": ["mcp__db__run_query"],
        "unknown": ["nope"],
    }
    assert loaded_deferred() == {"mcp__db__run_query"}


async def test_a_vetoed_tool_can_never_be_found_loaded_or_suggested(turn):
    found = await tool_search.execute("c1", {"query": "merge pull request", "max_results": 5})
    assert "mcp__gh__merge_pull_request" not in found.content
    selected = await tool_search.execute("c2", {"query": "select:mcp__gh__merge_pull_request"})
    assert selected.is_error
    assert "mcp__gh__merge_pull_request" not in loaded_deferred()
    assert "Closest matches: mcp__gh__merge_pull_request" not in selected.content


async def test_no_keyword_match_is_not_an_error_and_loads_nothing(turn):
    result = await tool_search.execute("c1", {"query": "kubernetes"})
    assert not result.is_error and "No deferred tool matches 'kubernetes'" in result.content
    assert loaded_deferred() == frozenset()


async def test_outside_a_turn_it_searches_every_exposed_deferred_tool(github):
    token = install_loaded_deferred()
    try:
        result = await tool_search.execute("c1", {"query": "merge pull request", "max_results": 1})
    finally:
        reset_loaded_deferred(token)
    assert result.details["loaded"] == ["mcp__gh__merge_pull_request"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({}, "give 'query' (keywords) or 'select'"),
        ({"query": "  "}, "give 'query' (keywords) or 'select'"),
        ({"query": "x", "max_results": 0}, "'max_results' must be a positive integer"),
        ({"query": "x", "limit": 3}, "unexpected argument(s) 'limit'"),
        ("{not json", "arguments are not valid JSON"),
        ({"query": "select:"}, "'select:' needs at least one tool name"),
    ],
)
async def test_bad_arguments_are_an_error_the_model_can_act_on(turn, args, message):
    result = await tool_search.execute("c1", args)
    assert result.is_error and message in result.content


async def test_max_results_caps_how_many_tools_load(turn):
    result = await tool_search.execute("c1", {"query": "repository issue", "max_results": 1})
    assert len(result.details["loaded"]) == 1


async def test_select_works_as_an_argument_as_well_as_in_the_query(turn):
    result = await tool_search.execute("c1", {"select": "mcp__cal__add_event, mcp__db__run_query"})
    assert not result.is_error
    assert result.details["loaded"] == ["mcp__cal__add_event", "mcp__db__run_query"]
    assert loaded_deferred() >= {"mcp__cal__add_event", "mcp__db__run_query"}


async def test_neither_query_nor_select_is_a_clear_error(turn):
    result = await tool_search.execute("c1", {"max_results": 3})
    assert result.is_error and "'query'" in result.content and "'select'" in result.content
