"""The offline model's script, read without litellm in between."""

from __future__ import annotations

from openprogram.agent.types import AgentTool
from openprogram.programs.deferred import CATALOG_HEADER, deferred_catalog_text
from openprogram.providers.offline_script import offline_reply, parse_command

_BASH_SCHEMA = {
    "type": "object",
    "properties": {"timeout": {"type": "number"}, "command": {"type": "string"}},
    "required": ["command"],
}
_SEARCH = {
    "type": "function",
    "function": {
        "name": "tool_search",
        "parameters": {
            "type": "object",
            "properties": {"query": {"type": "string"}},
            "required": ["query"],
        },
    },
}


def test_it_parses_json_key_value_and_free_text_commands():
    assert parse_command('/add {"a": 1}', {}) == ("add", '{"a": 1}')
    assert parse_command("/add a=1 b=[2,3] c=word", {}) == (
        "add",
        '{"a": 1, "b": [2, 3], "c": "word"}',
    )
    assert parse_command("/bash echo hi", _BASH_SCHEMA) == ("bash", '{"command": "echo hi"}')
    assert parse_command("/list_dir", {}) == ("list_dir", "{}")
    assert parse_command("no command here", {}) is None


def test_it_passes_malformed_json_through_verbatim():
    assert parse_command('/add {"a": ', {}) == ("add", '{"a":')


def _deferred(name: str, server: str) -> AgentTool:
    return AgentTool(
        name=name, description="Does things. " * 20, source="mcp", server=server, defer=True
    )


def test_it_reads_full_and_compact_deferred_catalogs():
    small = [_deferred("mcp__time__get_time", "time"), _deferred("mcp__time__convert", "time")]
    many = [_deferred(f"mcp__a__tool_{i}", "a") for i in range(300)]
    full = "Be kind.\n\n" + deferred_catalog_text(small)
    compact = "Be kind about deferred things.\n\n" + deferred_catalog_text(many)
    assert "Names only" in compact
    for system, expected in (
        (full, "mcp__time__get_time, mcp__time__convert"),
        (compact, ", ".join(tool.name for tool in many)),
    ):
        reply = offline_reply(
            [{"role": "system", "content": system}, {"role": "user", "content": "hi"}], [_SEARCH]
        )
        assert f"Deferred (loaded on demand with tool_search): {expected}." in reply.text


def test_a_deferred_command_asks_tool_search_and_then_calls_the_tool():
    system = {"role": "system", "content": CATALOG_HEADER + "\n- cron: x"}
    user = {"role": "user", "content": "/cron when=daily"}
    first = offline_reply([system, user], [_SEARCH])
    assert [(c["name"], c["arguments"]) for c in first.tool_calls] == [
        ("tool_search", '{"query": "select:cron"}')
    ]
    search_call = {
        "id": "s1",
        "type": "function",
        "function": {"name": "tool_search", "arguments": '{"query": "select:cron"}'},
    }
    cron_tool = {"type": "function", "function": {"name": "cron", "parameters": {}}}
    history = [
        system,
        user,
        {"role": "assistant", "content": "", "tool_calls": [search_call]},
        {"role": "tool", "tool_call_id": "s1", "content": "Loaded 1 tool(s)"},
    ]
    second = offline_reply(history, [_SEARCH, cron_tool])
    assert [(c["name"], c["arguments"]) for c in second.tool_calls] == [
        ("cron", '{"when": "daily"}')
    ]


def test_a_deferred_tool_tool_search_could_not_load_is_reported_not_offered():
    system = {"role": "system", "content": CATALOG_HEADER + "\n- cron: x"}
    user = {"role": "user", "content": "/cron"}
    search_call = {
        "id": "s1",
        "type": "function",
        "function": {"name": "tool_search", "arguments": '{"query": "select:cron"}'},
    }
    history = [
        system,
        user,
        {"role": "assistant", "content": "", "tool_calls": [search_call]},
        {"role": "tool", "tool_call_id": "s1", "content": "Unknown tool"},
    ]
    reply = offline_reply(history, [_SEARCH])
    assert reply.tool_calls == []
    assert "'cron' is not offered" in reply.text
