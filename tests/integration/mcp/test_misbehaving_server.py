"""A hand-written server that answers badly: each bad answer ends the call, not the session."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from openprogram.mcp import MCPServerConfig
from openprogram.programs import registry

from .conftest import WAIT, is_ready

RAW_SERVER = Path(__file__).parent / "servers" / "raw_server.py"


@pytest.fixture
def raw(manager):
    manager.add(MCPServerConfig(name="raw", command=sys.executable, args=[str(RAW_SERVER)]))
    manager.wait_for("raw", is_ready, timeout=WAIT)
    return manager


async def test_a_json_rpc_error_becomes_an_error_result(raw):
    result = await registry.get("mcp__raw__rpc_error").execute("r1", {})
    assert result.is_error
    assert "MCP server 'raw' returned an error for 'rpc_error'" in result.content
    assert "the raw server refuses" in result.content


async def test_a_malformed_result_becomes_an_error_result_and_the_server_stays_ready(raw):
    result = await registry.get("mcp__raw__malformed").execute("r2", {})
    assert result.is_error
    assert "'mcp__raw__malformed' failed" in result.content
    assert raw.status("raw")["state"] == "ready"
    again = await registry.get("mcp__raw__rpc_error").execute("r3", {})
    assert "the raw server refuses" in again.content


async def test_structured_content_that_breaks_the_output_schema_becomes_an_error(raw):
    result = await registry.get("mcp__raw__lying_structured").execute("r4", {})
    assert result.is_error
    assert "MCP server 'raw' returned an invalid result for 'lying_structured'" in result.content
    assert "'warm' is not of type 'number'" in result.content
    assert raw.status("raw")["state"] == "ready"


async def test_a_tool_with_an_output_schema_must_return_structured_content(raw):
    result = await registry.get("mcp__raw__missing_structured").execute("r5", {})
    assert result.is_error
    assert "has an output schema but did not return structured content" in result.content
