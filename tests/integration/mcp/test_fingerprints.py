"""Tool-definition fingerprints and tool naming."""

from __future__ import annotations

from openprogram.mcp import changed_tools, mcp_tool_name, tool_fingerprint

SCHEMA = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}}}


def test_a_fingerprint_ignores_key_order_but_not_content():
    reordered = {
        "properties": {"b": {"type": "string"}, "a": {"type": "integer"}},
        "type": "object",
    }
    same = tool_fingerprint(name="t", description="d", input_schema=SCHEMA)
    assert tool_fingerprint(name="t", description="d", input_schema=reordered) == same
    assert tool_fingerprint(name="t", description="d!", input_schema=SCHEMA) != same
    assert tool_fingerprint(name="u", description="d", input_schema=SCHEMA) != same
    assert tool_fingerprint(name="t", description="d", input_schema={"type": "object"}) != same
    assert len(same) == 64


def test_changed_tools_lists_changed_and_new_but_not_removed_tools():
    approved = {"kept": "1", "changed": "2", "removed": "3"}
    current = {"kept": "1", "changed": "9", "added": "4"}
    assert changed_tools(approved=approved, current=current) == ["added", "changed"]


def test_tool_names_are_prefixed_and_made_safe_for_providers():
    assert mcp_tool_name("time", "get_current_time") == "mcp__time__get_current_time"
    assert mcp_tool_name("gh", "repo.search/v2") == "mcp__gh__repo_search_v2"
    assert len(mcp_tool_name("s", "x" * 200)) == 64
