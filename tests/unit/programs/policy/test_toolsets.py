"""Layers 2 and 2b: exposure, presets with includes, user profiles, lists and "none"."""

from __future__ import annotations

import pytest

from openprogram.programs import toolsets
from openprogram.programs.policy import agent_tools, resolve_tools
from openprogram.programs.toolsets import (
    DEFAULT_TOOLS,
    TOOLSETS,
    ToolsetCycleError,
    UnknownToolsetError,
    expand_toolset,
)


@pytest.fixture
def presets(monkeypatch):
    """Edit TOOLSETS for one test; the shipped presets come back afterwards."""
    edited = dict(TOOLSETS)
    monkeypatch.setattr(toolsets, "TOOLSETS", edited)
    return edited


def test_a_bare_call_gets_every_exposed_tool_in_registration_order(add_tool):
    for name in ("read", "write", "bash"):
        add_tool(name)
    assert agent_tools() == resolve_tools().tools
    assert resolve_tools().names == ["read", "write", "bash"]


def test_it_never_offers_an_expose_false_tool_and_explains_layer_2(add_tool):
    add_tool("read")
    add_tool("_merge_sections", expose=False)
    resolution = resolve_tools()
    assert resolution.names == ["read"]
    row = resolution.decision("_merge_sections")
    assert row is not None and (row.offered, row.layer) == (False, "L2")
    assert row.reason == "not exposed (expose=False)"


def test_a_preset_keeps_only_its_members(add_tool):
    for name in ("read", "glob", "write", "bash"):
        add_tool(name)
    resolution = resolve_tools(toolset="fs_read")
    assert resolution.names == ["read", "glob"]
    assert resolution.decision("bash").summary == "L2b: not in toolset 'fs_read'"


def test_presets_compose_through_nested_includes(add_tool):
    for name in ("read", "grep", "write", "edit", "bash", "web_search"):
        add_tool(name)
    assert set(resolve_tools(toolset="coding").names) == {"read", "grep", "write", "edit", "bash"}
    assert expand_toolset("coding") >= {"read", "glob", "grep", "list_dir", "write", "edit", "bash"}


def test_an_author_declared_toolset_adds_members_to_a_preset(add_tool):
    add_tool("read")
    add_tool("arxiv_search", toolsets=("research",))
    add_tool("bash")
    assert resolve_tools(toolset="research").names == ["read", "arxiv_search"]


def test_an_author_only_toolset_is_a_valid_toolset_name(add_tool):
    add_tool("plot", toolsets=("charts",))
    add_tool("read")
    assert resolve_tools(toolset="charts").names == ["plot"]


def test_an_include_cycle_is_reported_naming_the_loop(presets):
    presets["a"] = {"includes": ["b"], "tools": ["read"]}
    presets["b"] = {"includes": ["c"]}
    presets["c"] = {"includes": ["a"]}
    with pytest.raises(ToolsetCycleError, match="'a' -> 'b' -> 'c' -> 'a'"):
        expand_toolset("a")


def test_a_self_include_is_a_cycle(presets, add_tool):
    add_tool("read")
    presets["loop"] = {"includes": ["loop"]}
    with pytest.raises(ToolsetCycleError):
        resolve_tools(toolset="loop")


def test_an_unknown_include_names_the_missing_preset(presets):
    presets["broken"] = {"includes": ["no_such_preset"]}
    with pytest.raises(UnknownToolsetError, match="'no_such_preset'"):
        expand_toolset("broken")


def test_an_unknown_toolset_raises_naming_it_and_the_known_ones(add_tool):
    add_tool("read")
    with pytest.raises(UnknownToolsetError) as raised:
        resolve_tools(toolset="reserch", named_profiles={"mine": ["read"]})
    message = str(raised.value)
    assert "'reserch'" in message and "research" in message and "mine" in message
    assert raised.value.name == "reserch"


def test_toolset_none_offers_nothing_not_even_tool_search(add_tool):
    add_tool("read")
    add_tool("mcp__gh__issue", defer=True, source="mcp")
    resolution = resolve_tools(toolset="none")
    assert resolution.tools == []
    assert resolution.decision("read").summary == "L2b: toolset 'none' offers no tools"


def test_toolset_default_is_every_exposed_tool(add_tool):
    add_tool("read")
    add_tool("hidden", expose=False)
    assert resolve_tools(toolset="default").names == ["read"]
    assert set(DEFAULT_TOOLS) == {"read"} and "hidden" not in DEFAULT_TOOLS


def test_default_tools_is_a_live_view_of_the_registry(add_tool):
    add_tool("read")
    assert "bash" not in DEFAULT_TOOLS
    add_tool("bash")
    assert "bash" in DEFAULT_TOOLS and len(DEFAULT_TOOLS) == 2


def test_a_user_profile_resolves_by_name_and_shadows_a_preset(add_tool):
    for name in ("read", "glob", "bash"):
        add_tool(name)
    profiles = {"safe": ["bash"], "mine": ["read", "glob"]}
    assert resolve_tools(toolset="mine", named_profiles=profiles).names == ["read", "glob"]
    assert resolve_tools(toolset="safe", named_profiles=profiles).names == ["bash"]


def test_a_list_toolset_takes_tool_names_and_preset_names(add_tool):
    for name in ("read", "glob", "web_search", "bash"):
        add_tool(name)
    resolution = resolve_tools(toolset=["bash", "fs_read"])
    assert resolution.names == ["read", "glob", "bash"]
    assert resolution.warnings == []


def test_unknown_names_in_a_profile_are_warned_about_not_ignored(add_tool):
    add_tool("read")
    resolution = resolve_tools(toolset="mine", named_profiles={"mine": ["read", "raed"]})
    assert resolution.names == ["read"]
    assert resolution.warnings == ["profile 'mine' names unknown tool(s): 'raed'"]


def test_unknown_names_in_a_list_toolset_are_warned_about(add_tool):
    add_tool("read")
    resolution = resolve_tools(toolset=["read", "wirte"])
    assert resolution.names == ["read"]
    assert resolution.warnings == ["toolset names unknown tool(s): 'wirte'"]


def test_the_chat_profile_narrows_within_the_toolset(add_tool):
    for name in ("read", "glob", "bash"):
        add_tool(name)
    resolution = resolve_tools(toolset="fs_read", profile=["glob", "bash"])
    assert resolution.names == ["glob"]
    assert resolution.decision("read").summary == "L2b: not in the profile list"
    assert resolution.decision("bash").summary == "L2b: not in toolset 'fs_read'"


def test_a_profile_given_by_name_is_looked_up_in_the_users_profiles(add_tool):
    add_tool("read")
    add_tool("bash")
    resolution = resolve_tools(profile="quiet", named_profiles={"quiet": ["read"]})
    assert resolution.names == ["read"]
    assert resolution.decision("bash").reason == "not in profile 'quiet'"


def test_a_bare_string_where_a_list_is_expected_is_refused(add_tool):
    add_tool("read")
    with pytest.raises(TypeError, match="'read'"):
        resolve_tools(deny="read")
