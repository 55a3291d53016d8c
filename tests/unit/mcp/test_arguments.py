"""An MCP tool prepares the model's arguments with the rules every tool kind shares before
anything reaches the server (what a real server receives: tests/component/agent/
test_null_arguments_every_kind.py)."""

from __future__ import annotations

from typing import Any

import mcp_types

from openprogram.mcp.tool import MCPTool

SCHEMA = {
    "type": "object",
    "properties": {
        "region": {"type": "string"},
        "verbose": {"type": "boolean"},
        "note": {"type": ["string", "null"]},
    },
    "required": ["region"],
}


class RecordingServer:
    """Stands in for the manager: records what would be sent and answers "sent"."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    async def call(self, server: str, tool: str, args: dict[str, Any], **_: Any):
        self.sent.append(args)
        return mcp_types.CallToolResult(content=[mcp_types.TextContent(type="text", text="sent")])


def _tool(server: RecordingServer) -> MCPTool:
    return MCPTool(
        caller=server,
        server="srv",
        remote_name="report",
        description="Report.",
        input_schema=SCHEMA,
        defer=False,
        timeout=5.0,
    )


async def test_a_null_for_an_optional_parameter_that_takes_no_null_is_not_sent():
    server = RecordingServer()
    result = await _tool(server).execute("c1", {"region": "eu", "verbose": None})
    assert not result.is_error
    assert server.sent == [{"region": "eu"}]


async def test_a_null_the_schema_allows_is_sent_as_null():
    server = RecordingServer()
    result = await _tool(server).execute("c1", '{"region": "eu", "note": null}')
    assert not result.is_error
    assert server.sent == [{"region": "eu", "note": None}]


async def test_a_null_for_a_required_parameter_is_refused_and_nothing_is_sent():
    server = RecordingServer()
    result = await _tool(server).execute("c1", {"region": None})
    assert result.is_error
    assert "'mcp__srv__report'" in result.content and "'region' is required" in result.content
    assert server.sent == []


async def test_a_wrong_value_next_to_a_dropped_null_is_still_refused():
    server = RecordingServer()
    result = await _tool(server).execute("c1", {"region": 3, "verbose": None})
    assert result.is_error and "at 'region':" in result.content
    assert server.sent == []


async def test_arguments_that_are_not_a_json_object_are_refused():
    server = RecordingServer()
    result = await _tool(server).execute("c1", '{"region": ')
    assert result.is_error and "are not valid JSON" in result.content
    assert server.sent == []
