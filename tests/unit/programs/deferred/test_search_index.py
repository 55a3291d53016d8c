"""The keyword index behind tool_search: terms, fields, ranking and diversification."""

from __future__ import annotations

from openprogram.agent.types import AgentTool
from openprogram.programs._search_index import SearchIndex, search_terms, searchable_text


def _tool(name: str, description: str = "", parameters: dict | None = None) -> AgentTool:
    return AgentTool(name=name, description=description, parameters=parameters, defer=True)


def test_it_splits_snake_camel_dotted_and_acronym_names():
    assert search_terms("getHTTPResponse") == ["get", "http", "respons"]
    assert search_terms("ChaDri.change_drink") == ["cha", "dri", "chang", "drink"]


def test_inflections_of_one_word_meet():
    forms = ["create", "created", "creating", "creates"]
    assert len({search_terms(word)[0] for word in forms}) == 1
    assert search_terms("issues") == search_terms("issue")
    assert search_terms("queries") == search_terms("query")
    assert search_terms("processes") == search_terms("process")


def test_a_query_drops_words_that_carry_no_meaning():
    assert search_terms("could you please list the issues", query=True) == ["list", "issu"]


def test_nested_parameters_and_enum_values_are_searchable():
    drink = _tool(
        "change_drink",
        "Modify an order.",
        {
            "type": "object",
            "properties": {
                "preferences": {
                    "type": "object",
                    "properties": {"milk_type": {"type": "string", "enum": ["oat", "coconut"]}},
                }
            },
        },
    )
    other = _tool("change_food", "Modify an order.")
    index = SearchIndex.build([other, drink])
    assert [tool.name for tool in index.rank("coconut", 5)] == ["change_drink"]
    assert [tool.name for tool in index.rank("milk", 5)] == ["change_drink"]
    assert "coconut" in searchable_text(drink)


def test_the_name_weighs_more_than_the_description():
    named = _tool("send_email", "Deliver a message.")
    described = _tool("post_message", "Send a message by email or chat to someone.")
    index = SearchIndex.build([described, named])
    assert index.rank("send email", 2)[0] is named


def test_an_exact_name_wins_whatever_the_text_says():
    exact = _tool("sum", "Arithmetic.")
    wordy = _tool("add_numbers", "sum sum sum the numbers")
    assert SearchIndex.build([wordy, exact]).rank("sum", 1) == [exact]


def test_near_duplicates_move_behind_distinct_hits():
    first = _tool("github_create_issue", "Create a new issue in a GitHub repository.")
    copy = _tool("github2_create_issue", "Create a new issue in a GitHub repository.")
    other = _tool("jira_create_ticket", "Create a ticket (issue) in a Jira project.")
    ranked = SearchIndex.build([first, copy, other]).rank("create issue", 3)
    assert ranked[0] is first
    assert ranked[1] is other
    assert ranked[2] is copy


def test_only_tools_that_share_a_term_are_returned():
    index = SearchIndex.build([_tool("read_file", "Read a file."), _tool("send_email", "Mail.")])
    assert [tool.name for tool in index.rank("file", 10)] == ["read_file"]
    assert index.rank("weather", 10) == []
