"""The published mcp-server-time package, which nobody here wrote, through tool_search."""

from __future__ import annotations

import json

import pytest

from openprogram.mcp import Backoff, MCPManager, MCPServerConfig
from openprogram.programs import agent_tools, registry
from openprogram.programs.deferred import (
    deferred_catalog_text,
    install_loaded_deferred,
    reset_loaded_deferred,
    split_tools_for_dispatch,
    tool_search,
)
from openprogram.programs.registry import restore_registry, snapshot_registry

from .conftest import TIME_SERVER, WAIT, is_ready

TOOL = "mcp__time__get_current_time"


@pytest.fixture(scope="module")
def time_server():
    """One connection for the module: this server takes seconds to start."""
    snapshot = snapshot_registry()
    manager = MCPManager(backoff=Backoff(0.05, 0.4))
    try:
        manager.add(
            MCPServerConfig(name="time", command=str(TIME_SERVER), args=["--local-timezone", "UTC"])
        )
        manager.wait_for("time", is_ready, timeout=WAIT)
        yield manager
    finally:
        manager.shutdown()
        restore_registry(snapshot)


def test_its_tools_register_deferred_under_the_mcp_prefix(time_server):
    tool = registry.get(TOOL)
    assert tool is not None
    assert tool.defer is True
    assert tool.source == "mcp"
    assert "timezone" in tool.parameters["properties"]
    assert "mcp__time__convert_time" in time_server.status("time")["tools"]


async def test_tool_search_select_loads_it_and_then_it_can_be_called(time_server):
    tools = agent_tools(only_available=True)
    assert TOOL in {tool.name for tool in tools}
    token = install_loaded_deferred(tools)
    try:
        assert TOOL in deferred_catalog_text(tools)
        provider, held = split_tools_for_dispatch(tools)
        assert TOOL in {tool.name for tool in held}
        assert TOOL not in {tool.name for tool in provider}

        loaded = await tool_search.execute("s1", {"query": f"select:{TOOL}"})
        assert not loaded.is_error
        assert loaded.details["loaded"] == [TOOL]
        provider, _ = split_tools_for_dispatch(tools)
        assert TOOL in {tool.name for tool in provider}

        result = await registry.get(TOOL).execute("s2", {"timezone": "Europe/Paris"})
        assert not result.is_error
        assert json.loads(result.content)["timezone"] == "Europe/Paris"
    finally:
        reset_loaded_deferred(token)


async def test_keyword_search_finds_it_by_what_it_does(time_server):
    token = install_loaded_deferred(agent_tools(only_available=True))
    try:
        found = await tool_search.execute("s3", {"query": "current time timezone"})
        assert TOOL in found.details["loaded"]
    finally:
        reset_loaded_deferred(token)


async def test_the_servers_own_errors_come_back_as_error_results(time_server):
    result = await registry.get(TOOL).execute("s4", {"timezone": "Mars/Olympus_Mons"})
    assert result.is_error
    assert "Mars/Olympus_Mons" in result.content
