"""A small, known registry for every tools_app test, and a catalog that follows it."""

from __future__ import annotations

import pytest

from openprogram.agent.types import AgentTool
from openprogram.programs import registry
from tools_app.catalog_sync import tool_catalog_mark_stale

MISSING_ENV = "OPENPROGRAM_TEST_KEY_THAT_IS_NEVER_SET"
TOOL_NAMES = ["read_notes", "write_notes", "web_lookup", "mcp__demo__echo"]
"""The exposed tools, in registration order (the hidden helper is not exposed)."""


def _schema(prop: str) -> dict:
    return {
        "type": "object",
        "properties": {prop: {"type": "string", "description": f"The {prop} to use."}},
        "required": [prop],
    }


@pytest.fixture(autouse=True)
def known_tools(clean_registry, monkeypatch):
    monkeypatch.delenv(MISSING_ENV, raising=False)
    registry.reset_registry()
    tools = [
        AgentTool(
            name="read_notes",
            description="Read the user's notes.\nLonger text.",
            parameters=_schema("path"),
            toolsets=("notes",),
        ),
        AgentTool(
            name="write_notes",
            description="Write a note to disk.",
            parameters=_schema("text"),
            toolsets=("notes",),
            requires_approval=True,
        ),
        AgentTool(
            name="web_lookup",
            description="Look something up on the web.",
            parameters=_schema("query"),
            requires_env=(MISSING_ENV,),
        ),
        AgentTool(
            name="mcp__demo__echo",
            description="Echo text back (from the demo MCP server).",
            parameters=_schema("text"),
            source="mcp",
            server="demo",
            defer=True,
        ),
        AgentTool(name="hidden_helper", description="Internal.", expose=False),
    ]
    for tool in tools:
        registry.register(tool)
    tool_catalog_mark_stale()
    yield tools
    tool_catalog_mark_stale()


@pytest.fixture
def staff_user(django_user_model):
    return django_user_model.objects.create_user("staffer", password="x" * 20, is_staff=True)


@pytest.fixture
def staff_client(client, staff_user):
    client.force_login(staff_user)
    return client
