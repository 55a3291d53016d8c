"""The package surface (get_agent_tool, list_available, ...) and the shipped tools under policy."""

from __future__ import annotations

import pytest

import openprogram.programs.builtin as builtin
from openprogram import programs
from openprogram.programs import registry


@pytest.fixture
def shipped_tools():
    """Register the shipped built-ins again (the autouse fixture emptied the registry)."""
    tools = [getattr(builtin, name)._agent_tool for name in builtin.__all__]
    for tool in tools:
        registry.register(tool)
    return tools


def test_get_agent_tool_finds_exposed_and_hidden_tools_by_name(add_tool):
    helper = add_tool("helper", expose=False)
    assert programs.get_agent_tool("helper") is helper
    assert programs.get_agent_tool("nope") is None


def test_list_registered_agent_tools_includes_hidden_ones(add_tool):
    add_tool("read")
    add_tool("helper", expose=False)
    names = [tool.name for tool in programs.list_registered_agent_tools()]
    assert names == ["tool_search", "read", "helper"]


def test_list_available_applies_layer_4(add_tool, monkeypatch):
    monkeypatch.delenv("OPENPROGRAM_TEST_KEY", raising=False)
    add_tool("read")
    add_tool("paid", requires_env=("OPENPROGRAM_TEST_KEY",))
    assert [tool.name for tool in programs.list_available()] == ["read"]
    assert [tool.name for tool in programs.agent_tools()] == ["read", "paid"]


def test_plan_mode_withholds_every_shipped_tool_that_changes_things(shipped_tools):
    offered = set(programs.resolve_tools(source="plan").names)
    assert {"write", "edit", "bash"}.isdisjoint(offered)
    assert {"read", "glob", "grep", "list_dir", "web_fetch", "web_search"} <= offered


def test_shipped_presets_select_the_shipped_tools(shipped_tools):
    assert set(programs.agent_tools(toolset="fs_read")) == {
        programs.get_agent_tool(name) for name in ("read", "glob", "grep", "list_dir")
    }
    coding = set(programs.resolve_tools(toolset="coding").names)
    assert coding >= {"read", "write", "edit", "bash", "todo_write"} and "web_fetch" not in coding
    assert programs.resolve_tools(toolset="safe").warnings == []


def test_an_unattended_turn_over_the_shipped_tools_withholds_only_ask_user_question(
    shipped_tools,
):
    attended = set(programs.resolve_tools().names)
    unattended = set(programs.resolve_tools(attended=False).names)
    assert attended - unattended == {"ask_user_question"}
