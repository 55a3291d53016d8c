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
