"""MCPServerConfig validation and the mcpServers JSON import."""

from __future__ import annotations

import json

import pytest

from openprogram.mcp import MCPConfigError, MCPServerConfig, parse_mcp_servers_json


def test_it_reads_stdio_and_http_entries_from_the_common_json_shape():
    configs = parse_mcp_servers_json(
        json.dumps(
            {
                "mcpServers": {
                    "time": {"command": "uvx", "args": ["mcp-server-time"], "env": {"TZ": "UTC"}},
                    "remote": {"url": "https://mcp.example.com/mcp", "headers": {"X-Key": "k"}},
                    "off": {"command": "x", "disabled": True, "alwaysLoad": True},
                }
            }
        )
    )
    by_name = {config.name: config for config in configs}
    assert by_name["time"].transport == "stdio"
    assert by_name["time"].args == ("mcp-server-time",)
    assert by_name["time"].env == {"TZ": "UTC"}
    assert by_name["remote"].transport == "http"
    assert by_name["remote"].headers == {"X-Key": "k"}
    assert by_name["off"].enabled is False
    assert by_name["off"].always_load is True


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ("{not json", "not valid JSON"),
        ('{"other": {}}', '"mcpServers"'),
        ('{"mcpServers": {"Bad Name": {"command": "x"}}}', "'Bad Name'"),
        ('{"mcpServers": {"a": {}}}', "needs a command"),
        ('{"mcpServers": {"a": {"command": "x", "args": "oops"}}}', "args must be a list"),
        ('{"mcpServers": {"a": {"url": "ftp://x"}}}', "http(s)://"),
        ('{"mcpServers": {"a": {"type": "sse", "url": "http://x"}}}', "'sse' is not supported"),
        (
            '{"mcpServers": {"a": {"command": "x", "timeout": 0}}}',
            "timeout must be a positive number",
        ),
        ('{"mcpServers": {"a": {"command": "x", "bogus": 1}}}', "unknown keys ['bogus']"),
        ('{"mcpServers": {"a": {"command": "x", "url": "http://x"}}}', "not both"),
    ],
)
def test_it_rejects_bad_json_naming_the_problem(document, message):
    with pytest.raises(MCPConfigError) as caught:
        parse_mcp_servers_json(document)
    assert message in str(caught.value)


def test_it_applies_allow_and_deny_lists_with_deny_winning():
    config = MCPServerConfig(name="s", command="x", allow_tools=["a", "b"], deny_tools=["b"])
    assert config.allows("a")
    assert not config.allows("b")
    assert not config.allows("c")
    assert MCPServerConfig(name="s", command="x").allows("anything")


def test_its_connection_key_ignores_settings_that_need_no_reconnect():
    base = MCPServerConfig(name="s", command="x", args=["1"])
    assert (
        MCPServerConfig(
            name="s", command="x", args=["1"], always_load=True, timeout=3
        ).connection_key()
        == base.connection_key()
    )
    assert MCPServerConfig(name="s", command="x", args=["2"]).connection_key() != (
        base.connection_key()
    )
