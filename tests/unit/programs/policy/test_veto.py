"""Layer 5: allow, deny, the global disable set and the unattended veto; apply_tool_policy."""

from __future__ import annotations

import pytest

from openprogram.programs.policy import apply_tool_policy, resolve_tools


@pytest.fixture
def five(add_tool):
    return [add_tool(name) for name in ("read", "write", "bash", "web_search", "ask_user_question")]


def test_deny_subtracts_by_name(five):
    resolution = resolve_tools(deny=["bash", "write"])
    assert resolution.names == ["read", "web_search", "ask_user_question"]
    assert resolution.decision("bash").summary == "L5: in the deny list"


def test_allow_intersects_by_name(five):
    resolution = resolve_tools(allow=["read", "bash"])
    assert resolution.names == ["read", "bash"]
    assert resolution.decision("write").summary == "L5: not in the allow list"


def test_a_globally_disabled_tool_is_removed_from_every_profile(five):
    profiles = {"coding": ["read", "write", "bash"], "all": ["read", "write", "bash", "web_search"]}
    for name in profiles:
        resolution = resolve_tools(toolset=name, named_profiles=profiles, disabled={"bash"})
        assert "bash" not in resolution.names
        assert resolution.decision("bash").summary == "L5: globally disabled"


def test_the_first_rejecting_layer_is_reported_when_several_would(five):
    resolution = resolve_tools(toolset=["read"], disabled={"bash"}, deny=["bash"])
    assert resolution.decision("bash").layer == "L2b"
    resolution = resolve_tools(disabled={"bash"}, deny=["bash"])
    assert resolution.decision("bash").reason == "globally disabled"


def test_an_unattended_turn_never_offers_ask_user_question(five):
    resolution = resolve_tools(attended=False, toolset=["ask_user_question", "read"])
    assert resolution.names == ["read"]
    assert resolution.decision("ask_user_question").summary == (
        "L5: withheld: the turn is unattended"
    )
    assert "ask_user_question" in resolve_tools(attended=True).names


def test_unknown_names_in_deny_and_allow_are_warned_about(five):
    resolution = resolve_tools(deny=["bsh"], allow=["read", "reed"])
    assert resolution.names == ["read"]
    assert resolution.warnings == [
        "deny names unknown tool(s): 'bsh'",
        "allow names unknown tool(s): 'reed'",
    ]


def test_an_allow_list_naming_no_known_tool_is_an_error_not_an_empty_set(five):
    with pytest.raises(ValueError, match="'raed'"):
        resolve_tools(allow=["raed", "wirte"])


def test_an_explicitly_empty_allow_list_offers_nothing_and_says_so(five):
    resolution = resolve_tools(allow=[])
    assert resolution.tools == []
    assert resolution.warnings == ["allow is an empty list: no tools are offered"]


def test_apply_tool_policy_vetoes_an_existing_list_in_order(five):
    kept = apply_tool_policy(five, deny=["write"], disabled={"bash"}, attended=False)
    assert [tool.name for tool in kept] == ["read", "web_search"]
    assert apply_tool_policy(five, allow=["bash", "read"]) == [five[0], five[2]]


def test_apply_tool_policy_refuses_an_allow_list_of_unknown_names(five):
    with pytest.raises(ValueError, match="'nothing'"):
        apply_tool_policy(five, allow=["nothing"])


def test_apply_tool_policy_drops_tool_search_once_no_deferred_tool_remains(add_tool):
    from openprogram.programs.deferred import tool_search

    tools = [add_tool("read"), add_tool("mcp__gh__issue", defer=True, source="mcp"), tool_search]
    assert apply_tool_policy(tools) == tools
    assert [t.name for t in apply_tool_policy(tools, deny=["mcp__gh__issue"])] == ["read"]
