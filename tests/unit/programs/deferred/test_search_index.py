"""The keyword index behind tool_search: terms, fields, ranking and diversification."""

from __future__ import annotations

from openprogram.agent.types import AgentTool
from openprogram.programs._search_index import (
    SearchIndex,
    _related_words,
    search_terms,
    searchable_text,
)


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
    # change_food may follow: WordNet relates "coconut" to "food".
    assert index.rank("coconut", 5)[0] is drink
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


def _names(index: SearchIndex, query: str, limit: int = 5) -> list[str]:
    return [tool.name for tool in index.rank(query, limit)]


def test_words_in_any_script_are_searchable():
    appliance = _tool("control_appliance", "Turn devices on or off, e.g. 거실 에어컨 실행.")
    index = SearchIndex.build([_tool("read_file", "Read a file."), appliance])
    assert _names(index, "거실 에어컨 켜줘") == ["control_appliance"]


def test_chinese_text_without_spaces_matches_by_character_pairs():
    weather = _tool("tianqi", "查询城市天气预报")
    index = SearchIndex.build([_tool("read_file", "Read a file."), weather])
    assert _names(index, "北京明天的天气怎么样") == ["tianqi"]


def test_a_camel_case_word_is_found_split_or_whole():
    thinq = _tool("ThinQ_Connect", "Send a command to a home appliance.")
    index = SearchIndex.build([_tool("think_tank", "Brainstorm ideas."), thinq])
    assert _names(index, "thinq") == ["ThinQ_Connect"]
    assert _names(index, "ThinQ") == ["ThinQ_Connect"]


def test_a_query_drops_the_filler_of_a_spoken_request():
    assert search_terms("hey, can you help me check the weather?", query=True) == [
        "check",
        "weather",
    ]
    helper = _tool("help", "Show help about this assistant.")
    weather = _tool("get_weather", "Current weather for a city.")
    index = SearchIndex.build([helper, weather])
    assert _names(index, "hi, could you help me with the weather in Paris") == ["get_weather"]


def test_a_query_of_only_filler_still_searches_its_words():
    assert search_terms("help", query=True) == ["help"]
    helper = _tool("help", "Show help about this assistant.")
    assert SearchIndex.build([helper, _tool("get_weather", "Weather.")]).rank("help", 5) == [helper]


def test_a_misspelt_word_finds_the_word_one_edit_away():
    weather = _tool("get_weather", "Current weather for a city.")
    feather = _tool("pluck_feather", "Remove a feather from a bird.")
    index = SearchIndex.build([feather, weather])
    assert _names(index, "wether in paris") == ["get_weather"]
    assert _names(index, "current wheather") == ["get_weather"]


def test_a_known_word_is_not_widened_to_its_neighbours():
    fork = _tool("lay_table", "Put a fork and a plate on the table.")
    form = _tool("fill_form", "Fill in a web form.")
    assert _names(SearchIndex.build([form, fork]), "fork") == ["lay_table"]


def test_a_misspelling_counts_less_than_the_word_itself():
    typo_hit = _tool("list_files", "List the files in a folder.")
    exact_hit = _tool("list_filers", "List the filers of a tax office.")
    index = SearchIndex.build([typo_hit, exact_hit])
    assert _names(index, "filers")[0] == "list_filers"


def test_the_first_sentence_of_a_description_says_what_a_tool_does():
    # Same words, same lengths: only where "weather" stands differs.
    forecast = _tool("city_report", "Weather for a city. Includes flight delays and traffic.")
    flights = _tool("city_status", "Flight delays for a city. Includes weather and traffic.")
    index = SearchIndex.build([flights, forecast])
    assert _names(index, "weather") == ["city_report", "city_status"]
    assert _names(index, "flight delays") == ["city_status", "city_report"]


def test_reworded_copies_of_one_tool_move_behind_a_different_tool():
    first = _tool(
        "Weather_1_GetWeather",
        "Retrieves the weather forecast for a specified city on a particular date.",
        {"type": "object", "properties": {"city": {"type": "string"}, "date": {"type": "string"}}},
    )
    copy = _tool(
        "Weather_1_GetWeather_copy",
        "Retrieve the weather forecast for a specified city on a given date.",
        {"type": "object", "properties": {"city": {"type": "string"}, "date": {"type": "string"}}},
    )
    other = _tool("get_current_weather", "Current weather conditions at a location.")
    ranked = _names(SearchIndex.build([first, copy, other]), "weather forecast city", 3)
    assert ranked == ["Weather_1_GetWeather", "get_current_weather", "Weather_1_GetWeather_copy"]


def test_the_same_tools_reuse_one_index_and_a_replaced_tool_gets_a_new_one():
    tools = [_tool("read_file", "Read a file."), _tool("send_email", "Mail.")]
    index = SearchIndex.for_tools(tools)
    assert SearchIndex.for_tools(list(tools)) is index
    renamed = [tools[0], _tool("send_email", "Send an email.")]
    assert SearchIndex.for_tools(renamed) is not index
    assert _names(SearchIndex.for_tools(renamed), "email") == ["send_email"]


def test_derived_forms_of_a_word_meet_through_the_stemmer():
    assert search_terms("connection") == search_terms("connected") == search_terms("connecting")
    assert search_terms("generously") == search_terms("generous")
    index = SearchIndex.build(
        [_tool("link_status", "Report whether the server is connected."), _tool("other", "x")]
    )
    assert [t.name for t in index.rank("connection", 5)] == ["link_status"]


def test_a_query_word_inside_a_compound_name_lifts_that_tool():
    index = SearchIndex.build(
        [
            _tool("seat_map", "Show the seats on planes."),
            _tool("flightbooker", "Reserve seats on planes."),
        ]
    )
    # Both share only "seats"; seat_map has it in its name, yet "flight" and "booking"
    # are spelt inside flightbooker.
    assert [t.name for t in index.rank("seats flight booking", 2)] == ["flightbooker", "seat_map"]


def test_a_request_in_other_words_finds_the_tool_through_related_words():
    films = _tool("film_listings", "Films playing at nearby cinemas.")
    books = _tool("library_catalog", "Books held by the city library.")
    index = SearchIndex.build([books, films])
    # "movie" is nowhere in either tool; WordNet relates it to "film".
    assert _names(index, "which movies are on tonight") == ["film_listings"]
    calculator = _tool("calculate_expression", "Evaluate an arithmetic expression.")
    index = SearchIndex.build([_tool("send_email", "Mail."), calculator])
    assert _names(index, "compute 443 * 349") == ["calculate_expression"]


def test_a_related_word_counts_less_than_the_word_itself():
    tickets = _tool("movie_tickets", "Buy tickets.")
    archive = _tool("film_archive", "Browse an archive.")
    assert _names(SearchIndex.build([archive, tickets]), "movie") == [
        "movie_tickets",
        "film_archive",
    ]


def test_the_related_words_file_uses_the_index_stems():
    # The file is keyed by Snowball stems (tools/related_words.py); if the stemming
    # changed, its keys would no longer meet the query terms.
    related = _related_words()
    assert len(related) > 30_000
    (compute,) = search_terms("compute")
    (calculate,) = search_terms("calculate")
    assert calculate in related[compute].split()
