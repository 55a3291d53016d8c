"""A real server's prompts and resources: listed, filled in, read, refreshed on list_changed."""

from __future__ import annotations

import pytest

from openprogram.mcp import MCPCallError
from openprogram.mcp.catalog import MCPResourceError
from openprogram.programs import registry

from .conftest import WAIT, is_ready, protocol_config


@pytest.fixture
def grown(manager, tmp_path):
    """A protocol server of this test's own: ``grow`` changes its lists for good."""
    manager.add(protocol_config(env={"PROTOCOL_MARKER_DIR": str(tmp_path)}, confined=False))
    manager.wait_for("proto", is_ready, timeout=WAIT)
    return manager


def test_prompts_and_resources_are_listed_with_their_arguments(grown):
    (summarise,) = grown.prompts()
    assert summarise.to_dict() == {
        "server": "proto",
        "name": "summarise",
        "title": "",
        "description": "Summarise a topic in a few sentences.",
        "arguments": [{"name": "topic", "description": "", "required": True}],
    }
    resources = {r.uri: r for r in grown.resources()}
    assert set(resources) == {"notes://today", "notes://logo"}
    today = resources["notes://today"]
    assert (today.server, today.uri, today.name, today.mime_type) == (
        "proto",
        "notes://today",
        "today",
        "text/plain",
    )


async def test_a_prompt_is_filled_in_and_a_resource_read_as_text(grown):
    text = await grown.get_prompt("proto", "summarise", {"topic": "MCP"})
    assert text == "Please summarise MCP in three sentences."
    assert await grown.read_resource("proto", "notes://today") == "buy milk\ncall Bob"


async def test_unlisted_names_missing_arguments_and_foreign_uris_are_refused(grown):
    with pytest.raises(MCPCallError, match="needs the arguments \\['topic'\\]"):
        await grown.get_prompt("proto", "summarise", {})
    with pytest.raises(MCPCallError, match="no prompt 'nope'"):
        await grown.get_prompt("proto", "nope", {})
    # A URI the server never listed is never sent (a file server would read anything).
    with pytest.raises(MCPCallError, match="no resource 'file:///etc/passwd'"):
        await grown.read_resource("proto", "file:///etc/passwd")
    with pytest.raises(MCPResourceError, match="is binary; only text can be attached"):
        await grown.read_resource("proto", "notes://logo")


async def test_list_changed_notifications_refresh_prompts_and_resources(grown):
    await registry.get("mcp__proto__grow").execute("g1", {})
    status = grown.wait_for(
        "proto", lambda s: "review" in s["prompts"] and len(s["resources"]) == 3, timeout=WAIT
    )
    assert status["resources"] == ["notes://logo", "notes://today", "notes://tomorrow"]
    assert await grown.get_prompt("proto", "review", {"code": "x = 1"}) == (
        "Review this code:\nx = 1"
    )
